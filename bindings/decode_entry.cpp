// Decoding: strict base64 (or a binary body's raw bytes) into a caller's buffer. The Python layer
// (src/tensorb64/_codec/decode.py) sizes the output with _decoded_length, allocates it once, and
// _decode_into fills it; _decode_rows does all of that for a list of rows in one call (no Python
// per row). dtype and byteorder are names, resolved as every entry point resolves them.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arguments.hpp"

#include "entry_points.hpp"
#include "names.hpp"
#include "output_memory.hpp"
#include "python_api.hpp"

namespace binding {

namespace {

using namespace std::string_literals;

// The characters (or raw bytes) of a str or bytes-like argument, read in place.
struct input_text {
    const char* data = nullptr;
    std::size_t size = 0;
    held_buffer buffer;
};

// What was wrong with a text, without where (DecodeError.reason).
const char* reason_of(tb::decode_status status) {
    switch (status) {
        case tb::decode_status::ok: break;
        case tb::decode_status::bad_length: return "invalid base64: a length not a multiple of 4";
        case tb::decode_status::bad_character:
            return "invalid base64: a character not in the alphabet";
        case tb::decode_status::bad_padding: return "invalid base64: bad padding";
        case tb::decode_status::trailing_bits: return "invalid base64: non-zero bits past the data";
        case tb::decode_status::not_whole_values: return "not a whole number of values";
        case tb::decode_status::wrong_output_size: break;
    }
    return "unknown decode status";
}

// "row N: " where an error is a row's (decode_rows: `row` its place in the list), else nothing.
std::string in_row(std::size_t row) {
    return row == not_known ? std::string() : "row " + std::to_string(row) + ": ";
}

// A DecodeError for malformed text, its position the offset the core found (the length, where
// the length is wrong; none for a byte count), naming the row where there is one; ValueError for
// an output of the wrong size, which is no fault of the text.
[[noreturn]] void refuse(const tb::decode_result& result, std::size_t row = not_known) {
    if (result.status == tb::decode_status::wrong_output_size)
        raise(PyExc_ValueError, tb::to_string(result));
    const std::size_t pos =
        result.status == tb::decode_status::not_whole_values ? not_known : result.offset;
    raise_decode_error(in_row(row) + tb::to_string(result), reason_of(result.status), pos, row);
}

// A str that is not ASCII cannot be base64: its first bad character is reported, named as the
// code point.
[[noreturn]] void refuse_non_ascii(PyObject* text, tb::dtype stored, std::size_t row) {
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
    const tb::decode_result r = tb::check_base64(marked.data(), marked.size(), stored);
    const auto at = static_cast<Py_ssize_t>(r.offset);
    if (r.status == tb::decode_status::bad_character && r.character == 0x80) {
        char code[16];
        std::snprintf(code, sizeof code, "U+%04X",
                      static_cast<unsigned>(PyUnicode_READ(kind, data, at)));
        ref character(checked(PyUnicode_Substring(text, at, at + 1)));
        raise_decode_error(in_row(row) + "invalid base64: non-ASCII character " +
                               repr_of(character.get()) + " (" + code + ") at offset " +
                               std::to_string(r.offset) +
                               " (the alphabet is A-Z, a-z, 0-9, '+' and '/', with '=' padding)",
                           reason_of(r.status), r.offset, row);
    }
    refuse(r, row);
}

// The text of `o` (a str, or anything with a buffer), read in place; `row`: the row it is, for
// the error where it is not ASCII.
void read_text(PyObject* o, tb::dtype stored, bool base64, input_text* text,
               std::size_t row = not_known) {
    if (PyUnicode_Check(o)) {
        if (!base64) raise(PyExc_TypeError, "expected bytes, got str");
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(o) != 0) throw python_error{};  // a legacy str, before 3.12
#endif
        if (!PyUnicode_IS_ASCII(o)) refuse_non_ascii(o, stored, row);
        text->data = static_cast<const char*>(PyUnicode_DATA(o));  // ASCII: one byte per character
        text->size = static_cast<std::size_t>(PyUnicode_GET_LENGTH(o));
        return;
    }
    if (!text->buffer.acquire(o, PyBUF_SIMPLE)) {
        if (PyObject_CheckBuffer(o)) throw python_error{};  // e.g. not contiguous: say so
        PyErr_Clear();
        raise(PyExc_TypeError, (base64 ? "expected a base64 str or bytes"s : "expected bytes"s) +
                                   ", got " + Py_TYPE(o)->tp_name);
    }
    text->data = static_cast<const char*>(text->buffer.view.buf);
    text->size = static_cast<std::size_t>(text->buffer.view.len);
}

bool truth(PyObject* value) {
    const int truth = PyObject_IsTrue(value);
    if (truth < 0) throw python_error{};
    return truth != 0;
}

void check_arguments(const char* function, Py_ssize_t nargs, Py_ssize_t least, Py_ssize_t most) {
    if (nargs < least || nargs > most) {
        raise(PyExc_TypeError, function + " takes "s + std::to_string(least) + " to " +
                                   std::to_string(most) + " arguments, got " +
                                   std::to_string(nargs));
    }
}

// _decoded_length(data, dtype, base64=True, /)
PyObject* decoded_length_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        check_arguments("_decoded_length", nargs, 2, 3);
        const tb::dtype stored = output_dtype(args[1]);
        const bool base64 = nargs < 3 || truth(args[2]);
        input_text text;
        read_text(args[0], stored, base64, &text);
        std::size_t elements = 0;
        if (base64) {
            const tb::decode_result r =
                tb::decoded_elements(text.data, text.size, stored, &elements);
            if (r.status != tb::decode_status::ok) refuse(r);
        } else {
            const std::size_t size = tb::dtype_size(stored);
            if (text.size % size != 0) {
                tb::decode_result r;
                r.status = tb::decode_status::not_whole_values;
                r.offset = text.size;
                r.stored = stored;
                refuse(r);
            }
            elements = text.size / size;
        }
        return PyLong_FromSize_t(elements);
    });
}

// The parts `threads` threads decode one text in: runs of whole groups of whole values (4 * size
// characters of base64 hold 3 values; raw bytes, one), the last part taking the rest and its
// padding. Only for a text whose size and output already check out.
std::vector<tb::decode_task> text_parts(const input_text& text, tb::element_format stored,
                                        bool widen, bool base64, void* out, unsigned threads,
                                        std::size_t elements) {
    const std::size_t size = tb::dtype_size(stored.type);
    const std::size_t unit_chars = base64 ? 4 * size : size;
    const std::size_t unit_values = base64 ? 3 : 1;
    const std::size_t value_bytes = widen ? 4 : size;
    const std::size_t units = text.size / unit_chars;
    const std::size_t per_part = (units + threads - 1) / threads;
    std::vector<tb::decode_task> parts;
    std::size_t at = 0;
    std::size_t values = 0;
    while (at < text.size) {
        std::size_t chars = per_part * unit_chars;
        if (chars == 0 || text.size - at <= chars) chars = text.size - at;
        const std::size_t part_values =
            at + chars == text.size ? elements - values : chars / unit_chars * unit_values;
        parts.push_back({text.data + at, chars, stored,
                         static_cast<unsigned char*>(out) + values * value_bytes,
                         part_values * value_bytes});
        at += chars;
        values += part_values;
    }
    return parts;
}

// _decode_into(data, out, dtype, byteorder, widen, base64=True, threads=1, /)
PyObject* decode_into_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        check_arguments("_decode_into", nargs, 5, 7);
        const tb::element_format stored{output_dtype(args[2]), byte_order(args[3])};
        const bool widen = truth(args[4]);
        const bool base64 = nargs < 6 || truth(args[5]);
        const unsigned threads = nargs < 7 ? 1 : thread_count(args[6]);
        input_text text;
        read_text(args[0], stored.type, base64, &text);
        held_buffer output;
        if (!output.acquire(args[1], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) throw python_error{};
        const auto out_bytes = static_cast<std::size_t>(output.view.len);
        tb::decode_result result;
        {
            gil_released_if released(text.size >= release_gil_above_bytes);
            prepare_for_writing(output.view.buf, out_bytes);
            const std::size_t size = tb::dtype_size(stored.type);
            std::size_t elements = 0;
            bool sized = false;
            if (base64) {
                sized = tb::decoded_elements(text.data, text.size, stored.type, &elements).status ==
                        tb::decode_status::ok;
            } else if (text.size % size == 0) {
                sized = true;
                elements = text.size / size;
            }
            bool done = false;
            if (threads > 1 && sized && out_bytes == elements * (widen ? 4 : size)) {
                // Split; where a part fails, the whole text alone below names the first error
                // as the one-thread decoder names it.
                const std::vector<tb::decode_task> parts =
                    text_parts(text, stored, widen, base64, output.view.buf, threads, elements);
                done = tb::decode_each(parts.data(), parts.size(), base64, widen, threads) ==
                       parts.size();
            }
            if (!done) {
                result = base64 ? tb::decode_base64(text.data, text.size, stored, widen,
                                                    output.view.buf, out_bytes)
                                : tb::convert_elements(text.data, text.size, stored, widen,
                                                       output.view.buf, out_bytes);
            }
        }
        if (result.status != tb::decode_status::ok) refuse(result);
        Py_RETURN_NONE;
    });
}

// _decode_each(items, widen, base64, threads, /): items a list of (data, out, dtype, byteorder)
// tuples, each decoded into its out as _decode_into does, `threads` splitting them. The index of
// the first item that failed (to be run alone through _decode_into for its error), or None.
PyObject* decode_each_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&]() -> PyObject* {
        check_arguments("_decode_each", nargs, 4, 4);
        if (!PyList_Check(args[0])) raise(PyExc_TypeError, "_decode_each takes a list of items");
        const bool widen = truth(args[1]);
        const bool base64 = truth(args[2]);
        const unsigned threads = thread_count(args[3]);
        const auto count = static_cast<std::size_t>(PyList_GET_SIZE(args[0]));
        // The list is read (and every buffer held) before the GIL goes: items cannot change.
        ref items(PySequence_Tuple(args[0]));
        if (!items) throw python_error{};
        std::unique_ptr<input_text[]> texts(new input_text[count]);
        std::unique_ptr<held_buffer[]> outputs(new held_buffer[count]);
        std::vector<tb::decode_task> tasks(count);
        std::size_t total = 0;
        for (std::size_t i = 0; i < count; ++i) {
            PyObject* item = PyTuple_GET_ITEM(items.get(), static_cast<Py_ssize_t>(i));
            if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4)
                raise(PyExc_TypeError, "each item is a (data, out, dtype, byteorder) tuple");
            const tb::element_format stored{output_dtype(PyTuple_GET_ITEM(item, 2)),
                                            byte_order(PyTuple_GET_ITEM(item, 3))};
            read_text(PyTuple_GET_ITEM(item, 0), stored.type, base64, &texts[i]);
            if (!outputs[i].acquire(PyTuple_GET_ITEM(item, 1), PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS))
                throw python_error{};
            tasks[i] = {texts[i].data, texts[i].size, stored, outputs[i].view.buf,
                        static_cast<std::size_t>(outputs[i].view.len)};
            total += texts[i].size;
        }
        std::size_t failed = count;
        {
            gil_released_if released(total >= release_gil_above_bytes);
            prepare_blocks(count, [&](std::size_t i) {
                return std::pair{static_cast<char*>(tasks[i].out), tasks[i].out_bytes};
            });
            failed = tb::decode_each(tasks.data(), count, base64, widen, threads);
        }
        if (failed == count) Py_RETURN_NONE;
        return PyLong_FromSize_t(failed);
    });
}

// type(o).__name__, as Python's own messages name a type.
std::string type_name(PyObject* o) {
    ref name(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__name__"));
    const char* text = name ? PyUnicode_AsUTF8(name.get()) : nullptr;
    if (text == nullptr) {
        PyErr_Clear();
        return Py_TYPE(o)->tp_name;
    }
    return text;
}

// _decode_rows(texts, dtype, byteorder, widen, threads, allocate, /): texts, any iterable of base64
// str or bytes-like rows, decoded into one array of a row each, allocate(rows, row_length) making
// it (a writable C-contiguous buffer of exactly those values). In order: each row's type and
// length checked (the first wrong one refused, named by its place); the rows' lengths compared
// with the first's; then every row decoded straight into its row of the result, `threads`
// splitting them, and the first that fails named with the offset in its string.
PyObject* decode_rows_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&]() -> PyObject* {
        check_arguments("_decode_rows", nargs, 6, 6);
        const tb::element_format stored{output_dtype(args[1]), byte_order(args[2])};
        const bool widen = truth(args[3]);
        const unsigned threads = thread_count(args[4]);
        // The rows, held in a tuple for the call: another thread changing the caller's list
        // changes nothing here.
        ref rows(checked(PySequence_Tuple(args[0])));
        const auto count = static_cast<std::size_t>(PyTuple_GET_SIZE(rows.get()));
        std::unique_ptr<input_text[]> texts(new input_text[count]);
        std::size_t row_length = 0;
        std::size_t unequal_row = count, unequal_length = 0;
        std::size_t total = 0;
        for (std::size_t i = 0; i < count; ++i) {
            PyObject* o = PyTuple_GET_ITEM(rows.get(), static_cast<Py_ssize_t>(i));
            if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !PyByteArray_Check(o) &&
                !PyMemoryView_Check(o)) {
                raise(PyExc_TypeError,
                      in_row(i) + "expected a base64 str or bytes, got " + type_name(o));
            }
            read_text(o, stored.type, true, &texts[i], i);
            std::size_t elements = 0;
            const tb::decode_result r =
                tb::decoded_elements(texts[i].data, texts[i].size, stored.type, &elements);
            if (r.status != tb::decode_status::ok) refuse(r, i);
            if (i == 0) row_length = elements;
            if (elements != row_length && unequal_row == count) {
                unequal_row = i;
                unequal_length = elements;
            }
            total += texts[i].size;
        }
        if (unequal_row != count) {
            raise(PyExc_ValueError, "rows of unequal length cannot form a 2-D array: row 0 has " +
                                        std::to_string(row_length) + " values, row " +
                                        std::to_string(unequal_row) + " has " +
                                        std::to_string(unequal_length));
        }
        ref result(checked(PyObject_CallFunction(args[5], "nn", static_cast<Py_ssize_t>(count),
                                                 static_cast<Py_ssize_t>(row_length))));
        held_buffer output;
        if (!output.acquire(result.get(), PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS))
            throw python_error{};
        const std::size_t row_bytes = row_length * (widen ? 4 : tb::dtype_size(stored.type));
        if (static_cast<std::size_t>(output.view.len) != count * row_bytes) {
            raise(PyExc_ValueError, "the result's buffer holds " + std::to_string(output.view.len) +
                                        " bytes, not the " + std::to_string(count * row_bytes) +
                                        " of its rows");
        }
        std::vector<tb::decode_task> tasks(count);
        for (std::size_t i = 0; i < count; ++i) {
            tasks[i] = {texts[i].data, texts[i].size, stored,
                        static_cast<unsigned char*>(output.view.buf) + i * row_bytes, row_bytes};
        }
        std::size_t failed = count;
        {
            gil_released_if released(total >= release_gil_above_bytes);
            prepare_for_writing(output.view.buf, count * row_bytes);
            failed = tb::decode_each(tasks.data(), count, true, widen, threads);
        }
        if (failed != count) {  // that row alone again, for its first error
            const tb::decode_task& t = tasks[failed];
            refuse(tb::decode_base64(t.text, t.length, t.stored, widen, t.out, t.out_bytes),
                   failed);
        }
        return result.release();
    });
}

}  // namespace

PyMethodDef decode_methods[] = {
    {"_decoded_length", as_method(decoded_length_entry), METH_FASTCALL,
     "_decoded_length(data, dtype, base64=True, /)\n--\n\n"
     "The number of elements of dtype (an output dtype name) that data holds: strict base64 text "
     "(str or bytes), judged by its length and padding, or with base64=False raw stored bytes. "
     "tensorb64.DecodeError naming what is wrong, and where."},
    {"_decode_into", as_method(decode_into_entry), METH_FASTCALL,
     "_decode_into(data, out, dtype, byteorder, widen, base64=True, threads=1, /)\n--\n\n"
     "Decodes data (strict base64, or with base64=False raw stored bytes) into the writable "
     "C-contiguous buffer out, which must hold exactly its values: the stored elements in host "
     "byte order, or with widen their float32 values, `threads` splitting the text. "
     "tensorb64.DecodeError naming what is wrong in data; ValueError for an out of the wrong "
     "size."},
    {"_decode_each", as_method(decode_each_entry), METH_FASTCALL,
     "_decode_each(items, widen, base64, threads, /)\n--\n\n"
     "Decodes each (data, out, dtype, byteorder) of the list items as _decode_into does, "
     "`threads` splitting them: None, or the index of the first item that failed (run it alone "
     "through _decode_into for its error)."},
    {"_decode_rows", as_method(decode_rows_entry), METH_FASTCALL,
     "_decode_rows(texts, dtype, byteorder, widen, threads, allocate, /)\n--\n\n"
     "Decodes every base64 str or bytes of the iterable texts (rows of one length) into the array "
     "allocate(rows, row_length) returns (a writable C-contiguous buffer of exactly those values: "
     "the stored elements in host byte order, or with widen their float32 values), `threads` "
     "splitting the rows. tensorb64.DecodeError (TypeError for a row neither str nor bytes-like) "
     "naming the first row at fault and the offset in its string; ValueError for rows of unequal "
     "length."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
