// The entry points that write float text: json_rows, _float_lists (Dynamo's .tolist()) and
// _finite_float_lists (embedding_data's floats), and _check_finite (the error a float body raises
// for NaN and infinity, asked before a streamed body's first chunk).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "arguments.hpp"
#include "entry_points.hpp"
#include "float_text.hpp"
#include "output_memory.hpp"
#include "reader.hpp"
#include "sizes.hpp"
#include "tensorb64/body_reader.hpp"

namespace binding {

void refuse_non_finite(const tb::float_text_result& result, std::size_t first_row) {
    raise(PyExc_ValueError,
          "row " + std::to_string(first_row + result.row) + ", column " +
              std::to_string(result.column) +
              " is NaN or infinite: NaN and infinity have no JSON text (json.dumps with "
              "allow_nan=False refuses them too); use encoding_format='base64' for such values");
}

namespace {

// _check_finite(x, first_row=0, /): the error names the row as first_row + its row in x (a
// chunk of a larger input names the row of the whole).
PyObject* check_finite_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs < 1 || nargs > 2) raise(PyExc_TypeError, "_check_finite takes 1 or 2 arguments");
        std::size_t first_row = 0;
        if (nargs == 2) {
            first_row = PyLong_AsSize_t(args[1]);
            if (first_row == static_cast<std::size_t>(-1) && PyErr_Occurred()) throw python_error{};
        }
        input_array in;
        if (!read_input(args[0], in)) return call_fallback("_check_finite", args, nargs, nullptr);
        const tb::float_text_result result = tb::find_non_finite(rows_of(in));
        if (!result.finite) refuse_non_finite(result, first_row);
        Py_RETURN_NONE;
    });
}

// The core's write_float_rows into rows made at their bound (`bound` bytes each): for a large
// output, the first rows written alone, and every later row's pages prepared as far as their text
// predicts (each row is a block of its own, with room past its text that must stay untouched).
tb::float_text_result write_float_rows_prepared(const tb::strided_rows& source,
                                                tb::float_format format, char* const* outputs,
                                                std::size_t* lengths, std::size_t bound,
                                                unsigned threads) {
    // (a row's text shorter than a few pages has no page but the one its header is on to gain)
    constexpr std::size_t least_row_prepared = 16 * 1024;
    if (source.rows < 2 || bound < least_row_prepared || source.rows * bound < prepare_from_bytes())
        return tb::write_float_rows(source, format, outputs, lengths, threads);
    const std::size_t first =
        std::clamp<std::size_t>(prepared_ahead::first_piece_bytes / bound, 1, source.rows - 1);
    tb::float_text_result result =
        tb::write_float_rows(tb::slice_rows(source, 0, first), format, outputs, lengths, threads);
    if (!result.finite) return result;
    std::size_t written = 0;
    for (std::size_t r = 0; r < first; ++r) written += lengths[r];
    const std::size_t predicted =
        std::min(bound, static_cast<std::size_t>(static_cast<double>(written / first) *
                                                 prepared_ahead::predicted_share));
    if (predicted >= least_row_prepared) {
        prepare_each(source.rows - first, [&](std::size_t r) {
            return std::pair{outputs[first + r], predicted};
        });
    }
    result = tb::write_float_rows(tb::slice_rows(source, first, source.rows - first), format,
                                  outputs + first, lengths + first, threads);
    result.row += first;
    return result;
}

// Each row's JSON text as one bytes object (made at its bound, then trimmed).
PyObject* json_rows_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        const call_args call =
            parse_call("json_rows", args, nargs, kwnames, true, options::float_text);
        const tb::float_format format = float_format(call.float_format);
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in)) return call_fallback("json_rows", args, nargs, kwnames);
        if (in.ndim == 0)
            raise(PyExc_ValueError, "json_rows needs an input with at least one dimension");
        const tb::strided_rows source = rows_of(in);
        std::size_t bound = 0;
        if (!tb::float_row_bound(source.row_length, source.format.type, format, &bound))
            bound = SIZE_MAX;
        checked_total(source.rows, bound, "float text");
        ref list(PyList_New(static_cast<Py_ssize_t>(source.rows)));
        if (!list) throw python_error{};
        std::vector<char*> outputs(source.rows);
        std::vector<std::size_t> lengths(source.rows);
        for (std::size_t r = 0; r < source.rows; ++r) {
            PyObject* text = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(bound));
            if (text == nullptr) throw python_error{};
            PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(r), text);
            outputs[r] = PyBytes_AS_STRING(text);
        }
        tb::float_text_result result;
        {
            gil_released_if released(source.rows * source.row_length >= release_gil_above_values);
            result = write_float_rows_prepared(source, format, outputs.data(), lengths.data(),
                                               bound, threads);
        }
        if (!result.finite) refuse_non_finite(result);
        for (std::size_t r = 0; r < source.rows; ++r) {
            PyObject* text = PyList_GET_ITEM(list.get(), static_cast<Py_ssize_t>(r));
            // The list holds the only reference: the bytes may be resized (and moved) in place.
            PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(r), nullptr);
            if (_PyBytes_Resize(&text, static_cast<Py_ssize_t>(lengths[r])) != 0)
                throw python_error{};
            PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(r), text);
        }
        return list.release();
    });
}

// Each row's values, converted to float32 as every encoder converts them, as a list of Python
// floats: in 'repr' mode the float32 values themselves (what .tolist() gives); in the other modes
// the doubles their float text reads back to (so that repr of each is that text). `finite`: NaN
// and infinity (a float64 value past float32's range included, once converted) refused in 'repr'
// mode too, as the other modes refuse them (they have no text).
PyObject* float_lists(const char* function, bool finite, PyObject* const* args, Py_ssize_t nargs,
                      PyObject* kwnames) {
    return guarded([&] {
        const call_args call =
            parse_call(function, args, nargs, kwnames, true, options::float_text);
        const tb::float_format format = float_format(call.float_format);
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in)) return call_fallback(function, args, nargs, kwnames);
        if (in.ndim == 0)
            raise(PyExc_ValueError,
                  std::string(function) + " needs an input with at least one dimension");
        const tb::strided_rows source = rows_of(in);
        const tb::element_format float32{tb::dtype::float32, tb::host_byte_order};
        check_convertible(source, float32);
        const std::size_t count = checked_total(source.rows, source.row_length, "float values");
        std::vector<float> values(count);
        std::vector<char*> value_rows(source.rows);
        for (std::size_t r = 0; r < source.rows; ++r)
            value_rows[r] = reinterpret_cast<char*>(values.data() + r * source.row_length);
        tb::strided_rows converted{};
        converted.data = values.data();
        converted.rows = source.rows;
        converted.row_length = source.row_length;
        converted.row_stride = static_cast<std::ptrdiff_t>(source.row_length * sizeof(float));
        converted.element_stride = sizeof(float);
        converted.format = float32;
        const bool from_text = format != tb::float_format::repr;
        std::size_t bound = 0;
        std::vector<char> text;
        std::vector<char*> text_rows;
        std::vector<std::size_t> lengths;
        if (from_text) {
            if (!tb::float_row_bound(source.row_length, tb::dtype::float32, format, &bound))
                bound = SIZE_MAX;
            text.resize(checked_total(source.rows, bound, "float text"));
            text_rows.resize(source.rows);
            lengths.resize(source.rows);
            for (std::size_t r = 0; r < source.rows; ++r) text_rows[r] = text.data() + r * bound;
        }
        tb::float_text_result result;
        std::vector<double> read_back(from_text ? count : 0);
        bool read_back_whole = true;
        {
            gil_released_if released(count >= release_gil_above_values);
            tb::encode_rows(source, float32, value_rows.data(), threads, tb::row_output::bytes);
            // "repr": the float32 values themselves, NaN and infinity included unless `finite`
            // (what .tolist() gives: a server serialising with orjson writes null for them,
            // json.dumps refuses them); the other formats read floats back from text, which these
            // values lack, as json.loads (and so float()) reads that text.
            if (from_text) {
                result = tb::write_float_rows(converted, format, text_rows.data(), lengths.data(),
                                              threads);
            } else {
                result =
                    finite ? tb::find_non_finite(converted) : tb::float_text_result{true, 0, 0};
            }
            for (std::size_t r = 0; from_text && result.finite && r < source.rows; ++r)
                read_back_whole =
                    tb::read_float_row_double(text_rows[r], lengths[r],
                                              read_back.data() + r * source.row_length,
                                              source.row_length) &&
                    read_back_whole;
        }
        if (!result.finite) refuse_non_finite(result);
        if (!read_back_whole)  // (the core's own text: never, unless the writer and reader
                               // disagree)
            raise(PyExc_SystemError,
                  std::string(function) + ": the float text written did not read back");
        ref list(PyList_New(static_cast<Py_ssize_t>(source.rows)));
        if (!list) throw python_error{};
        for (std::size_t r = 0; r < source.rows; ++r) {
            PyObject* row = PyList_New(static_cast<Py_ssize_t>(source.row_length));
            if (row == nullptr) throw python_error{};
            PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(r), row);
            for (std::size_t i = 0; i < source.row_length; ++i) {
                const std::size_t at = r * source.row_length + i;
                PyObject* item = PyFloat_FromDouble(from_text ? read_back[at] : values[at]);
                if (item == nullptr) throw python_error{};
                PyList_SET_ITEM(row, static_cast<Py_ssize_t>(i), item);
            }
        }
        return list.release();
    });
}

PyObject* float_lists_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return float_lists("_float_lists", false, args, nargs, kwnames);
}

PyObject* finite_float_lists_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs,
                                   PyObject* kwnames) {
    return float_lists("_finite_float_lists", true, args, nargs, kwnames);
}

}  // namespace

PyMethodDef float_text_methods[] = {
    {"_float_lists", as_method(float_lists_entry), METH_FASTCALL | METH_KEYWORDS,
     "_float_lists(embeddings, /, *, float_format='repr', threads=1)\n--\n\n"
     "Each row's values (converted to float32 as the encoders convert them) as a list of Python "
     "floats: the float32 values in 'repr' mode (NaN and infinity included); in the others, the "
     "floats that the row's float text (as json_rows writes it) reads back to, and a ValueError "
     "naming the row and column of a NaN or infinity, which have no text."},
    {"_finite_float_lists", as_method(finite_float_lists_entry), METH_FASTCALL | METH_KEYWORDS,
     "_finite_float_lists(embeddings, /, *, float_format='repr', threads=1)\n--\n\n"
     "_float_lists, with a NaN or infinity (after the conversion to float32) a ValueError naming "
     "its row and column in every mode, 'repr' included: the floats json.dumps(allow_nan=False) "
     "writes (embedding_data's)."},
    {"json_rows", as_method(json_rows_entry), METH_FASTCALL | METH_KEYWORDS,
     "json_rows(embeddings, /, *, float_format='repr', threads=1)\n--\n\n"
     "Each row's JSON array text, as bytes: exactly json.dumps(row.tolist(), separators=(',', "
     "':')) in 'repr' mode; the fewest digits that read back to the same float32 in 'shortest' "
     "mode; orjson.dumps's text of the row as a float32 array in 'orjson' mode."},
    {"_check_finite", as_method(check_finite_entry), METH_FASTCALL,
     "_check_finite(embeddings, first_row=0, /)\n--\n\nThe ValueError naming the row (from "
     "first_row) and "
     "column of x's first NaN or infinity, if any."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
