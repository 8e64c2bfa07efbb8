// The Python binding of the C++ core: buffer checks, exact output lengths with overflow
// guards, and the `str` objects the kernel writes into. The str objects and the list are made
// while holding the GIL; the GIL is released while the kernel fills them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace py = pybind11;
using namespace std::string_literals;

namespace {

tensorb64::dtype parse_dtype(std::string_view name) {
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

tensorb64::byte_order parse_byte_order(std::string_view name) {
    if (name == "little") return tensorb64::byte_order::little;
    if (name == "big") return tensorb64::byte_order::big;
    throw py::value_error("unknown byte order '"s + std::string(name) +
                          "'; expected 'little' or 'big'");
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

// Encodes the rows of a 1-D (one row) or, unless `one_row_only`, 2-D buffer; returns a list of
// one str per row.
py::list encode_buffer(const py::buffer& array, std::string_view dtype, std::string_view byteorder,
                       std::string_view to_dtype, std::string_view to_byteorder, unsigned threads,
                       bool one_row_only) {
    const tensorb64::element_format source_format{parse_dtype(dtype), parse_byte_order(byteorder)};
    const tensorb64::element_format target{parse_dtype(to_dtype), parse_byte_order(to_byteorder)};
    if (!tensorb64::can_convert(source_format.type, target.type)) {
        throw py::value_error("cannot encode "s + std::string(dtype) + " elements as " +
                              std::string(to_dtype));
    }
    const py::buffer_info info = array.request();
    if (info.ndim != 1 && (one_row_only || info.ndim != 2)) {
        throw py::value_error("expected a "s + (one_row_only ? "1-D" : "1-D or 2-D") +
                              " buffer, got " + std::to_string(info.ndim) + " dimensions");
    }
    if (static_cast<std::size_t>(info.itemsize) != tensorb64::dtype_size(source_format.type)) {
        throw py::value_error("buffer items are " + std::to_string(info.itemsize) +
                              " bytes, but " + std::string(dtype) + " elements are " +
                              std::to_string(tensorb64::dtype_size(source_format.type)));
    }
    const bool one_row = info.ndim == 1;
    tensorb64::strided_rows source{};
    source.data = info.ptr;
    source.rows = one_row ? 1 : static_cast<std::size_t>(info.shape[0]);
    source.row_length = static_cast<std::size_t>(info.shape[one_row ? 0 : 1]);
    source.row_stride = one_row ? 0 : info.strides[0];
    source.element_stride = info.strides[one_row ? 0 : 1];
    source.format = source_format;

    const std::size_t length =
        checked_encoded_size(source.row_length, tensorb64::dtype_size(target.type));
    py::list texts(source.rows);
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
        [](const py::buffer& array, std::string_view dtype, std::string_view byteorder,
           std::string_view to_dtype, std::string_view to_byteorder, unsigned threads) {
            return encode_buffer(array, dtype, byteorder, to_dtype, to_byteorder, threads, false);
        },
        py::arg("array"), py::arg("dtype"), py::arg("byteorder"), py::arg("to_dtype"),
        py::arg("to_byteorder"), py::arg("threads") = 1,
        "One base64 str per row of a 1-D (one row) or 2-D buffer of `dtype` elements.");
    m.def(
        "encode",
        [](const py::buffer& array, std::string_view dtype, std::string_view byteorder,
           std::string_view to_dtype, std::string_view to_byteorder) {
            return py::object(encode_buffer(array, dtype, byteorder, to_dtype, to_byteorder, 1, true)[0]);
        },
        py::arg("array"), py::arg("dtype"), py::arg("byteorder"), py::arg("to_dtype"),
        py::arg("to_byteorder"), "The base64 str of a 1-D buffer of `dtype` elements.");
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
