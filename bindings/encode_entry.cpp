// The entry points that write base64 text or raw bytes of rows: encode, encode_rows, and the
// binary body's _row_bytes (with _row_shape, the rows an input has). METH_FASTCALL functions: a
// slower calling convention would cost more than encoding a 384-value row.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "arguments.hpp"
#include "entry_points.hpp"
#include "output_memory.hpp"
#include "reader.hpp"
#include "sizes.hpp"

namespace binding {

namespace {

// The core's encode_rows, the GIL released while it writes `total` bytes, where that is worth it.
void encode_rows_released(const tb::strided_rows& source, tb::element_format target,
                          char* const* outputs, unsigned threads, tb::row_output output,
                          std::size_t total) {
    gil_released_if released(total >= release_gil_above_bytes);
    tb::encode_rows(source, target, outputs, threads, output);
}

// One base64 str per row, written in place by the core.
PyObject* rows_to_strs(const tb::strided_rows& source, tb::element_format target,
                       unsigned threads) {
    check_convertible(source, target);
    const std::size_t length = row_text_length(source, target);
    const std::size_t total = checked_total(source.rows, length, "base64 text");
    ref list(PyList_New(static_cast<Py_ssize_t>(source.rows)));
    if (!list) throw python_error{};
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) {
        PyObject* text = PyUnicode_New(static_cast<Py_ssize_t>(length), 127);
        if (text == nullptr) throw python_error{};
        PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(r), text);  // steals the reference
        outputs[r] = static_cast<char*>(PyUnicode_DATA(text));
    }
    if (total >= prepare_from_bytes()) {
        gil_released_if released(true);
        prepare_blocks(source.rows, [&](std::size_t r) { return std::pair{outputs[r], length}; });
    }
    encode_rows_released(source, target, outputs.data(), threads, tb::row_output::base64, total);
    return list.release();
}

// The base64 str of all the rows' bytes end to end (C order).
PyObject* rows_to_one_str(const tb::strided_rows& source, tb::element_format target,
                          unsigned threads) {
    check_convertible(source, target);
    const std::size_t size = tb::dtype_size(target.type);
    const std::size_t row_bytes = checked_total(source.row_length, size, "input's bytes", "values");
    const std::size_t bytes = checked_total(source.rows, row_bytes, "input's bytes");
    std::size_t length = 0;
    if (!tb::encoded_size(bytes, &length))
        raise(PyExc_MemoryError, "the input is too large to encode");
    checked_total(1, length, "base64 text");
    ref text(PyUnicode_New(static_cast<Py_ssize_t>(length), 127));
    if (!text) throw python_error{};
    char* out = static_cast<char*>(PyUnicode_DATA(text.get()));
    prepare_releasing_gil(out, length);
    const std::size_t per_part = source.row_length / std::max(threads, 1U) / 3 * 3;
    if (source.rows == 1 && threads > 1 && per_part > 0 && source.row_dims <= 1) {
        // One row (a contiguous input) for several threads: cut into equal runs of whole groups
        // of values (3 values: a whole number of base64 groups), the rest after them.
        tb::strided_rows parts = source;
        parts.rows = source.row_length / per_part;
        parts.row_length = per_part;
        parts.row_stride = source.element_stride * static_cast<std::ptrdiff_t>(per_part);
        const std::size_t part_text = per_part * size / 3 * 4;
        std::vector<char*> outputs(parts.rows);
        for (std::size_t r = 0; r < parts.rows; ++r) outputs[r] = out + r * part_text;
        encode_rows_released(parts, target, outputs.data(), threads, tb::row_output::base64,
                             length);
        const std::size_t done = parts.rows * per_part;
        if (done < source.row_length) {
            tb::strided_rows rest = source;
            rest.data = static_cast<const unsigned char*>(source.data) +
                        source.element_stride * static_cast<std::ptrdiff_t>(done);
            rest.row_length = source.row_length - done;
            char* const one[] = {out + parts.rows * part_text};
            encode_rows_released(rest, target, one, 1, tb::row_output::base64, length);
        }
    } else if (source.rows <= 1 || row_bytes % 3 == 0) {
        // Every row but the last ends on a whole base64 group: the rows' texts simply concatenate.
        const std::size_t row_text = row_bytes / 3 * 4;
        std::vector<char*> outputs(source.rows);
        for (std::size_t r = 0; r < source.rows; ++r) outputs[r] = out + r * row_text;
        encode_rows_released(source, target, outputs.data(), threads, tb::row_output::base64,
                             length);
    } else {
        // Rows that end mid-group (a permuted N-D input whose rows are not a multiple of 3 bytes):
        // one temporary of the converted bytes, then their text. The only full-size temporary.
        std::vector<unsigned char> converted(bytes);
        std::vector<char*> outputs(source.rows);
        for (std::size_t r = 0; r < source.rows; ++r)
            outputs[r] = reinterpret_cast<char*>(converted.data()) + r * row_bytes;
        encode_rows_released(source, target, outputs.data(), threads, tb::row_output::bytes, bytes);
        tb::strided_rows flat{};
        flat.data = converted.data();
        flat.rows = 1;
        flat.row_length = bytes / size;
        flat.element_stride = static_cast<std::ptrdiff_t>(size);
        flat.format = {target.type, target.order};
        char* const one[] = {out};
        encode_rows_released(flat, target, one, 1, tb::row_output::base64, length);
    }
    return text.release();
}

// The converted bytes of every row, one after another, in one bytes object.
PyObject* rows_to_bytes(const tb::strided_rows& source, tb::element_format target,
                        unsigned threads) {
    check_convertible(source, target);
    const std::size_t row_bytes =
        checked_total(source.row_length, tb::dtype_size(target.type), "body");
    const std::size_t total = checked_total(source.rows, row_bytes, "body");
    ref body(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(total)));
    if (!body) throw python_error{};
    char* data = PyBytes_AS_STRING(body.get());
    prepare_releasing_gil(data, total);
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) outputs[r] = data + r * row_bytes;
    encode_rows_released(source, target, outputs.data(), threads, tb::row_output::bytes, total);
    return body.release();
}

PyObject* encode_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        const call_args call = parse_call("encode", args, nargs, kwnames, true);
        const tb::element_format target{output_dtype(call.dtype), byte_order(call.byteorder)};
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in)) return call_fallback("encode", args, nargs, kwnames);
        return rows_to_one_str(as_one_row(in), target, threads);
    });
}

PyObject* encode_rows_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        const call_args call = parse_call("encode_rows", args, nargs, kwnames, true);
        const tb::element_format target{output_dtype(call.dtype), byte_order(call.byteorder)};
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in)) return call_fallback("encode_rows", args, nargs, kwnames);
        if (in.ndim == 0) {
            raise(PyExc_ValueError,
                  "encode_rows needs an input with at least one dimension; use encode() for a "
                  "single value");
        }
        return rows_to_strs(rows_of(in), target, threads);
    });
}

// (body, rows, row_length): the bytes of vLLM's binary response, and the shape of its rows.
PyObject* row_bytes_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        const call_args call = parse_call("encode_binary_body", args, nargs, kwnames, true);
        const tb::element_format target{output_dtype(call.dtype), byte_order(call.byteorder)};
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in)) return call_fallback("_row_bytes", args, nargs, kwnames);
        if (in.ndim == 0)
            raise(PyExc_ValueError,
                  "encode_binary_body needs an input with at least one dimension");
        const tb::strided_rows rows = rows_of(in);
        ref body(rows_to_bytes(rows, target, threads));
        return Py_BuildValue("(Onn)", body.get(), static_cast<Py_ssize_t>(rows.rows),
                             static_cast<Py_ssize_t>(rows.row_length));
    });
}

// The shape of the rows an input has, as the entry points see them: (rows, row_length).
PyObject* row_shape_entry(PyObject*, PyObject* x) {
    return guarded([&] {
        input_array in;
        if (!read_input(x, in)) return call_fallback("_row_shape", &x, 1, nullptr);
        if (in.ndim == 0) raise(PyExc_ValueError, "embeddings need at least one dimension");
        const tb::strided_rows rows = rows_of(in);
        return Py_BuildValue("(nn)", static_cast<Py_ssize_t>(rows.rows),
                             static_cast<Py_ssize_t>(rows.row_length));
    });
}

}  // namespace

PyMethodDef encode_methods[] = {
    {"encode", as_method(encode_entry), METH_FASTCALL | METH_KEYWORDS,
     "encode(embeddings, /, *, dtype='float32', byteorder='little', threads=1)\n--\n\n"
     "The whole input, flattened in C order, as one base64 str (threads: split its rows, where "
     "it has several, across this many threads)."},
    {"encode_rows", as_method(encode_rows_entry), METH_FASTCALL | METH_KEYWORDS,
     "encode_rows(embeddings, /, *, dtype='float32', byteorder='little', threads=1)\n--\n\n"
     "One base64 str per row: a 1-D input is one row; an N-D input has all its leading dimensions "
     "as rows."},
    {"_row_bytes", as_method(row_bytes_entry), METH_FASTCALL | METH_KEYWORDS,
     "_row_bytes(embeddings, /, *, dtype='float32', byteorder='little', threads=1)\n--\n\n"
     "(body, rows, row_length): every row's converted bytes end to end, and the rows' shape."},
    {"_row_shape", row_shape_entry, METH_O,
     "_row_shape(embeddings, /)\n--\n\n(rows, row_length) of an input as the encoders see its "
     "rows."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
