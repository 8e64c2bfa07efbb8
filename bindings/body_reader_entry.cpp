// Reading a whole /v1/embeddings response body (the core's tensorb64/body_reader.hpp) into one
// array, allocated by a Python callable once the rows' shape is known
// (src/tensorb64/_codec/body_reader.py passes one that makes the numpy array, or checks the
// caller's `out`).
//
// The GIL is released for the read of a large body and taken back only for the call of the
// allocator. The body is held through the buffer protocol (a bytearray cannot be resized while it
// is read) or is a str's UTF-8 form (cached by the str itself).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "entry_points.hpp"
#include "names.hpp"
#include "output_memory.hpp"
#include "python_api.hpp"
#include "tensorb64/body_reader.hpp"

namespace binding {

namespace {

// The body's bytes, and what keeps them alive.
struct body_bytes {
    held_buffer buffer;
    const char* data = nullptr;
    std::size_t size = 0;
    bool is_str = false;

    void read(PyObject* body) {
        if (PyUnicode_Check(body)) {
            Py_ssize_t length = 0;
            data = PyUnicode_AsUTF8AndSize(body, &length);  // a lone surrogate: UnicodeEncodeError
            if (data == nullptr) throw python_error{};
            size = static_cast<std::size_t>(length);
            is_str = true;
            return;
        }
        if (!PyObject_CheckBuffer(body)) {
            raise(PyExc_TypeError,
                  std::string("body must be bytes, bytearray, a memoryview of bytes or str, got ") +
                      Py_TYPE(body)->tp_name);
        }
        if (!buffer.acquire(body, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
            throw python_error{};  // e.g. not contiguous: the buffer protocol says so
        }
        if (buffer.view.itemsize != 1) {
            raise(PyExc_TypeError, "body must be a buffer of bytes, got items of " +
                                       std::to_string(buffer.view.itemsize) + " bytes");
        }
        data = static_cast<const char*>(buffer.view.buf);
        size = static_cast<std::size_t>(buffer.view.len);
    }
};

// The allocator's side of a read: the Python callable, the released GIL to take back around it,
// and what it returned, with its buffer.
struct result_allocation {
    PyObject* allocate = nullptr;
    gil_released_if* released = nullptr;
    ref result;
    held_buffer buffer;
};

// Calls allocate(rows, row_length, float_rows) with the GIL held for the core's body_allocator and
// hands it the memory of what it returns, which must be a writable, aligned, C-contiguous
// buffer of exactly the result's size (else an error is set, and the read stops).
void* allocated_result(result_allocation* a, const tb::body_layout& layout) {
    gil_released_if::retaken holding(*a->released);
    // A second call (see body_allocator): the first result is not used, and is let go before the
    // second is made, so that no more than one result is held at a time.
    a->buffer.release();
    a->result = ref();
    a->result = ref(
        PyObject_CallFunction(a->allocate, "nnO", static_cast<Py_ssize_t>(layout.rows),
                              static_cast<Py_ssize_t>(layout.row_length),
                              layout.encoding == tb::row_encoding::floats ? Py_True : Py_False));
    if (!a->result || !a->buffer.acquire(a->result.get(), PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) {
        return nullptr;
    }
    const Py_buffer& view = a->buffer.view;
    const std::size_t bytes = layout.rows * layout.row_length * layout.element_size;
    if (static_cast<std::size_t>(view.len) != bytes) {
        PyErr_Format(PyExc_ValueError,
                     "the result's buffer holds %zd bytes, not the %zu of %zu rows of %zu values",
                     view.len, bytes, layout.rows, layout.row_length);
        return nullptr;
    }
    if (reinterpret_cast<std::uintptr_t>(view.buf) % layout.element_size != 0) {
        PyErr_SetString(PyExc_ValueError, "the result's buffer is not aligned for its elements");
        return nullptr;
    }
    return bytes != 0 ? view.buf : static_cast<void*>(a);  // non-null: "go on"
}

// The core's body_allocator: the result allocated (allocated_result, the GIL held), then its pages
// prepared for the reader's writes.
void* allocate_result(void* context, const tb::body_layout& layout) {
    auto* a = static_cast<result_allocation*>(context);
    void* memory = allocated_result(a, layout);
    if (memory != nullptr && memory != a)  // (the GIL released again, as the core reads on)
        prepare_for_writing(memory, static_cast<std::size_t>(a->buffer.view.len));
    return memory;
}

// What was wrong with a body, without where (DecodeError.reason).
std::string reason_of(const tb::body_error& e) {
    const char* what = "unknown body status";
    switch (e.status) {
        case tb::body_status::ok:
        case tb::body_status::no_output: break;
        case tb::body_status::malformed_json: what = "malformed JSON"; break;
        case tb::body_status::bad_structure: what = "not an embeddings response"; break;
        case tb::body_status::bad_index: what = "bad index"; break;
        case tb::body_status::unequal_rows: what = "rows of different lengths"; break;
        case tb::body_status::mixed_formats: what = "a mix of row formats"; break;
        case tb::body_status::bad_base64: what = "bad base64 embedding"; break;
        case tb::body_status::bad_number: what = "bad number row"; break;
    }
    return e.expected != nullptr ? what + std::string(": expected ") + e.expected : what;
}

PyObject* span_bytes(const body_bytes& body, const tb::byte_span& span) {
    if (!span.present) Py_RETURN_NONE;
    return checked(
        PyBytes_FromStringAndSize(body.data + span.offset, static_cast<Py_ssize_t>(span.length)));
}

// Each row's embedding text as (offset, end) byte offsets into the body: a bytes object of
// 2 * rows native int64s.
PyObject* span_offsets(const std::vector<tb::byte_span>& spans) {
    ref out(checked(PyBytes_FromStringAndSize(
        nullptr, static_cast<Py_ssize_t>(spans.size() * 2 * sizeof(std::int64_t)))));
    auto* offsets = reinterpret_cast<std::int64_t*>(PyBytes_AS_STRING(out.get()));
    for (const tb::byte_span& span : spans) {
        *offsets++ = static_cast<std::int64_t>(span.offset);
        *offsets++ = static_cast<std::int64_t>(span.offset + span.length);
    }
    return out.release();
}

bool truth(PyObject* value) {
    const int t = PyObject_IsTrue(value);
    if (t < 0) throw python_error{};
    return t != 0;
}

// sys.get_int_max_str_digits() now (the program may change it at any time): 0 for no limit, and
// on a CPython without it.
std::size_t int_max_str_digits() {
    PyObject* get = PySys_GetObject("get_int_max_str_digits");  // borrowed
    if (get == nullptr) return 0;
    ref limit(checked(PyObject_CallNoArgs(get)));
    const std::size_t digits = PyLong_AsSize_t(limit.get());
    if (digits == static_cast<std::size_t>(-1) && PyErr_Occurred()) throw python_error{};
    return digits;
}

// _decode_response_body(body, dtype, byteorder, widen, threads, allocate
//                       [, float_rows_as_double, embedding_offsets], /)
//   -> (result, model_json, usage_json[, offsets])
PyObject* decode_response_body_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 6 && nargs != 8) {
            raise(PyExc_TypeError,
                  "_decode_response_body takes (body, dtype, byteorder, widen, threads, allocate"
                  "[, float_rows_as_double, embedding_offsets]), got " +
                      std::to_string(nargs) + " arguments");
        }
        tb::body_options options;
        options.stored = {output_dtype(args[1]), byte_order(args[2])};
        const int widen = PyObject_IsTrue(args[3]);
        if (widen < 0) throw python_error{};
        options.widen = widen != 0;
        options.threads = thread_count(args[4]);
        const bool want_offsets = nargs == 8 && truth(args[7]);
        if (nargs == 8) options.float_rows_as_double = truth(args[6]);
        std::vector<tb::byte_span> embeddings;
        options.max_integer_digits = int_max_str_digits();
        body_bytes body;
        body.read(args[0]);
        options.allow_bom = !body.is_str;  // json.loads skips a BOM in bytes, refuses one in a str

        result_allocation allocation;
        allocation.allocate = args[5];
        tb::body_layout layout;
        tb::body_error error;
        {
            gil_released_if released(body.size >= release_gil_above_bytes);
            allocation.released = &released;
            throw_if_failure_injected();
            error = tb::read_embeddings_body(body.data, body.size, options, allocate_result,
                                             &allocation, &layout,
                                             want_offsets ? &embeddings : nullptr);
        }
        if (error.status == tb::body_status::no_output) {
            if (PyErr_Occurred()) throw python_error{};  // the allocator's error
            throw std::bad_alloc();                      // the index check's memory
        }
        if (error.status != tb::body_status::ok) {
            const std::size_t row =
                error.entry != tb::body_error::no_entry ? error.entry : not_known;
            raise_decode_error(tb::to_string(error), reason_of(error), error.offset, row);
        }
        ref model(span_bytes(body, layout.model));
        ref usage(span_bytes(body, layout.usage));
        if (want_offsets) {
            ref offsets(span_offsets(embeddings));
            return checked(
                PyTuple_Pack(4, allocation.result.get(), model.get(), usage.get(), offsets.get()));
        }
        return checked(PyTuple_Pack(3, allocation.result.get(), model.get(), usage.get()));
    });
}

}  // namespace

PyMethodDef body_reader_methods[] = {
    {"_decode_response_body", as_method(decode_response_body_entry), METH_FASTCALL,
     "_decode_response_body(body, dtype, byteorder, widen, threads, allocate, "
     "float_rows_as_double=False, embedding_offsets=False, /)\n--\n\n"
     "(result, model_json, usage_json[, offsets]): the rows of a /v1/embeddings body in what "
     "allocate(rows, row_length, float_rows) returns (float rows as float64, json.loads's "
     "doubles, with float_rows_as_double), and the JSON text of its model and usage (None where "
     "the body has none); with embedding_offsets, bytes of 2 * rows int64s: row i's embedding "
     "text is body[offsets[2i]:offsets[2i+1]]."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
