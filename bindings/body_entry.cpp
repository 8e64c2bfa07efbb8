// The /v1/embeddings response body: head (the envelope up to and including `"data":[`), the
// data entries of every row written by the core, then tail (`]` and the rest of the envelope),
// in one bytes object. Every size is checked before the one allocation; the GIL is released
// while the core writes.
#include <cstring>

#include "arguments.hpp"
#include "entry_points.hpp"
#include "float_text.hpp"
#include "reader.hpp"
#include "sizes.hpp"

namespace binding {

namespace {

// The data entries as base64, at their exact size.
PyObject* response_body_base64_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        const body_args call = parse_body_args("_response_body_base64", args, nargs, 7);
        const tb::element_format target{output_dtype(args[1]), byte_order(args[2])};
        input_array in;
        if (!read_input(call.x, in))
            return call_fallback("_response_body_base64", args, nargs, nullptr);
        if (in.ndim == 0) raise(PyExc_ValueError, "embeddings need at least one dimension");
        const tb::strided_rows source = rows_of(in);
        check_convertible(source, target);
        const auto head_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.head));
        const auto tail_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.tail));
        // First per row (a size that cannot exist is named with its row count), then exactly.
        std::size_t per_row = 0, data_size = 0;
        if (!tb::base64_data_size(1, source.row_length, target.type, 0, &per_row))
            per_row = SIZE_MAX;
        checked_total(source.rows, per_row, "response body");
        if (!tb::base64_data_size(source.rows, source.row_length, target.type, call.first_index,
                                  &data_size)) {
            data_size = SIZE_MAX;
        }
        const std::size_t size =
            checked_total(1, checked_total(1, data_size, "response body") + head_size + tail_size,
                          "response body");
        ref body(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size)));
        if (!body) throw python_error{};
        char* out = PyBytes_AS_STRING(body.get());
        std::memcpy(out, PyBytes_AS_STRING(call.head), head_size);
        char* end = nullptr;
        {
            gil_released_if released(size >= release_gil_above_bytes);
            end = tb::write_base64_data(source, target, call.first_index, out + head_size,
                                        call.threads, call.keys);
        }
        std::memcpy(end, PyBytes_AS_STRING(call.tail), tail_size);
        return body.release();
    });
}

// head + the data entries of float rows + tail, in one bytes object made at its bound and trimmed
// (the pages past the text are never touched, so they cost address space, not memory).
PyObject* response_body_float_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        const body_args call = parse_body_args("_response_body_float", args, nargs, 6);
        const tb::float_format format = float_format(args[1]);
        input_array in;
        if (!read_input(call.x, in))
            return call_fallback("_response_body_float", args, nargs, nullptr);
        if (in.ndim == 0) raise(PyExc_ValueError, "embeddings need at least one dimension");
        const tb::strided_rows source = rows_of(in);
        const auto head_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.head));
        const auto tail_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.tail));
        std::size_t per_row = 0, bound = 0;
        if (!tb::float_data_bound(1, source.row_length, source.format.type, format, 0, &per_row))
            per_row = SIZE_MAX;
        checked_total(source.rows, per_row, "response body");
        if (!tb::float_data_bound(source.rows, source.row_length, source.format.type, format,
                                  call.first_index, &bound)) {
            bound = SIZE_MAX;
        }
        const std::size_t size = checked_total(
            1, checked_total(1, bound, "response body") + head_size + tail_size, "response body");
        PyObject* body = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
        if (body == nullptr) throw python_error{};
        ref owner(body);
        char* out = PyBytes_AS_STRING(body);
        std::memcpy(out, PyBytes_AS_STRING(call.head), head_size);
        char* end = nullptr;
        tb::float_text_result result;
        {
            gil_released_if released(source.rows * source.row_length >= release_gil_above_values);
            result = tb::write_float_data(source, format, call.first_index, out + head_size, &end,
                                          call.threads, call.keys);
        }
        if (!result.finite) refuse_non_finite(result);
        std::memcpy(end, PyBytes_AS_STRING(call.tail), tail_size);
        body = owner.release();
        if (_PyBytes_Resize(&body, static_cast<Py_ssize_t>(end + tail_size - out)) != 0)
            throw python_error{};
        return body;
    });
}

// _entry_bound(row_length, last_index, dtype, float_format, /): the most bytes the data entry of
// one row of row_length values, indexed up to last_index, takes with its separating comma: as
// base64 of `dtype` (exactly), or with dtype None as float text in float_format (bounded as
// doubles, whatever the source), in either key order (both write entries of one length). What a
// streamed body plans its chunks with.
// A size_t argument: OverflowError past size_t, TypeError for a non-int (checked before any
// further call of the C API, which may not run with an exception set).
std::size_t size_argument(PyObject* value) {
    const std::size_t size = PyLong_AsSize_t(value);
    if (size == static_cast<std::size_t>(-1) && PyErr_Occurred()) throw python_error{};
    return size;
}

PyObject* entry_bound_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 4) raise(PyExc_TypeError, "_entry_bound takes 4 arguments");
        const std::size_t row_length = size_argument(args[0]);
        const std::size_t last_index = size_argument(args[1]);
        std::size_t size = 0;
        const bool fits =
            args[2] != Py_None
                ? tb::base64_data_size(1, row_length, output_dtype(args[2]), last_index, &size) &&
                      size < SIZE_MAX
                : tb::float_data_bound(1, row_length, tb::dtype::float64, float_format(args[3]),
                                       last_index, &size);
        if (!fits) raise(PyExc_MemoryError, "a row's entry is too long to write");
        return PyLong_FromSize_t(args[2] != Py_None ? size + 1 : size);  // (float: comma counted)
    });
}

}  // namespace

PyMethodDef body_methods[] = {
    {"_response_body_base64", as_method(response_body_base64_entry), METH_FASTCALL,
     "_response_body_base64(embeddings, dtype, byteorder, head, tail, first_index, threads, "
     "key_order='openai', /)\n--\n\n"
     "head + the data entries of every row as base64 + tail, in one bytes object."},
    {"_response_body_float", as_method(response_body_float_entry), METH_FASTCALL,
     "_response_body_float(embeddings, float_format, head, tail, first_index, threads, "
     "key_order='openai', /)\n--\n\n"
     "head + the data entries of every row as JSON number arrays + tail, in one bytes object."},
    {"_entry_bound", as_method(entry_bound_entry), METH_FASTCALL,
     "_entry_bound(row_length, last_index, dtype, float_format, /)\n--\n\n"
     "The most bytes one row's data entry and its comma take (dtype None: float text)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
