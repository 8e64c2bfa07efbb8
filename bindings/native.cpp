// The Python binding of the C++ core: buffer checks, exact output lengths with overflow
// guards, and the `str` objects the kernel writes into. The str objects and the list are made
// while holding the GIL; the GIL is released while the kernel fills them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
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

}  // namespace

// ==== decode: strict base64 (or a binary body's raw bytes) into a caller's buffer ============
// Self-contained: the Python layer (src/tensorb64/_decode.py) sizes the output with
// decoded_length, allocates it once, and decode_into fills it. Element types and byte orders are
// the core's enum values (DTYPE_CODES, BYTE_ORDER_CODES).
namespace decode_binding {

// A held buffer, released (with the GIL) when this goes.
struct held_buffer {
    Py_buffer view{};
    bool held = false;
    held_buffer() = default;
    held_buffer(const held_buffer&) = delete;
    held_buffer& operator=(const held_buffer&) = delete;
    ~held_buffer() {
        if (held) PyBuffer_Release(&view);
    }
};

// The characters (or raw bytes) of a str or bytes-like argument, read in place. A str that is
// not ASCII cannot be base64: its first bad character is reported, named as the code point.
struct input_text {
    const char* data = nullptr;
    std::size_t size = 0;
    held_buffer buffer;
};

[[noreturn]] void refuse_non_ascii(PyObject* text, tensorb64::dtype stored) {
    // The first error as the core would report it, with each non-ASCII code point as 0x80 (a
    // bad character), so that an earlier bad ASCII character still wins.
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void* data = PyUnicode_DATA(text);
    std::string marked(static_cast<std::size_t>(length), '\0');
    for (Py_ssize_t i = 0; i < length; ++i) {
        const Py_UCS4 c = PyUnicode_READ(kind, data, i);
        marked[static_cast<std::size_t>(i)] = static_cast<char>(c < 0x80 ? c : 0x80);
    }
    const tensorb64::decode_result r = tensorb64::check_base64(marked.data(), marked.size(), stored);
    const auto at = static_cast<Py_ssize_t>(r.offset);
    if (r.status == tensorb64::decode_status::bad_character && r.character == 0x80) {
        char code[16];
        std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(PyUnicode_READ(kind, data, at)));
        const py::str character(py::reinterpret_steal<py::object>(PyUnicode_Substring(text, at, at + 1)));
        throw py::value_error("invalid base64: non-ASCII character " + py::repr(character).cast<std::string>() +
                              " (" + code + ") at offset " + std::to_string(r.offset) +
                              " (the alphabet is A-Z, a-z, 0-9, '+' and '/', with '=' padding)");
    }
    throw py::value_error(tensorb64::to_string(r));
}

void read_text(const py::handle& object, tensorb64::dtype stored, bool base64, input_text* text) {
    PyObject* o = object.ptr();
    if (PyUnicode_Check(o)) {
        if (!base64) throw py::type_error("expected bytes, got str");
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(o) != 0) throw py::error_already_set();  // a legacy str, before 3.12
#endif
        if (!PyUnicode_IS_ASCII(o)) refuse_non_ascii(o, stored);
        text->data = static_cast<const char*>(PyUnicode_DATA(o));  // ASCII: one byte per character
        text->size = static_cast<std::size_t>(PyUnicode_GET_LENGTH(o));
        return;
    }
    if (PyObject_GetBuffer(o, &text->buffer.view, PyBUF_SIMPLE) != 0) {
        if (PyObject_CheckBuffer(o)) throw py::error_already_set();  // e.g. not contiguous: say so
        PyErr_Clear();
        throw py::type_error(std::string(base64 ? "expected a base64 str or bytes" : "expected bytes") +
                             ", got " + Py_TYPE(o)->tp_name);
    }
    text->buffer.held = true;
    text->data = static_cast<const char*>(text->buffer.view.buf);
    text->size = static_cast<std::size_t>(text->buffer.view.len);
}

tensorb64::dtype dtype_of(int code) {
    const auto type = static_cast<tensorb64::dtype>(code);
    if (code < 0 || code > 255 || std::string_view(tensorb64::to_string(type)) == "unknown") {
        throw py::value_error("unknown element type code " + std::to_string(code));
    }
    return type;
}

tensorb64::byte_order byte_order_of(int code) {
    if (code != static_cast<int>(tensorb64::byte_order::little) && code != static_cast<int>(tensorb64::byte_order::big)) {
        throw py::value_error("unknown byte order code " + std::to_string(code));
    }
    return static_cast<tensorb64::byte_order>(code);
}

void check(const tensorb64::decode_result& result) {
    if (result.status != tensorb64::decode_status::ok) throw py::value_error(tensorb64::to_string(result));
}

// Below this many characters, releasing the GIL costs more than it lets others do.
constexpr std::size_t release_gil_above = 64 * 1024;

void add_functions(py::module_& m) {
    py::dict dtype_codes, byte_order_codes;
    for (int code = 0; code < 256; ++code) {
        const char* name = tensorb64::to_string(static_cast<tensorb64::dtype>(code));
        if (std::string_view(name) != "unknown") dtype_codes[name] = code;
    }
    byte_order_codes["little"] = static_cast<int>(tensorb64::byte_order::little);
    byte_order_codes["big"] = static_cast<int>(tensorb64::byte_order::big);
    m.attr("DTYPE_CODES") = dtype_codes;
    m.attr("BYTE_ORDER_CODES") = byte_order_codes;

    m.def(
        "decoded_length",
        [](const py::object& data, int dtype, bool base64) {
            const tensorb64::dtype stored = dtype_of(dtype);
            input_text text;
            read_text(data, stored, base64, &text);
            std::size_t elements = 0;
            if (base64) {
                check(tensorb64::decoded_elements(text.data, text.size, stored, &elements));
            } else {
                const std::size_t size = tensorb64::dtype_size(stored);
                if (text.size % size != 0) {
                    tensorb64::decode_result r;
                    r.status = tensorb64::decode_status::not_whole_values;
                    r.offset = text.size;
                    r.stored = stored;
                    check(r);
                }
                elements = text.size / size;
            }
            return elements;
        },
        py::arg("data"), py::arg("dtype"), py::arg("base64") = true,
        "The number of elements of type `dtype` (a DTYPE_CODES value) that `data` holds: strict "
        "base64 text (str or bytes), judged by its length and padding, or with base64=False raw "
        "stored bytes. ValueError naming what is wrong, and where.");
    m.def(
        "decode_into",
        [](const py::object& data, const py::object& out, int dtype, int byteorder, bool widen, bool base64) {
            const tensorb64::element_format stored{dtype_of(dtype), byte_order_of(byteorder)};
            input_text text;
            read_text(data, stored.type, base64, &text);
            held_buffer output;
            if (PyObject_GetBuffer(out.ptr(), &output.view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
                throw py::error_already_set();
            }
            output.held = true;
            const auto out_bytes = static_cast<std::size_t>(output.view.len);
            tensorb64::decode_result result;
            {
                std::optional<py::gil_scoped_release> release;
                if (text.size > release_gil_above) release.emplace();
                result = base64 ? tensorb64::decode_base64(text.data, text.size, stored, widen, output.view.buf, out_bytes)
                                : tensorb64::convert_elements(text.data, text.size, stored, widen, output.view.buf, out_bytes);
            }
            check(result);
        },
        py::arg("data"), py::arg("out"), py::arg("dtype"), py::arg("byteorder"), py::arg("widen"),
        py::arg("base64") = true,
        "Decodes `data` (strict base64, or with base64=False raw stored bytes) into the writable "
        "C-contiguous buffer `out`, which must hold exactly its values: the stored elements in "
        "host byte order, or with widen their float32 values. ValueError naming what is wrong.");
}

}  // namespace decode_binding
// ==== end of decode ===========================================================================

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

    decode_binding::add_functions(m);  // decode_into, decoded_length, DTYPE_CODES, BYTE_ORDER_CODES
}
