// What every file of the binding shares over Python's C API: owned references, errors carried
// as C++ exceptions to the entry point's boundary, and releasing the GIL while the core writes.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace binding {

// A Python exception already set (by the C API or by the binding): `guarded` returns null for it.
struct python_error {};

// Sets `type` with `message` and unwinds to the entry point.
[[noreturn]] inline void raise(PyObject* type, const std::string& message) {
    PyErr_SetString(type, message.c_str());
    throw python_error{};
}

// repr(object), cut to 80 characters, for messages ("<unprintable>" if repr raised).
inline std::string repr_of(PyObject* object) {
    PyObject* text = PyObject_Repr(object);
    const char* utf8 = nullptr;
    Py_ssize_t size = 0;
    if (text != nullptr) utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    std::string result =
        utf8 != nullptr ? std::string(utf8, static_cast<std::size_t>(size)) : "<unprintable>";
    if (utf8 == nullptr) PyErr_Clear();
    Py_XDECREF(text);
    if (result.size() > 80) result = result.substr(0, 77) + "...";
    return result;
}

// An owned reference, released at scope exit.
class ref {
public:
    ref() = default;
    explicit ref(PyObject* object) : object_(object) {}
    ref(const ref&) = delete;
    ref& operator=(const ref&) = delete;
    ref(ref&& other) noexcept : object_(other.release()) {}
    ref& operator=(ref&& other) noexcept {
        Py_XDECREF(object_);
        object_ = other.release();
        return *this;
    }
    ~ref() { Py_XDECREF(object_); }
    PyObject* get() const { return object_; }
    PyObject* release() {
        PyObject* o = object_;
        object_ = nullptr;
        return o;
    }
    explicit operator bool() const { return object_ != nullptr; }

private:
    PyObject* object_ = nullptr;
};

// A new reference, or python_error if the call that made it failed.
inline PyObject* checked(PyObject* made) {
    if (made == nullptr) throw python_error{};
    return made;
}

// Below about 10 µs of work, releasing and retaking the GIL costs more than it lets other threads
// do: that is about 64 KiB of base64 text or decoded bytes, or 4,096 values of float text.
constexpr std::size_t release_gil_above_bytes = 64 * 1024;
constexpr std::size_t release_gil_above_values = 4096;

// Releases the GIL for its scope when `worth_it`; the core functions it wraps touch no Python
// object and throw nothing.
class gil_released_if {
public:
    explicit gil_released_if(bool worth_it) : state_(worth_it ? PyEval_SaveThread() : nullptr) {}
    gil_released_if(const gil_released_if&) = delete;
    gil_released_if& operator=(const gil_released_if&) = delete;
    ~gil_released_if() {
        if (state_ != nullptr) PyEval_RestoreThread(state_);
    }

private:
    PyThreadState* state_;
};

// Runs an entry point's body, turning C++ failures into Python exceptions.
template <class Body>
PyObject* guarded(Body&& body) {
    try {
        return body();
    } catch (const python_error&) {
        return nullptr;
    } catch (const std::bad_alloc&) {
        return PyErr_NoMemory();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
        return nullptr;
    }
}

// A METH_FASTCALL (| METH_KEYWORDS) function as PyMethodDef stores it.
template <class Function>
PyCFunction as_method(Function function) {
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

// The attribute and keyword names the binding looks up, interned once at import (module.cpp's
// exec_module). Not function-local statics: on a free-threaded CPython a C API call made inside
// C++'s static-initialisation guard can deadlock, a thread waiting on the guard never detaching
// from the interpreter while the call waits for a stop-the-world pause.
struct interned_names {
    PyObject* dtype = nullptr;
    PyObject* float_format = nullptr;
    PyObject* byteorder = nullptr;
    PyObject* threads = nullptr;
    PyObject* name = nullptr;
    PyObject* is_cpu = nullptr;
    PyObject* shape = nullptr;
    PyObject* stride = nullptr;
    PyObject* is_neg = nullptr;
    PyObject* data_ptr = nullptr;
    PyObject* storage_offset = nullptr;
    PyObject* untyped_storage = nullptr;
    PyObject* nbytes = nullptr;
};
inline interned_names interned;

// Fills `interned` (once per process: the strings are immortal); false with an error set.
inline bool intern_attribute_names() {
    if (interned.nbytes != nullptr) return true;
    const std::pair<PyObject**, const char*> all[] = {
        {&interned.dtype, "dtype"},
        {&interned.float_format, "float_format"},
        {&interned.byteorder, "byteorder"},
        {&interned.threads, "threads"},
        {&interned.name, "name"},
        {&interned.is_cpu, "is_cpu"},
        {&interned.shape, "shape"},
        {&interned.stride, "stride"},
        {&interned.is_neg, "is_neg"},
        {&interned.data_ptr, "data_ptr"},
        {&interned.storage_offset, "storage_offset"},
        {&interned.untyped_storage, "untyped_storage"},
        {&interned.nbytes, "nbytes"},
    };
    for (const auto& [slot, text] : all) {
        *slot = PyUnicode_InternFromString(text);
        if (*slot == nullptr) return false;
    }
    return true;
}

}  // namespace binding
