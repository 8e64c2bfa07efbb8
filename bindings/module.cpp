// The module tensorb64._native: multi-phase initialisation (PEP 489), its functions from each
// file's table (entry_points.hpp), and its constants. The only symbol exported is PyInit__native.
//
// Files, one job each: python_api.hpp (references, errors, the GIL), names (the element-type
// table and the one resolver of names), arguments (parsing), reader (every input, and the fallback
// hook) with tensor_reader (torch tensors) and dlpack.hpp, sizes (exact output sizes), encode_entry
// / float_text_entry / body_entry / decode_entry / body_reader_entry (the entry points).
#include <stdexcept>
#include <string>
#include <vector>

#include "entry_points.hpp"
#include "names.hpp"
#include "reader.hpp"

namespace binding {

namespace {

PyObject* simd_level_entry(PyObject*, PyObject*) {
    return guarded([] { return PyUnicode_FromString(tb::to_string(tb::active_simd_level())); });
}

PyObject* available_simd_levels_entry(PyObject*, PyObject*) {
    return guarded([] {
        const std::vector<tb::simd_level> levels = tb::available_simd_levels();
        ref list(checked(PyList_New(static_cast<Py_ssize_t>(levels.size()))));
        for (std::size_t i = 0; i < levels.size(); ++i) {
            PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i),
                            checked(PyUnicode_FromString(tb::to_string(levels[i]))));
        }
        return list.release();
    });
}

PyObject* set_simd_level_entry(PyObject*, PyObject* name) {
    return guarded([&] {
        const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
        if (text == nullptr) raise(PyExc_TypeError, "the SIMD level must be a str");
        tb::simd_level level;
        if (!tb::parse_simd_level(text, &level)) {
            raise(PyExc_ValueError, "unknown SIMD level '" + std::string(text) +
                                        "'; expected scalar, avx2, avx512 or neon");
        }
        try {
            tb::force_simd_level(level);
        } catch (const std::invalid_argument& e) {
            raise(PyExc_ValueError, e.what());
        }
        Py_RETURN_NONE;
    });
}

// Adds `value` (a new reference, or null with an error set) as `name`.
bool add(PyObject* module, const char* name, PyObject* value) {
    if (value == nullptr) return false;
    if (PyModule_AddObject(module, name, value) != 0) {
        Py_DECREF(value);
        return false;
    }
    return true;
}

int exec_module(PyObject* module) {
    // Fail at import, with the reason, when TENSORB64_SIMD names a level this CPU lacks.
    try {
        tb::active_simd_level();
    } catch (const std::runtime_error& e) {
        PyErr_SetString(PyExc_ImportError, e.what());
        return -1;
    }
    if (!intern_names() || !intern_attribute_names() || !init_reader()) return -1;
    PyMethodDef* const tables[] = {
        encode_methods, float_text_methods, body_methods,   decode_methods, body_reader_methods,
        name_methods,   argument_methods,   reader_methods, tensor_methods, simd_methods};
    for (PyMethodDef* table : tables)
        if (PyModule_AddFunctions(module, table) != 0) return -1;
    const char* host = tb::host_byte_order == tb::byte_order::little ? "little" : "big";
    if (!add(module, "__version__", PyUnicode_FromString(TENSORB64_VERSION)) ||
        !add(module, "ELEMENT_TYPES", element_types_tuple()) ||
        !add(module, "HOST_BYTE_ORDER", PyUnicode_FromString(host))) {
        return -1;
    }
    return 0;
}

PyModuleDef_Slot slots[] = {
    {Py_mod_exec, reinterpret_cast<void*>(exec_module)},
#if PY_VERSION_HEX >= 0x030C0000
    // The reader's registry and the resolver's names are process-wide.
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#if PY_VERSION_HEX >= 0x030D0000
    // No GIL needed: on a free-threaded CPython (3.13t, 3.14t) importing this module leaves it
    // off. Its shared state is safe without it: the names and the reader's registry are set at
    // import, torch's registry is published atomically (tensor_reader.cpp), the dispatch's level
    // is an atomic pointer, the thread pool locks its own (tests/test_free_threading.py).
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_native",
    "The C++ core of tensorb64; use the functions of the tensorb64 package instead.",
    0,
    nullptr,
    slots,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

PyMethodDef simd_methods[] = {
    {"simd_level", simd_level_entry, METH_NOARGS,
     "simd_level()\n--\n\nThe SIMD level of the kernel in use."},
    {"available_simd_levels", available_simd_levels_entry, METH_NOARGS,
     "available_simd_levels()\n--\n\nThe SIMD levels this CPU can run, lowest first."},
    {"_set_simd_level", set_simd_level_entry, METH_O,
     "_set_simd_level(name, /)\n--\n\nSwitches every later call to the named SIMD level (for "
     "tests)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding

PyMODINIT_FUNC PyInit__native() { return PyModuleDef_Init(&binding::module_def); }
