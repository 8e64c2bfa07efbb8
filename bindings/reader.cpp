#include "reader.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "entry_points.hpp"
#include "names.hpp"
#include "tensor_reader.hpp"

namespace binding {

using namespace std::string_literals;

namespace {

// What the reader learns at import and from the Python layer: numpy's array type, and the
// fallback hook. Both are set while tensorb64 is imported, before any call can read them (other
// threads' `import tensorb64` waits on the import lock), also on a free-threaded build.
struct registry {
    PyObject* ndarray_type = nullptr;
    PyObject* fallback = nullptr;
} known;

// The core type of a buffer's items, from the struct-module format and the item size (which
// says how wide 'l' is on this platform); false for anything else.
bool buffer_format(const char* format, Py_ssize_t itemsize, tb::element_format* out) {
    if (format == nullptr) format = "B";
    tb::byte_order order = tb::host_byte_order;
    switch (*format) {
        case '<':
            order = tb::byte_order::little;
            ++format;
            break;
        case '>':
        case '!':
            order = tb::byte_order::big;
            ++format;
            break;
        case '@':
        case '=': ++format; break;
        default: break;
    }
    if (format[0] == '\0' || format[1] != '\0') return false;
    const char code = format[0];
    tb::dtype type;
    if (std::strchr("efd", code) != nullptr) {
        if (itemsize == 2)
            type = tb::dtype::float16;
        else if (itemsize == 4)
            type = tb::dtype::float32;
        else if (itemsize == 8)
            type = tb::dtype::float64;
        else
            return false;
    } else if (std::strchr("bhilqn", code) != nullptr) {
        if (itemsize == 1)
            type = tb::dtype::int8;
        else if (itemsize == 2)
            type = tb::dtype::int16;
        else if (itemsize == 4)
            type = tb::dtype::int32;
        else if (itemsize == 8)
            type = tb::dtype::int64;
        else
            return false;
    } else if (std::strchr("BHILQN", code) != nullptr) {
        if (itemsize == 1)
            type = tb::dtype::uint8;
        else if (itemsize == 2)
            type = tb::dtype::uint16;
        else if (itemsize == 4)
            type = tb::dtype::uint32;
        else if (itemsize == 8)
            type = tb::dtype::uint64;
        else
            return false;
    } else if (code == '?' && itemsize == 1) {
        type = tb::dtype::bool8;
    } else {
        return false;
    }
    *out = {type, order};
    return true;
}

// A numpy array of one of ml_dtypes' types the core reads (bfloat16, float8_e4m3fn,
// float8_e5m2: numpy cannot export them through the buffer protocol) as an array of their
// storage type, and that type's code; null (no error set) for anything else.
PyObject* storage_view(PyObject* array, int* code) {
    ref dtype(PyObject_GetAttr(array, interned.dtype));
    ref name(dtype ? PyObject_GetAttr(dtype.get(), interned.name) : nullptr);
    PyObject* view = nullptr;
    if (name && PyUnicode_Check(name.get())) {
        for (std::size_t i = 0; i < element_type_count; ++i) {
            const tb::dtype type = element_types[i].type;
            if (PyUnicode_CompareWithASCIIString(name.get(), tb::to_string(type)) != 0) continue;
            const std::string storage = "u" + std::to_string(tb::dtype_size(type));
            view = PyObject_CallMethod(array, "view", "s", storage.c_str());
            *code = static_cast<int>(type);
            break;
        }
    }
    if (view == nullptr) PyErr_Clear();
    return view;
}

// Reads a buffer exporter. numpy arrays may hold any numeric type; other buffers (memoryview,
// array.array) must hold floats, since a byte buffer there is far more often raw bytes passed
// by mistake than integers. False (no error set) for what the Python layer must handle.
bool read_buffer(PyObject* x, input_array& in) {
    const bool is_ndarray =
        PyObject_TypeCheck(x, reinterpret_cast<PyTypeObject*>(known.ndarray_type));
    if (!is_ndarray) {
        if (!PyObject_CheckBuffer(x) || PyBytes_Check(x) || PyByteArray_Check(x)) return false;
    }
    int source_override = -1;
    if (!in.buffer.acquire(x, PyBUF_RECORDS_RO)) {
        PyErr_Clear();  // a dtype numpy cannot export (bfloat16, object, ...)
        if (!is_ndarray) return false;
        ref view(storage_view(x, &source_override));
        if (!view || !in.buffer.acquire(view.get(), PyBUF_RECORDS_RO)) {
            PyErr_Clear();  // the Python layer explains
            return false;
        }
        in.owner = std::move(view);
    }
    const Py_buffer& buffer = in.buffer.view;
    tb::element_format format{};
    if (!buffer_format(buffer.format, buffer.itemsize, &format)) return false;
    if (source_override >= 0) {
        format.type = static_cast<tb::dtype>(source_override);
        if (tb::dtype_size(format.type) != static_cast<std::size_t>(buffer.itemsize)) return false;
    } else if (!is_ndarray && format.type != tb::dtype::float16 &&
               format.type != tb::dtype::float32 && format.type != tb::dtype::float64) {
        return false;
    }
    if (buffer.ndim < 0 || static_cast<std::size_t>(buffer.ndim) > tb::max_dims) return false;
    in.data = buffer.buf;
    in.ndim = static_cast<std::size_t>(buffer.ndim);
    if (buffer.shape == nullptr &&
        in.ndim != 0) {  // allowed for a 1-D exporter: len bytes of items
        in.ndim = 1;
        in.shape[0] = static_cast<std::size_t>(buffer.len / buffer.itemsize);
        in.strides[0] = buffer.itemsize;
    } else {
        // No strides (ctypes gives none): C-contiguous.
        std::ptrdiff_t contiguous = buffer.itemsize;
        for (std::size_t d = in.ndim; d-- > 0;) {
            in.shape[d] = static_cast<std::size_t>(buffer.shape[d]);
            in.strides[d] = buffer.strides != nullptr ? buffer.strides[d] : contiguous;
            contiguous *= static_cast<std::ptrdiff_t>(in.shape[d]);
        }
    }
    in.format = format;
    return true;
}

// The fallback hook's calls under way on this thread: a converted input the reader still
// cannot read would otherwise come back to the hook without end.
thread_local int fallback_depth = 0;

}  // namespace

bool read_input(PyObject* x, input_array& in) {
    const bool read = is_registered_tensor(x) ? read_tensor(x, in) : read_buffer(x, in);
    if (read) return true;
    if (PyErr_Occurred()) throw python_error{};
    in.buffer.release();
    in.owner = ref();
    return false;
}

PyObject* call_fallback(const char* entry, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
    if (known.fallback == nullptr) raise(PyExc_SystemError, "tensorb64: no fallback registered");
    // Nested calls are legitimate (a CUDA tensor's chunks, a converted chunk), but not many.
    if (fallback_depth >= 4) {
        raise(PyExc_TypeError, "cannot read "s + repr_of(args[0]) + " (a " +
                                   Py_TYPE(args[0])->tp_name + ", converted for " + entry +
                                   "); this is a bug in tensorb64");
    }
    const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    constexpr Py_ssize_t most = 16;
    if (nargs + nkw + 1 > most) raise(PyExc_TypeError, "too many arguments");
    PyObject* stack[most];
    ref name(checked(PyUnicode_InternFromString(entry)));
    stack[0] = name.get();
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i) stack[i + 1] = args[i];
    ++fallback_depth;
    PyObject* result =
        PyObject_Vectorcall(known.fallback, stack, static_cast<std::size_t>(nargs + 1), kwnames);
    --fallback_depth;
    return checked(result);
}

// Only a permuted N-D input needs the core's multi-dimensional row index (which points into `in`).
tb::strided_rows rows_of(input_array& in) {
    tb::strided_rows rows{};
    rows.data = in.data;
    rows.format = in.format;
    rows.rows = 1;
    rows.row_length = in.ndim == 0 ? 1 : in.shape[in.ndim - 1];
    rows.element_stride = in.ndim == 0 ? 0 : in.strides[in.ndim - 1];
    // Merge leading dimensions in place (in.shape/strides become the row index).
    std::size_t kept = 0;
    bool empty = false;
    for (std::size_t d = 0; d + 1 < in.ndim; ++d) empty = empty || in.shape[d] == 0;
    for (std::size_t d = 0; d + 1 < in.ndim; ++d) {
        // Only broadcast dimensions (stride 0) can be so long that the count overflows.
        if (!empty && rows.rows > SIZE_MAX / in.shape[d]) {
            raise(PyExc_MemoryError,
                  "the input has more rows than a size_t counts (its dimensions "
                  "multiply past 2**64): nothing that many can be written");
        }
        rows.rows *= in.shape[d];
        if (in.shape[d] == 1) continue;
        if (kept > 0 &&
            in.strides[kept - 1] == in.strides[d] * static_cast<std::ptrdiff_t>(in.shape[d])) {
            in.shape[kept - 1] *= in.shape[d];
            in.strides[kept - 1] = in.strides[d];
        } else {
            in.shape[kept] = in.shape[d];
            in.strides[kept] = in.strides[d];
            ++kept;
        }
    }
    if (rows.rows == 0 || rows.row_length == 0) rows.element_stride = 0;
    if (kept <= 1) {
        rows.row_stride = kept == 1 ? in.strides[0] : 0;
    } else {
        rows.row_dims = kept;
        rows.row_shape = in.shape;
        rows.row_strides = in.strides;
    }
    return rows;
}

tb::strided_rows as_one_row(input_array& in) {
    std::size_t count = 1;
    std::ptrdiff_t stride = 0;
    bool merges = true;
    for (std::size_t d = in.ndim; d-- > 0;) {  // innermost first
        if (in.shape[d] == 1) continue;
        // (only broadcast dimensions, stride 0, can be that long: rows_of counts them)
        if (in.shape[d] != 0 && count > static_cast<std::size_t>(PTRDIFF_MAX) / in.shape[d])
            return rows_of(in);
        if (count == 1) {
            stride = in.strides[d];
        } else if (in.strides[d] != stride * static_cast<std::ptrdiff_t>(count)) {
            merges = false;
        }
        count *= in.shape[d];
    }
    if (!merges || count == 0) return rows_of(in);
    tb::strided_rows row{};
    row.data = in.data;
    row.rows = 1;
    row.row_length = count;
    row.element_stride = count == 1 ? 0 : stride;
    row.format = in.format;
    return row;
}

bool init_reader() {
    ref numpy(PyImport_ImportModule("numpy"));
    if (!numpy) return false;
    known.ndarray_type = PyObject_GetAttrString(numpy.get(), "ndarray");  // kept for the process
    return known.ndarray_type != nullptr;
}

namespace {

PyObject* set_fallback_entry(PyObject*, PyObject* hook) {
    if (!PyCallable_Check(hook)) {
        PyErr_SetString(PyExc_TypeError, "the fallback must be callable");
        return nullptr;
    }
    keep(known.fallback, hook);
    Py_RETURN_NONE;
}

}  // namespace

PyMethodDef reader_methods[] = {
    {"_set_fallback", set_fallback_entry, METH_O,
     "_set_fallback(hook, /)\n--\n\n"
     "Registers the hook every entry point hands a call to when the reader cannot read its input "
     "in place: hook(entry_name, *args, **kwargs) returns the entry point's result."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
