// The module tensorb64._native: multi-phase initialisation (PEP 489), its functions from each
// file's table (entry_points.hpp), and its constants. The only symbol exported is PyInit__native.
//
// Files, one job each: python_api.hpp (references, buffers, errors, the GIL), names (the
// element-type table and the one resolver of names), arguments (parsing), reader (every input, and
// the fallback hook) with tensor_reader (torch tensors) and dlpack.hpp, sizes (exact output sizes),
// output_memory (a large output's pages prepared before it is written), encode_entry /
// float_text_entry / body_entry / decode_entry / body_reader_entry (the entry points).
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
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

PyObject* inject_failure_entry(PyObject*, PyObject* name) {
    return guarded([&] {
        const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
        const std::pair<const char*, injected_failure> kinds[] = {
            {"bad_alloc", injected_failure::bad_alloc},
            {"length_error", injected_failure::length_error},
            {"system_error", injected_failure::system_error},
        };
        for (const auto& [kind, failure] : kinds) {
            if (text != nullptr && std::strcmp(text, kind) == 0) {
                next_injected_failure.store(failure, std::memory_order_relaxed);
                Py_RETURN_NONE;
            }
        }
        raise(PyExc_ValueError,
              "expected 'bad_alloc', 'length_error' or 'system_error', got " + repr_of(name));
    });
}

// tensorb64.DecodeError, written in Python: an exception class whose instances Python code can
// raise (decode_rows names the row) and pickle as well as the binding.
constexpr const char* decode_error_source = R"(
class DecodeError(ValueError):
    """Input to one of tensorb64's readers that is not what it reads (malformed JSON, a body that
    is not an embeddings response, text that is not strict base64).

    A ValueError, so ``except ValueError`` catches it too. ``str(error)`` says what was wrong and
    where. Attributes:

    * ``reason``: what was wrong, without where (a short phrase, the same for every error of a
      kind).
    * ``pos``: the offset in the text being read where it went wrong: a byte offset in the body
      (in its UTF-8 form if it is a str) for ``decode_response_body``/``decode_response``; the
      character offset in the string for ``decode``/``decode_rows``. None where the fault is not
      at one place (a text that is not a whole number of values).
    * ``row``: the row at fault: the position in the body's ``data`` list of the entry, or in
      ``decode_rows``'s list of the string; None where the fault lies outside one.
    """

    def __init__(self, message, reason=None, pos=None, row=None):
        super().__init__(message)
        self.reason = message if reason is None else reason
        self.pos = pos
        self.row = row

    def __reduce__(self):
        return type(self), (self.args[0], self.reason, self.pos, self.row)
)";

// Makes DecodeError (module name "tensorb64", where it is exported) and adds it to `module`.
bool make_decode_error(PyObject* module) {
    if (decode_error_type == nullptr) {
        ref globals(PyDict_New());
        ref name(PyUnicode_FromString("tensorb64"));
        if (!globals || !name ||
            PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()) != 0 ||
            PyDict_SetItemString(globals.get(), "__name__", name.get()) != 0) {
            return false;
        }
        ref ran(PyRun_String(decode_error_source, Py_file_input, globals.get(), globals.get()));
        if (!ran) return false;
        PyObject* type = PyDict_GetItemString(globals.get(), "DecodeError");  // borrowed
        if (type == nullptr) return false;
        decode_error_type = Py_NewRef(type);  // for the process, as the interned names
    }
    return PyModule_AddObjectRef(module, "DecodeError", decode_error_type) == 0;
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
    if (!intern_names() || !intern_attribute_names() || !init_reader() ||
        !make_decode_error(module)) {
        return -1;
    }
    PyMethodDef* const tables[] = {encode_methods, float_text_methods, float_list_methods,
                                   body_methods,   decode_methods,     body_reader_methods,
                                   name_methods,   argument_methods,   reader_methods,
                                   tensor_methods, simd_methods,       output_memory_methods};
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
     "simd_level()\n--\n\nThe SIMD level of the core's functions in use."},
    {"available_simd_levels", available_simd_levels_entry, METH_NOARGS,
     "available_simd_levels()\n--\n\nThe SIMD levels this CPU can run, lowest first."},
    {"_set_simd_level", set_simd_level_entry, METH_O,
     "_set_simd_level(name, /)\n--\n\nSwitches every later call to the named SIMD level (for "
     "tests)."},
    {"_inject_failure", inject_failure_entry, METH_O,
     "_inject_failure(kind, /)\n--\n\nMakes the next call of _decode_response_body throw the C++ "
     "exception named (bad_alloc, length_error or system_error) where the GIL is released, as "
     "the core can (for tests)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding

PyMODINIT_FUNC PyInit__native() { return PyModuleDef_Init(&binding::module_def); }
