// The Python binding of the C++ core: buffer checks, exact output lengths with overflow
// guards, and the `str` objects the kernel writes into. The str objects and the list are made
// while holding the GIL; the GIL is released while the kernel fills them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace py = pybind11;
using namespace std::string_literals;

namespace {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
constexpr tensorb64::byte_order host_byte_order = tensorb64::byte_order::big;
#else
constexpr tensorb64::byte_order host_byte_order = tensorb64::byte_order::little;
#endif

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
        if (text == "native") return host_byte_order;
    }
    throw py::value_error("unknown byteorder " + py::repr(name).cast<std::string>() +
                          "; expected 'little', 'big' or 'native'");
}

// The base64 length of `elements` elements of `element_size` bytes, if a str can hold it.
std::size_t checked_encoded_size(std::size_t elements, std::size_t element_size) {
    std::size_t length = 0;
    if (elements > std::numeric_limits<std::size_t>::max() / element_size ||
        !tensorb64::encoded_size(elements * element_size, &length) ||
        length > static_cast<std::size_t>(PY_SSIZE_T_MAX)) {
        throw py::value_error("input too large: its base64 text would exceed the largest "
                              "possible str");
    }
    return length;
}

// Creates one str per row, then releases the GIL while the kernel writes into them.
py::list encode_strided(const tensorb64::strided_rows& source, tensorb64::element_format target,
                        unsigned threads) {
    if (!tensorb64::can_convert(source.format.type, target.type)) {
        throw py::value_error("cannot encode "s + tensorb64::to_string(source.format.type) +
                              " elements as " + tensorb64::to_string(target.type));
    }
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

// How far, in bytes, `count` steps of `stride` elements of `size` bytes reach: false when that
// is beyond a quarter of the address space (no real tensor is), so sums of two cannot overflow.
bool reach(std::size_t count, std::ptrdiff_t stride, std::ptrdiff_t size, std::ptrdiff_t* bytes) {
    constexpr std::ptrdiff_t limit = std::numeric_limits<std::ptrdiff_t>::max() / 4;
    if (count > static_cast<std::size_t>(limit) || stride < -limit || stride > limit) return false;
    const std::ptrdiff_t steps = count == 0 ? 0 : static_cast<std::ptrdiff_t>(count) - 1;
    const std::ptrdiff_t magnitude = std::abs(stride);
    if (magnitude != 0 && steps > limit / magnitude / size) return false;
    *bytes = steps * stride * size;
    return true;
}

// Rows at a raw address (a torch tensor's memory), checked to lie inside its storage
// [storage_address, storage_address + storage_bytes). Strides are in elements.
tensorb64::strided_rows rows_at_address(std::uintptr_t address, std::uintptr_t storage_address,
                                        std::size_t storage_bytes, std::size_t rows,
                                        std::size_t row_length, std::ptrdiff_t row_stride,
                                        std::ptrdiff_t element_stride,
                                        tensorb64::element_format format) {
    const auto size = static_cast<std::ptrdiff_t>(tensorb64::dtype_size(format.type));
    std::ptrdiff_t down = 0, across = 0;
    bool inside = reach(rows, row_stride, size, &down) && reach(row_length, element_stride, size, &across);
    if (inside && rows > 0 && row_length > 0) {
        const std::ptrdiff_t low = std::min<std::ptrdiff_t>(down, 0) + std::min<std::ptrdiff_t>(across, 0);
        const std::ptrdiff_t high = std::max<std::ptrdiff_t>(down, 0) + std::max<std::ptrdiff_t>(across, 0) + size;
        const std::uintptr_t offset = address - storage_address;
        inside = address >= storage_address && offset <= storage_bytes &&
                 static_cast<std::ptrdiff_t>(offset) + low >= 0 &&
                 static_cast<std::size_t>(static_cast<std::ptrdiff_t>(offset) + high) <= storage_bytes;
    }
    if (!inside) throw py::value_error("the tensor's shape and strides reach outside its storage");
    tensorb64::strided_rows source{};
    source.data = reinterpret_cast<const void*>(address);
    source.rows = rows;
    source.row_length = row_length;
    source.row_stride = row_stride * size;
    source.element_stride = element_stride * size;
    source.format = format;
    return source;
}

// A CPU torch tensor read where it lies, through torch's public tensor methods only (the
// binding needs no torch headers); the Python layer has checked its type, device, layout and
// dtype. 2-D: one row per line; 1-D: one row; with `flatten`, any C-contiguous tensor is one
// row. Returns None for a layout this cannot take, which the Python layer sends the general way.
py::object encode_tensor(const py::object& tensor, tensorb64::dtype source,
                         tensorb64::element_format target, unsigned threads, bool flatten) {
    // Interned once: attribute lookups by a fresh string cost more than the kernel on short rows.
    static PyObject* const untyped_storage = PyUnicode_InternFromString("untyped_storage");
    static PyObject* const shape_name = PyUnicode_InternFromString("shape");
    static PyObject* const stride_name = PyUnicode_InternFromString("stride");
    static PyObject* const data_ptr = PyUnicode_InternFromString("data_ptr");
    static PyObject* const nbytes = PyUnicode_InternFromString("nbytes");
    const auto call = [](PyObject* object, PyObject* method) {
        PyObject* result = PyObject_CallMethodNoArgs(object, method);
        if (result == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(result);
    };
    const auto integer = [](PyObject* number) {
        const Py_ssize_t value = PyLong_AsSsize_t(number);
        if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
        return static_cast<std::ptrdiff_t>(value);
    };

    // Holding the storage object keeps the memory alive for the whole call, even if another
    // thread gives the tensor new storage meanwhile (t.set_()).
    const py::object storage = call(tensor.ptr(), untyped_storage);
    const py::object shape = py::reinterpret_steal<py::object>(PyObject_GetAttr(tensor.ptr(), shape_name));
    if (!shape) throw py::error_already_set();
    const py::object strides = call(tensor.ptr(), stride_name);
    if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()) ||
        PyTuple_GET_SIZE(shape.ptr()) != PyTuple_GET_SIZE(strides.ptr())) {
        throw py::type_error("a tensor's shape and stride() must be tuples of equal length");
    }
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape.ptr());
    const auto size_at = [&](Py_ssize_t d) { return integer(PyTuple_GET_ITEM(shape.ptr(), d)); };
    const auto stride_at = [&](Py_ssize_t d) { return integer(PyTuple_GET_ITEM(strides.ptr(), d)); };
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
    const tensorb64::element_format format{source, host_byte_order};
    const auto address = static_cast<std::uintptr_t>(integer(call(tensor.ptr(), data_ptr).ptr()));
    const auto storage_address = static_cast<std::uintptr_t>(integer(call(storage.ptr(), data_ptr).ptr()));
    const auto storage_bytes = static_cast<std::size_t>(integer(call(storage.ptr(), nbytes).ptr()));
    return encode_strided(rows_at_address(address, storage_address, storage_bytes,
                                          static_cast<std::size_t>(rows),
                                          static_cast<std::size_t>(row_length), row_stride,
                                          element_stride, format),
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
        "encode_rows_at",
        [](const py::object& /* storage: its reference keeps the memory alive for the call */,
           std::uintptr_t address, std::uintptr_t storage_address, std::size_t storage_bytes,
           std::size_t rows, std::size_t row_length, std::ptrdiff_t row_stride,
           std::ptrdiff_t element_stride, std::string_view source_dtype, const py::object& dtype,
           const py::object& byteorder, unsigned threads) {
            const tensorb64::element_format format{parse_source_dtype(source_dtype), host_byte_order};
            return encode_strided(rows_at_address(address, storage_address, storage_bytes, rows,
                                                  row_length, row_stride, element_stride, format),
                                  output_format(dtype, byteorder), threads);
        },
        py::arg("storage"), py::arg("address"), py::arg("storage_address"),
        py::arg("storage_bytes"), py::arg("rows"), py::arg("row_length"), py::arg("row_stride"),
        py::arg("element_stride"), py::arg("source_dtype"), py::arg("dtype"),
        py::arg("byteorder"), py::arg("threads") = 1,
        "The bounds-checked core of encode_tensor, for tests: rows of host-ordered elements at "
        "`address`, checked to lie inside [storage_address, storage_address + storage_bytes); "
        "strides in elements; `storage` is held for the call.");
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
}
