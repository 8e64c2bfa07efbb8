// The binding of the body reader (tensorb64/body_reader.hpp): a whole /v1/embeddings response body
// into one array, allocated by a Python callable once the rows' shape is known.
//
// The GIL is released for the read of a large body and taken back only for the one call of the
// allocator. The body is held through the buffer protocol (a bytearray cannot be resized while it
// is read) or is a str's UTF-8 form (cached by the str itself).
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tensorb64/body_reader.hpp"

namespace tb = tensorb64;

namespace {

// Releasing the GIL costs about a microsecond; below this many bytes the read is too short to pay.
constexpr std::size_t release_gil_above_bytes = 64 * 1024;

// The body's bytes, and what keeps them alive.
struct body_bytes {
    Py_buffer view{};
    bool held = false;
    const char* data = nullptr;
    std::size_t size = 0;
    bool is_str = false;

    body_bytes() = default;
    body_bytes(const body_bytes&) = delete;
    body_bytes& operator=(const body_bytes&) = delete;
    ~body_bytes() {
        if (held) PyBuffer_Release(&view);
    }

    // False with a TypeError (or the buffer protocol's own error) set for anything else.
    bool read(PyObject* body) {
        if (PyUnicode_Check(body)) {
            Py_ssize_t length = 0;
            data = PyUnicode_AsUTF8AndSize(body, &length);  // a lone surrogate: UnicodeEncodeError
            size = static_cast<std::size_t>(length);
            is_str = true;
            return data != nullptr;
        }
        if (!PyObject_CheckBuffer(body)) {
            PyErr_Format(PyExc_TypeError,
                         "body must be bytes, bytearray, a memoryview of bytes or str, got %s",
                         Py_TYPE(body)->tp_name);
            return false;
        }
        if (PyObject_GetBuffer(body, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) return false;
        held = true;
        if (view.itemsize != 1) {
            PyErr_Format(PyExc_TypeError,
                         "body must be a buffer of bytes, got items of %zd bytes (format %s)",
                         view.itemsize, view.format != nullptr ? view.format : "B");
            return false;
        }
        data = static_cast<const char*>(view.buf);
        size = static_cast<std::size_t>(view.len);
        return true;
    }
};

// The allocator's side of a read: the Python callable, the GIL state to restore around it, and the
// object it returned (owned) with its buffer.
struct result_allocation {
    PyObject* allocate = nullptr;
    PyThreadState* released = nullptr;  // non-null while the GIL is released
    PyObject* result = nullptr;
    Py_buffer view{};
    bool held = false;

    ~result_allocation() {
        if (held) PyBuffer_Release(&view);
        Py_XDECREF(result);
    }
};

// body_allocator: calls allocate(rows, row_length, float_rows) with the GIL held, and hands the
// reader the memory of what it returns, which must be a writable C-contiguous buffer of exactly
// the result's size (else its error, or a ValueError, stays set and the read stops).
void* allocate_result(void* context, const tb::body_layout& layout) {
    auto* a = static_cast<result_allocation*>(context);
    if (a->released != nullptr) PyEval_RestoreThread(a->released);
    void* memory = nullptr;
    a->result =
        PyObject_CallFunction(a->allocate, "nnO", static_cast<Py_ssize_t>(layout.rows),
                              static_cast<Py_ssize_t>(layout.row_length),
                              layout.encoding == tb::row_encoding::floats ? Py_True : Py_False);
    if (a->result != nullptr &&
        PyObject_GetBuffer(a->result, &a->view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) == 0) {
        a->held = true;
        const std::size_t bytes = layout.rows * layout.row_length * layout.element_size;
        if (static_cast<std::size_t>(a->view.len) != bytes) {
            PyErr_Format(
                PyExc_ValueError,
                "the result's buffer holds %zd bytes, not the %zu of %zu rows of %zu values",
                a->view.len, bytes, layout.rows, layout.row_length);
        } else if (reinterpret_cast<std::uintptr_t>(a->view.buf) % layout.element_size != 0) {
            PyErr_SetString(PyExc_ValueError,
                            "the result's buffer is not aligned for its elements");
        } else {
            memory = bytes != 0 ? a->view.buf : static_cast<void*>(a);  // non-null: "go on"
        }
    }
    if (a->released != nullptr) a->released = PyEval_SaveThread();
    return memory;
}

PyObject* span_bytes(const body_bytes& body, const tb::byte_span& span) {
    if (!span.present) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(body.data + span.offset, static_cast<Py_ssize_t>(span.length));
}

// _decode_response_body(body, dtype_code, byteorder_code, widen, threads, allocate, /)
//   -> (result, model_json, usage_json)
PyObject* decode_response_body_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "_decode_response_body takes (body, dtype_code, byteorder_code, widen, "
                        "threads, allocate)");
        return nullptr;
    }
    const long dtype_code = PyLong_AsLong(args[1]);
    const long order_code = PyLong_AsLong(args[2]);
    const int widen = PyObject_IsTrue(args[3]);
    const long threads = PyLong_AsLong(args[4]);
    if (PyErr_Occurred() || widen < 0) return nullptr;
    if (dtype_code < 0 || dtype_code > static_cast<long>(tb::dtype::bool8) || order_code < 0 ||
        order_code > 1 || threads < 1 || threads > 256) {
        PyErr_SetString(PyExc_ValueError,
                        "_decode_response_body: a code or thread count out of range");
        return nullptr;
    }
    body_bytes body;
    if (!body.read(args[0])) return nullptr;
    tb::body_options options;
    options.stored = {static_cast<tb::dtype>(dtype_code), static_cast<tb::byte_order>(order_code)};
    options.widen = widen != 0;
    options.threads = static_cast<unsigned>(threads);
    options.allow_bom = !body.is_str;  // json.loads skips a BOM in bytes, refuses one in a str

    result_allocation allocation;
    allocation.allocate = args[5];
    tb::body_layout layout;
    tb::body_error error;
    if (body.size >= release_gil_above_bytes) allocation.released = PyEval_SaveThread();
    error = tb::read_embeddings_body(body.data, body.size, options, allocate_result, &allocation,
                                     &layout);
    if (allocation.released != nullptr) PyEval_RestoreThread(allocation.released);

    if (error.status == tb::body_status::no_output) {
        return PyErr_Occurred() ? nullptr
                                : PyErr_NoMemory();  // the allocator's error, or the index check's
    }
    if (error.status != tb::body_status::ok) {
        PyErr_SetString(PyExc_ValueError, tb::to_string(error).c_str());
        return nullptr;
    }
    PyObject* model = span_bytes(body, layout.model);
    PyObject* usage = model != nullptr ? span_bytes(body, layout.usage) : nullptr;
    if (usage == nullptr) {
        Py_XDECREF(model);
        return nullptr;
    }
    return Py_BuildValue("(ONN)", allocation.result, model, usage);
}

PyMethodDef decode_body_methods[] = {
    {"_decode_response_body",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(decode_response_body_entry)),
     METH_FASTCALL,
     "_decode_response_body(body, dtype_code, byteorder_code, widen, threads, allocate, /)\n--\n\n"
     "(result, model_json, usage_json): the rows of a /v1/embeddings body in what allocate(rows, "
     "row_length, float_rows) returns, and the JSON text of its model and usage (None if absent)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

// Adds the body reader's functions to the extension module; -1 with an error set on failure.
int add_decode_body_functions(PyObject* module) {
    return PyModule_AddFunctions(module, decode_body_methods);
}
