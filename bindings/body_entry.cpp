// The /v1/embeddings response body, laid out by the core: its envelope from the values Python
// serialised (_body_envelope), then head (the envelope up to and including `"data":[`), the data
// entries of the rows written by the core (after a comma, for a chunk after the first), then tail
// (`]` and the rest of the envelope), in one bytes object; and the plan of a streamed body's
// chunks. Every size is checked before the one allocation; the GIL is released while the core
// writes.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "entry_points.hpp"
#include "float_text.hpp"
#include "output_memory.hpp"
#include "reader.hpp"
#include "sizes.hpp"

namespace binding {

namespace {

// The data entries as base64, at their exact size.
PyObject* response_body_base64_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        const body_args call = parse_body_args("_response_body_base64", args, nargs, 9);
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
                                  &data_size, call.leading_comma && source.rows != 0)) {
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
            prepare_for_writing(out, size);
            end = tb::write_base64_data(source, target, call.first_index, out + head_size,
                                        call.threads, *call.layout, call.leading_comma);
        }
        std::memcpy(end, PyBytes_AS_STRING(call.tail), tail_size);
        return body.release();
    });
}

// The float data entries of `source` written to `out` (which may hold up to bound_end) by the core:
// at once for a small body; for a large one, in pieces of rows, each prepared just before it is
// written (prepared_ahead: the text's length is known only once written).
tb::float_text_result write_float_data_prepared(const tb::strided_rows& source,
                                                tb::float_format format, const body_args& call,
                                                char* out, char* bound_end, std::size_t row_bound,
                                                char** end) {
    if (static_cast<std::size_t>(bound_end - out) < prepare_from_bytes()) {
        return tb::write_float_data(source, format, call.first_index, out, end, call.threads,
                                    *call.layout, call.leading_comma);
    }
    prepared_ahead memory(out, bound_end, source.rows);
    *end = out;
    for (std::size_t done = 0; done < source.rows;) {
        const std::size_t piece = memory.next_piece(done, *end, row_bound);
        // (entries written separately concatenate, after a comma, as a streamed body's do)
        tb::float_text_result result = tb::write_float_data(
            tb::slice_rows(source, done, piece), format, call.first_index + done, *end, end,
            call.threads, *call.layout, call.leading_comma || done != 0);
        if (!result.finite) {
            result.row += done;
            return result;
        }
        done += piece;
    }
    return {true, 0, 0};
}

// head + the data entries of float rows + tail, in one bytes object made at its bound and trimmed
// (the pages past the text are never touched, so they cost address space, not memory).
// A float body's parts: its rows, its size at the bound, and one row's entry bound.
struct float_body {
    input_array in;
    tb::strided_rows source;
    std::size_t size, per_row;
};

// Reads the rows of call.x into `body` and sizes it: false if the call goes to the fallback.
bool size_float_body(const body_args& call, tb::float_format format, float_body& body) {
    if (!read_input(call.x, body.in)) return false;
    if (body.in.ndim == 0) raise(PyExc_ValueError, "embeddings need at least one dimension");
    const tb::strided_rows& source = body.source = rows_of(body.in);
    const auto head_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.head));
    const auto tail_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.tail));
    std::size_t bound = 0;
    if (!tb::float_data_bound(1, source.row_length, source.format.type, format, 0, &body.per_row))
        body.per_row = SIZE_MAX;
    checked_total(source.rows, body.per_row, "response body");
    if (!tb::float_data_bound(source.rows, source.row_length, source.format.type, format,
                              call.first_index, &bound)) {
        bound = SIZE_MAX;
    }
    body.size = checked_total(1, checked_total(1, bound, "response body") + head_size + tail_size,
                              "response body");
    return true;
}

// Writes head + entries + tail into `out` (body.size bytes): the length written.
std::size_t write_float_body(const body_args& call, tb::float_format format, const float_body& body,
                             char* out) {
    const auto head_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.head));
    const auto tail_size = static_cast<std::size_t>(PyBytes_GET_SIZE(call.tail));
    const tb::strided_rows& source = body.source;
    std::memcpy(out, PyBytes_AS_STRING(call.head), head_size);
    char* end = nullptr;
    tb::float_text_result result;
    {
        gil_released_if released(source.rows * source.row_length >= release_gil_above_values);
        result = write_float_data_prepared(source, format, call, out + head_size, out + body.size,
                                           body.per_row, &end);
    }
    if (!result.finite) refuse_non_finite(result);
    std::memcpy(end, PyBytes_AS_STRING(call.tail), tail_size);
    return static_cast<std::size_t>(end + tail_size - out);
}

PyObject* response_body_float_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        const body_args call = parse_body_args("_response_body_float", args, nargs, 8);
        const tb::float_format format = float_format(args[1]);
        float_body parts;
        if (!size_float_body(call, format, parts))
            return call_fallback("_response_body_float", args, nargs, nullptr);
        PyObject* body = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(parts.size));
        if (body == nullptr) throw python_error{};
        ref owner(body);
        const std::size_t length = write_float_body(call, format, parts, PyBytes_AS_STRING(body));
        body = owner.release();
        if (_PyBytes_Resize(&body, static_cast<Py_ssize_t>(length)) != 0) throw python_error{};
        return body;
    });
}

// _response_body_float_into(out, <_response_body_float's arguments>, /): the same body written
// into the writable buffer `out`, which must hold its bound; the body's length. What the
// benchmarks time writing into memory already faulted in against.
PyObject* response_body_float_into_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs < 1) raise(PyExc_TypeError, "_response_body_float_into takes 9 arguments");
        const body_args call = parse_body_args("_response_body_float_into", args + 1, nargs - 1, 8);
        const tb::float_format format = float_format(args[2]);
        float_body parts;
        if (!size_float_body(call, format, parts))
            raise(PyExc_TypeError, "_response_body_float_into takes arrays the core reads");
        held_buffer out;
        if (!out.acquire(args[0], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) throw python_error{};
        if (static_cast<std::size_t>(out.view.len) < parts.size)
            raise(PyExc_ValueError, "out holds " + std::to_string(out.view.len) +
                                        " bytes, less than the body's bound, " +
                                        std::to_string(parts.size));
        return PyLong_FromSize_t(
            write_float_body(call, format, parts, static_cast<char*>(out.view.buf)));
    });
}

// _entry_bound(row_length, last_index, dtype, float_format, /): the most bytes the data entry of
// one row of row_length values, indexed up to last_index, takes with its separating comma: as
// base64 of `dtype`, or with dtype None as float text in float_format, bounded as doubles whatever
// the source (so that a streamed body's chunks do not depend on its rows' type). What a streamed
// body plans its chunks with.
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
        const tb::entry_format format =
            args[2] != Py_None ? tb::entry_format{true, output_dtype(args[2]),
                                                  tb::float_format::repr, tb::dtype::float32}
                               : tb::entry_format{false, tb::dtype::float32, float_format(args[3]),
                                                  tb::dtype::float64};
        std::size_t size = 0;
        if (!tb::data_entry_bound(row_length, last_index, format, &size))
            raise(PyExc_MemoryError, "a row's entry is too long to write");
        return PyLong_FromSize_t(size);
    });
}

// The UTF-8 text of a str or bytes value, viewed (valid while the object lives).
std::string_view json_text(PyObject* value, const char* what) {
    if (PyBytes_Check(value))
        return {PyBytes_AS_STRING(value), static_cast<std::size_t>(PyBytes_GET_SIZE(value))};
    if (PyUnicode_Check(value)) {
        Py_ssize_t length = 0;
        const char* text = PyUnicode_AsUTF8AndSize(value, &length);
        if (text == nullptr) throw python_error{};
        return {text, static_cast<std::size_t>(length)};
    }
    raise(PyExc_TypeError,
          std::string(what) + " must be JSON text (str or bytes), got " + Py_TYPE(value)->tp_name);
}

// _body_envelope(layout, members, /): (head, tail) of a body in `layout`, from its envelope's
// members, a sequence of (key, value) JSON texts (str or bytes) in order: one naming a field of
// the layout goes in its place, the others after the layout's last field.
PyObject* body_envelope_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 2) raise(PyExc_TypeError, "_body_envelope takes 2 arguments");
        const tb::response_layout& layout = response_layout(args[0]);
        ref members(PySequence_Fast(args[1], "the envelope's members must be a sequence"));
        if (!members) throw python_error{};
        const auto count = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(members.get()));
        // (no allocation for an envelope of a few members: the common call)
        tb::json_member few[8];
        std::vector<tb::json_member> many(count > 8 ? count : 0);
        tb::json_member* texts = count > 8 ? many.data() : few;
        for (std::size_t i = 0; i < count; ++i) {
            PyObject* pair = PySequence_Fast_GET_ITEM(members.get(), static_cast<Py_ssize_t>(i));
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
                raise(PyExc_TypeError, "each member must be a (key, value) tuple of JSON texts");
            texts[i] = {json_text(PyTuple_GET_ITEM(pair, 0), "a member's key"),
                        json_text(PyTuple_GET_ITEM(pair, 1), "a member's value")};
        }
        std::size_t head_size = 0, tail_size = 0;
        tb::body_envelope_sizes(layout, texts, count, &head_size, &tail_size);
        ref head(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(head_size)));
        ref tail(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(tail_size)));
        if (!head || !tail) throw python_error{};
        tb::write_body_envelope(layout, texts, count, PyBytes_AS_STRING(head.get()),
                                PyBytes_AS_STRING(tail.get()));
        PyObject* pair = PyTuple_New(2);
        if (pair == nullptr) throw python_error{};
        PyTuple_SET_ITEM(pair, 0, head.release());
        PyTuple_SET_ITEM(pair, 1, tail.release());
        return pair;
    });
}

// _response_layouts(): {name: (entry keys, envelope fields)} for every layout the core writes,
// in its order.
PyObject* response_layouts_entry(PyObject*, PyObject* const*, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 0) raise(PyExc_TypeError, "_response_layouts takes no arguments");
        static const char* const key_names[] = {"object", "index", "embedding"};
        ref layouts(PyDict_New());
        if (!layouts) throw python_error{};
        for (std::size_t i = 0; i < tb::response_layout_count; ++i) {
            const tb::response_layout& layout = tb::response_layouts[i];
            ref keys(PyTuple_New(tb::entry_key_count));
            ref fields(PyTuple_New(static_cast<Py_ssize_t>(layout.envelope_field_count)));
            if (!keys || !fields) throw python_error{};
            for (std::size_t k = 0; k < tb::entry_key_count; ++k) {
                PyObject* name =
                    PyUnicode_FromString(key_names[static_cast<int>(layout.entry_keys[k])]);
                if (name == nullptr) throw python_error{};
                PyTuple_SET_ITEM(keys.get(), static_cast<Py_ssize_t>(k), name);
            }
            for (std::size_t f = 0; f < layout.envelope_field_count; ++f) {
                const std::string_view field = layout.envelope_fields[f];
                PyObject* name = PyUnicode_FromStringAndSize(field.data(),
                                                             static_cast<Py_ssize_t>(field.size()));
                if (name == nullptr) throw python_error{};
                PyTuple_SET_ITEM(fields.get(), static_cast<Py_ssize_t>(f), name);
            }
            ref row(PyTuple_Pack(2, keys.get(), fields.get()));
            if (!row || PyDict_SetItemString(layouts.get(), layout.name, row.get()) != 0)
                throw python_error{};
        }
        return layouts.release();
    });
}

// _next_body_chunk(head_size, tail_size, rows, entry_bound, chunk_size, previous, /): the chunk
// of a streamed body after `previous` (None: the first), as (head_begin, head_end, row_begin,
// row_end, leading_comma, tail_begin, tail_end), or None after the last.
PyObject* next_body_chunk_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 6) raise(PyExc_TypeError, "_next_body_chunk takes 6 arguments");
        std::size_t sizes[5];
        for (int i = 0; i < 5; ++i) {
            sizes[i] = size_argument(args[i]);
        }
        const tb::body_chunk_rule rule{sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]};
        tb::body_chunk previous{}, next{};
        if (args[5] != Py_None) {
            Py_ssize_t at[6] = {};
            int leading_comma = 0;
            if (!PyArg_ParseTuple(args[5], "nnnnpnn;previous must be a chunk", &at[0], &at[1],
                                  &at[2], &at[3], &leading_comma, &at[4], &at[5]))
                throw python_error{};
            for (Py_ssize_t value : at)
                if (value < 0) raise(PyExc_ValueError, "previous must be a chunk");
            previous = {static_cast<std::size_t>(at[0]),
                        static_cast<std::size_t>(at[1]),
                        static_cast<std::size_t>(at[2]),
                        static_cast<std::size_t>(at[3]),
                        leading_comma != 0,
                        static_cast<std::size_t>(at[4]),
                        static_cast<std::size_t>(at[5])};
        }
        if (!tb::next_body_chunk(rule, args[5] == Py_None ? nullptr : &previous, &next))
            Py_RETURN_NONE;
        return Py_BuildValue(
            "(nnnnNnn)", static_cast<Py_ssize_t>(next.head_begin),
            static_cast<Py_ssize_t>(next.head_end), static_cast<Py_ssize_t>(next.row_begin),
            static_cast<Py_ssize_t>(next.row_end), PyBool_FromLong(next.leading_comma),
            static_cast<Py_ssize_t>(next.tail_begin), static_cast<Py_ssize_t>(next.tail_end));
    });
}

}  // namespace

PyMethodDef body_methods[] = {
    {"_response_body_base64", as_method(response_body_base64_entry), METH_FASTCALL,
     "_response_body_base64(embeddings, dtype, byteorder, head, tail, first_index, threads, "
     "layout, leading_comma, /)\n--\n\n"
     "head + the data entries of every row as base64 (after a comma, with leading_comma) + tail, "
     "in one bytes object."},
    {"_response_body_float", as_method(response_body_float_entry), METH_FASTCALL,
     "_response_body_float(embeddings, float_format, head, tail, first_index, threads, "
     "layout, leading_comma, /)\n--\n\n"
     "head + the data entries of every row as JSON number arrays (after a comma, with "
     "leading_comma) + tail, in one bytes object."},
    {"_response_body_float_into", as_method(response_body_float_into_entry), METH_FASTCALL,
     "_response_body_float_into(out, embeddings, float_format, head, tail, first_index, threads, "
     "layout, leading_comma, /)\n--\n\n"
     "_response_body_float's body written into the writable buffer out (at least its bound): "
     "its length."},
    {"_entry_bound", as_method(entry_bound_entry), METH_FASTCALL,
     "_entry_bound(row_length, last_index, dtype, float_format, /)\n--\n\n"
     "The most bytes one row's data entry and its comma take (dtype None: float text)."},
    {"_body_envelope", as_method(body_envelope_entry), METH_FASTCALL,
     "_body_envelope(layout, members, /)\n--\n\n"
     "(head, tail): the envelope of a body in `layout`, from its members' JSON texts."},
    {"_response_layouts", as_method(response_layouts_entry), METH_FASTCALL,
     "_response_layouts()\n--\n\n"
     "{name: (entry keys, envelope fields)} for every layout the core writes."},
    {"_next_body_chunk", as_method(next_body_chunk_entry), METH_FASTCALL,
     "_next_body_chunk(head_size, tail_size, rows, entry_bound, chunk_size, previous, /)\n--\n\n"
     "The chunk of a streamed body after `previous` (None: the first), or None after the last."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
