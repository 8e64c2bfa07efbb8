// The Python binding of the C++ core: buffer checks, exact output lengths with overflow
// guards, and the `str` objects the kernel writes into. The str objects and the list are made
// while holding the GIL; the GIL is released while the kernel fills them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace py = pybind11;
using namespace std::string_literals;

namespace {

// Element types as the Python layer names a source's type.
tensorb64::dtype parse_source_dtype(std::string_view name) {
    using tensorb64::dtype;
    if (name == "float32") return dtype::float32;
    if (name == "float16") return dtype::float16;
    if (name == "bfloat16") return dtype::bfloat16;
    if (name == "float64") return dtype::float64;
    if (name == "float8_e4m3fn") return dtype::float8_e4m3fn;
    if (name == "float8_e5m2") return dtype::float8_e5m2;
    throw py::value_error("unknown element type '"s + std::string(name) +
                          "'; expected float32, float16, bfloat16, float64, float8_e4m3fn "
                          "or float8_e5m2");
}

// Output dtypes as users name them (vLLM's `embed_dtype` names).
// The text of a str argument without copying it; empty for anything else (never a valid name).
std::string_view text_of(const py::object& name) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_Check(name.ptr()) ? PyUnicode_AsUTF8AndSize(name.ptr(), &size) : nullptr;
    if (text == nullptr) {
        PyErr_Clear();  // e.g. a lone surrogate: not a name either
        return {};
    }
    return {text, static_cast<std::size_t>(size)};
}

tensorb64::dtype parse_output_dtype(const py::object& name) {
    using tensorb64::dtype;
    {
        const std::string_view text = text_of(name);
        if (text == "float32") return dtype::float32;
        if (text == "float16") return dtype::float16;
        if (text == "bfloat16") return dtype::bfloat16;
        if (text == "fp8_e4m3") return dtype::float8_e4m3fn;
        if (text == "fp8_e5m2") return dtype::float8_e5m2;
    }
    throw py::value_error("unknown dtype " + py::repr(name).cast<std::string>() +
                          "; expected one of float32, float16, bfloat16, fp8_e4m3, fp8_e5m2");
}

tensorb64::byte_order parse_byte_order(const py::object& name) {
    {
        const std::string_view text = text_of(name);
        if (text == "little") return tensorb64::byte_order::little;
        if (text == "big") return tensorb64::byte_order::big;
        if (text == "native") return tensorb64::host_byte_order;
    }
    throw py::value_error("unknown byteorder " + py::repr(name).cast<std::string>() +
                          "; expected 'little', 'big' or 'native'");
}

// The base64 length of `elements` elements of `element_size` bytes, if a str can hold it.
std::size_t checked_encoded_size(std::size_t elements, std::size_t element_size) {
    if (element_size == 0) throw py::value_error("element_size must be at least 1");
    std::size_t length = 0;
    if (elements > std::numeric_limits<std::size_t>::max() / element_size ||
        !tensorb64::encoded_size(elements * element_size, &length) ||
        length > static_cast<std::size_t>(PY_SSIZE_T_MAX)) {
        throw py::value_error("input too large: its base64 text would exceed the largest "
                              "possible str");
    }
    return length;
}

// Refuses, before anything is allocated, a conversion the core cannot make.
void check_convertible(const tensorb64::strided_rows& source, tensorb64::element_format target) {
    if (!tensorb64::can_convert(source.format.type, target.type)) {
        throw py::value_error("cannot encode "s + tensorb64::to_string(source.format.type) +
                              " elements as " + tensorb64::to_string(target.type));
    }
}

// Creates one str per row, then releases the GIL while the kernel writes into them.
py::list encode_strided(const tensorb64::strided_rows& source, tensorb64::element_format target,
                        unsigned threads) {
    check_convertible(source, target);
    const std::size_t length =
        checked_encoded_size(source.row_length, tensorb64::dtype_size(target.type));
    // PyList_New directly: pybind11's py::list(n) would mask a MemoryError with its own error.
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(source.rows));
    if (list == nullptr) throw py::error_already_set();
    auto texts = py::reinterpret_steal<py::list>(list);
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) {
        PyObject* text = PyUnicode_New(static_cast<Py_ssize_t>(length), 127);
        if (text == nullptr) throw py::error_already_set();
        PyList_SET_ITEM(texts.ptr(), static_cast<Py_ssize_t>(r), text);  // steals the reference
        outputs[r] = static_cast<char*>(PyUnicode_DATA(text));
    }
    {
        py::gil_scoped_release release;
        tensorb64::encode_rows(source, target, outputs.data(), threads);
    }
    return texts;
}

// The converted bytes of every row, one row after another, in one bytes object; the GIL is
// released while the kernel fills it.
py::bytes rows_to_bytes(const tensorb64::strided_rows& source, tensorb64::element_format target,
                        unsigned threads) {
    check_convertible(source, target);
    const std::size_t size = tensorb64::dtype_size(target.type);
    const std::size_t limit = static_cast<std::size_t>(PY_SSIZE_T_MAX);
    if (source.row_length > limit / size ||
        (source.rows != 0 && source.row_length * size > limit / source.rows)) {
        throw py::value_error("input too large: its bytes would exceed the largest possible bytes object");
    }
    const std::size_t row_bytes = source.row_length * size;
    PyObject* body = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(row_bytes * source.rows));
    if (body == nullptr) throw py::error_already_set();
    auto result = py::reinterpret_steal<py::bytes>(body);
    char* data = PyBytes_AS_STRING(body);
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) outputs[r] = data + r * row_bytes;
    {
        py::gil_scoped_release release;
        tensorb64::encode_rows(source, target, outputs.data(), threads, tensorb64::row_output::bytes);
    }
    return result;
}

// The rows of a 1-D (one row) or, unless `one_row_only`, 2-D buffer.
tensorb64::strided_rows rows_of_buffer(const py::buffer_info& info,
                                       tensorb64::element_format format, bool one_row_only) {
    if (info.ndim != 1 && (one_row_only || info.ndim != 2)) {
        throw py::value_error("expected a "s + (one_row_only ? "1-D" : "1-D or 2-D") +
                              " buffer, got " + std::to_string(info.ndim) + " dimensions");
    }
    if (static_cast<std::size_t>(info.itemsize) != tensorb64::dtype_size(format.type)) {
        throw py::value_error("buffer items are " + std::to_string(info.itemsize) +
                              " bytes, but the elements' type has " +
                              std::to_string(tensorb64::dtype_size(format.type)));
    }
    const bool one_row = info.ndim == 1;
    tensorb64::strided_rows source{};
    source.data = info.ptr;
    source.rows = one_row ? 1 : static_cast<std::size_t>(info.shape[0]);
    source.row_length = static_cast<std::size_t>(info.shape[one_row ? 0 : 1]);
    source.row_stride = one_row ? 0 : info.strides[0];
    source.element_stride = info.strides[one_row ? 0 : 1];
    source.format = format;
    return source;
}

// The bytes spanned by `count` elements `stride` elements apart, from the first element's start
// to the last one's (negative for a negative stride). False past a quarter of the address space:
// no real tensor is that large, and sums of two such spans cannot overflow.
bool span_bytes(std::size_t count, std::ptrdiff_t stride, std::ptrdiff_t size, std::ptrdiff_t* bytes) {
    constexpr std::ptrdiff_t limit = std::numeric_limits<std::ptrdiff_t>::max() / 4;
    if (count > static_cast<std::size_t>(limit) || stride < -limit || stride > limit) return false;
    const std::ptrdiff_t steps = count == 0 ? 0 : static_cast<std::ptrdiff_t>(count) - 1;
    const std::ptrdiff_t magnitude = stride < 0 ? -stride : stride;
    if (magnitude != 0 && steps > limit / magnitude / size) return false;
    *bytes = steps * stride * size;
    return true;
}

// Rows of host-ordered elements at `address` (a tensor's memory), checked to lie inside its
// storage [storage_address, storage_address + storage_bytes). Strides are in elements.
tensorb64::strided_rows rows_in_storage(std::uintptr_t address, std::uintptr_t storage_address,
                                        std::size_t storage_bytes, std::size_t rows,
                                        std::size_t row_length, std::ptrdiff_t row_stride,
                                        std::ptrdiff_t element_stride, tensorb64::dtype type) {
    const auto size = static_cast<std::ptrdiff_t>(tensorb64::dtype_size(type));
    std::ptrdiff_t down = 0, across = 0;
    bool inside = span_bytes(rows, row_stride, size, &down) &&
                  span_bytes(row_length, element_stride, size, &across);
    if (inside && rows > 0 && row_length > 0) {
        // Offsets from `address` of the lowest and one past the highest byte read.
        const std::ptrdiff_t low = std::min<std::ptrdiff_t>(down, 0) + std::min<std::ptrdiff_t>(across, 0);
        const std::ptrdiff_t high = std::max<std::ptrdiff_t>(down, 0) + std::max<std::ptrdiff_t>(across, 0) + size;
        const std::uintptr_t offset = address - storage_address;  // checked below
        inside = address >= storage_address && offset <= storage_bytes &&
                 static_cast<std::uintptr_t>(-low) <= offset &&
                 static_cast<std::uintptr_t>(high) <= storage_bytes - offset;
    }
    if (!inside) throw py::value_error("the tensor's shape and strides reach outside its storage");
    tensorb64::strided_rows source{};
    source.data = reinterpret_cast<const void*>(address);
    source.rows = rows;
    source.row_length = row_length;
    source.row_stride = row_stride * size;
    source.element_stride = element_stride * size;
    source.format = {type, tensorb64::host_byte_order};
    return source;
}

// Calls a method of `object` that takes no arguments; a null object if it raised (the error
// is cleared: the caller then sends the input down the general path, which explains it).
py::object call_method(PyObject* object, PyObject* name) {
    PyObject* result = PyObject_CallMethodNoArgs(object, name);
    if (result == nullptr) PyErr_Clear();
    return py::reinterpret_steal<py::object>(result);
}

std::ptrdiff_t as_ssize(PyObject* number) {
    const Py_ssize_t value = PyLong_AsSsize_t(number);
    if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
    return static_cast<std::ptrdiff_t>(value);
}

std::size_t as_size(PyObject* number) {  // addresses and byte counts: unsigned
    const std::size_t value = PyLong_AsSize_t(number);
    if (value == static_cast<std::size_t>(-1) && PyErr_Occurred()) throw py::error_already_set();
    return value;
}

// A CPU torch tensor read where it lies, through torch's public tensor methods only (the
// binding needs no torch headers); the Python layer has checked its type, device, layout and
// dtype. 2-D: one row per line; 1-D: one row; with `flatten`, any C-contiguous tensor is one
// row. Returns None for what this cannot read in place (another layout, a negative-bit view,
// a nested tensor), which the Python layer sends down the general path.
py::object encode_tensor(const py::object& tensor, tensorb64::dtype source,
                         tensorb64::element_format target, unsigned threads, bool flatten) {
    // Interned once: attribute lookups by a fresh string cost more than the kernel on short rows.
    static PyObject* const is_neg = PyUnicode_InternFromString("is_neg");
    static PyObject* const untyped_storage = PyUnicode_InternFromString("untyped_storage");
    static PyObject* const stride = PyUnicode_InternFromString("stride");
    static PyObject* const shape_name = PyUnicode_InternFromString("shape");
    static PyObject* const data_ptr = PyUnicode_InternFromString("data_ptr");
    static PyObject* const nbytes = PyUnicode_InternFromString("nbytes");

    // A view with the negative bit set (x.conj().imag) stores the values' negations.
    const py::object negated = call_method(tensor.ptr(), is_neg);
    if (!negated || negated.ptr() != Py_False) return py::none();
    // Holding the storage object keeps the memory alive for the whole call, even if another
    // thread gives the tensor new storage meanwhile (t.set_()).
    const py::object storage = call_method(tensor.ptr(), untyped_storage);
    const py::object strides = call_method(tensor.ptr(), stride);
    const auto shape = py::reinterpret_steal<py::object>(PyObject_GetAttr(tensor.ptr(), shape_name));
    if (!shape) PyErr_Clear();
    if (!storage || !strides || !shape || !PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()) ||
        PyTuple_GET_SIZE(shape.ptr()) != PyTuple_GET_SIZE(strides.ptr())) {
        return py::none();
    }
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape.ptr());
    const auto size_at = [&](Py_ssize_t d) { return as_ssize(PyTuple_GET_ITEM(shape.ptr(), d)); };
    const auto stride_at = [&](Py_ssize_t d) { return as_ssize(PyTuple_GET_ITEM(strides.ptr(), d)); };
    std::ptrdiff_t rows = 1, row_length = 0, row_stride = 0, element_stride = 1;
    if (ndim == 2 && !flatten) {
        rows = size_at(0);
        row_length = size_at(1);
        row_stride = stride_at(0);
        element_stride = stride_at(1);
    } else if (ndim == 1) {
        row_length = size_at(0);
        element_stride = stride_at(0);
    } else if (flatten) {
        // C-contiguous: each stride is the product of the later sizes (sizes of 1 excepted).
        std::ptrdiff_t numel = 1;
        bool contiguous = true;
        for (Py_ssize_t d = ndim; d-- > 0;) {
            const std::ptrdiff_t size = size_at(d);
            if (size < 0 || (size > 0 && numel > std::numeric_limits<std::ptrdiff_t>::max() / size)) {
                throw py::value_error("a tensor's sizes are out of range");
            }
            if (size != 1 && stride_at(d) != numel) contiguous = false;
            numel *= size;
        }
        if (!contiguous && numel != 0) return py::none();
        row_length = numel;
    } else {
        return py::none();
    }
    if (rows < 0 || row_length < 0) throw py::value_error("a tensor's sizes cannot be negative");
    const py::object address = call_method(tensor.ptr(), data_ptr);
    const py::object storage_address = call_method(storage.ptr(), data_ptr);
    const py::object storage_bytes = call_method(storage.ptr(), nbytes);
    if (!address || !storage_address || !storage_bytes) return py::none();
    return encode_strided(
        rows_in_storage(as_size(address.ptr()), as_size(storage_address.ptr()), as_size(storage_bytes.ptr()),
                        static_cast<std::size_t>(rows), static_cast<std::size_t>(row_length),
                        row_stride, element_stride, source),
        target, threads);
}

tensorb64::element_format source_format(std::string_view dtype, std::string_view byteorder) {
    if (byteorder != "little" && byteorder != "big") {
        throw py::value_error("unknown byte order '"s + std::string(byteorder) +
                              "'; expected 'little' or 'big'");
    }
    return {parse_source_dtype(dtype),
            byteorder == "little" ? tensorb64::byte_order::little : tensorb64::byte_order::big};
}

tensorb64::element_format output_format(const py::object& dtype, const py::object& byteorder) {
    return {parse_output_dtype(dtype), parse_byte_order(byteorder)};
}

tensorb64::simd_level parse_level(const std::string& name) {
    tensorb64::simd_level level;
    if (!tensorb64::parse_simd_level(name, &level)) {
        throw py::value_error("unknown SIMD level '" + name +
                              "'; expected scalar, avx2, avx512 or neon");
    }
    return level;
}

std::vector<std::string> available_levels() {
    std::vector<std::string> names;
    for (tensorb64::simd_level level : tensorb64::available_simd_levels()) {
        names.emplace_back(tensorb64::to_string(level));
    }
    return names;
}

// ---- The /v1/embeddings response body, base64 rows (issue 12) -------------------------------
// One bytes object: `head` (the envelope up to and including `"data":[`), the data entries of
// every row written by the core, then `tail` (`]` and the rest of the envelope). Every size is
// checked before the one allocation; the GIL is released while the core writes. Self-contained:
// it reads its input through rows_of_buffer like encode_rows (to be re-pointed at the common
// input reader).
py::bytes response_body_base64(const py::buffer& array, std::string_view source_dtype,
                               std::string_view source_order, const py::object& dtype,
                               const py::object& byteorder, const py::bytes& head,
                               const py::bytes& tail, std::size_t first_index, unsigned threads) {
    const tensorb64::element_format target = output_format(dtype, byteorder);
    const py::buffer_info info = array.request();
    const tensorb64::strided_rows source =
        rows_of_buffer(info, source_format(source_dtype, source_order), false);
    check_convertible(source, target);
    const auto head_size = static_cast<std::size_t>(PyBytes_GET_SIZE(head.ptr()));
    const auto tail_size = static_cast<std::size_t>(PyBytes_GET_SIZE(tail.ptr()));
    std::size_t data_size = 0;
    const std::size_t limit = static_cast<std::size_t>(PY_SSIZE_T_MAX);
    if (!tensorb64::base64_data_size(source.rows, source.row_length, target.type, first_index, &data_size) ||
        data_size > limit - head_size || data_size + head_size > limit - tail_size) {
        throw py::value_error("response body too large: " + std::to_string(source.rows) + " rows of " +
                              std::to_string(source.row_length) + " " + tensorb64::to_string(target.type) +
                              " values as base64 would exceed the largest possible bytes object (" +
                              std::to_string(limit) + " bytes)");
    }
    const std::size_t size = head_size + data_size + tail_size;
    PyObject* body = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
    if (body == nullptr) throw py::error_already_set();  // MemoryError, naming nothing more than Python does
    auto result = py::reinterpret_steal<py::bytes>(body);
    char* out = PyBytes_AS_STRING(body);
    const char* head_bytes = PyBytes_AS_STRING(head.ptr());
    const char* tail_bytes = PyBytes_AS_STRING(tail.ptr());
    {
        py::gil_scoped_release release;
        std::memcpy(out, head_bytes, head_size);
        char* end = tensorb64::write_base64_data(source, target, first_index, out + head_size, threads);
        std::memcpy(end, tail_bytes, tail_size);
    }
    return result;
}
// ---- end of the response body block ---------------------------------------------------------

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "The C++ core of tensorb64; use the functions of the tensorb64 package instead.";
    m.attr("__version__") = TENSORB64_VERSION;

    // Fail at import, with the reason, when TENSORB64_SIMD names a level this CPU lacks.
    try {
        tensorb64::active_simd_level();
    } catch (const std::runtime_error& e) {
        throw py::import_error(e.what());
    }

    m.def(
        "encode_rows",
        [](const py::buffer& array, std::string_view source_dtype, std::string_view source_order,
           const py::object& dtype, const py::object& byteorder, unsigned threads) {
            const auto target = output_format(dtype, byteorder);
            const py::buffer_info info = array.request();
            return encode_strided(rows_of_buffer(info, source_format(source_dtype, source_order), false),
                                  target, threads);
        },
        py::arg("array"), py::arg("source_dtype"), py::arg("source_order"), py::arg("dtype"),
        py::arg("byteorder"), py::arg("threads") = 1,
        "One base64 str per row of a 1-D (one row) or 2-D buffer.");
    m.def(
        "encode",
        [](const py::buffer& array, std::string_view source_dtype, std::string_view source_order,
           const py::object& dtype, const py::object& byteorder) {
            const auto target = output_format(dtype, byteorder);
            const py::buffer_info info = array.request();
            return py::object(encode_strided(
                rows_of_buffer(info, source_format(source_dtype, source_order), true), target, 1)[0]);
        },
        py::arg("array"), py::arg("source_dtype"), py::arg("source_order"), py::arg("dtype"),
        py::arg("byteorder"), "The base64 str of a 1-D buffer.");
    m.def(
        "encode_body",
        [](const py::buffer& array, std::string_view source_dtype, std::string_view source_order,
           const py::object& dtype, const py::object& byteorder, unsigned threads) {
            const auto target = output_format(dtype, byteorder);
            const py::buffer_info info = array.request();
            return rows_to_bytes(rows_of_buffer(info, source_format(source_dtype, source_order), false),
                                 target, threads);
        },
        py::arg("array"), py::arg("source_dtype"), py::arg("source_order"), py::arg("dtype"),
        py::arg("byteorder"), py::arg("threads") = 1,
        "The converted bytes of every row of a 1-D (one row) or 2-D buffer, end to end.");
    m.def(
        "encode_tensor",
        [](const py::object& tensor, std::string_view source_dtype, const py::object& dtype,
           const py::object& byteorder, unsigned threads, bool flatten) {
            return encode_tensor(tensor, parse_source_dtype(source_dtype),
                                 output_format(dtype, byteorder), threads, flatten);
        },
        py::arg("tensor"), py::arg("source_dtype"), py::arg("dtype"), py::arg("byteorder"),
        py::arg("threads"), py::arg("flatten"),
        "One base64 str per row of a CPU torch tensor read in place (None if its layout needs "
        "the general path); every element is checked to lie inside its storage.");
    m.def(
        "encoded_length",
        [](std::size_t elements, std::size_t element_size) {
            return checked_encoded_size(elements, element_size);
        },
        py::arg("elements"), py::arg("element_size"),
        "Length of the base64 text of `elements` elements; ValueError if no str can hold it.");
    // The response body, base64 rows (issue 12): see response_body_base64 above.
    m.def("response_body_base64", &response_body_base64, py::arg("array"), py::arg("source_dtype"),
          py::arg("source_order"), py::arg("dtype"), py::arg("byteorder"), py::arg("head"),
          py::arg("tail"), py::arg("first_index"), py::arg("threads"),
          "head + the data entries of every row of a 1-D (one row) or 2-D buffer as base64 + tail, "
          "in one bytes object.");
    m.def("simd_level", [] { return std::string(tensorb64::to_string(tensorb64::active_simd_level())); },
          "The SIMD level of the kernel in use.");
    m.def("available_simd_levels", &available_levels,
          "The SIMD levels this CPU can run, lowest first.");
    m.def(
        "set_simd_level",
        [](const std::string& name) {
            try {
                tensorb64::force_simd_level(parse_level(name));
            } catch (const std::invalid_argument& e) {
                throw py::value_error(e.what());
            }
        },
        py::arg("name"), "Switches every later call to the named SIMD level.");
}
