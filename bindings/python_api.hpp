// What every file of the binding shares over Python's C API: owned references, held buffers,
// errors carried as C++ exceptions to the entry point's boundary, and releasing the GIL while the
// core works.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <atomic>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
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

// A Python buffer held for a scope: released at its end (the GIL held) or by release().
class held_buffer {
public:
    Py_buffer view{};

    held_buffer() = default;
    held_buffer(const held_buffer&) = delete;
    held_buffer& operator=(const held_buffer&) = delete;
    ~held_buffer() { release(); }

    // Takes `exporter`'s buffer (releasing any held before): false, with the exporter's error set,
    // when it gives none.
    bool acquire(PyObject* exporter, int flags) {
        release();
        if (PyObject_GetBuffer(exporter, &view, flags) != 0) return false;
        held_ = true;
        return true;
    }
    void release() noexcept {
        if (held_) PyBuffer_Release(&view);
        held_ = false;
    }

private:
    bool held_ = false;
};

// Below about 10 µs of work, releasing and retaking the GIL costs more than it lets other threads
// do: that is about 64 KiB of base64 text or decoded bytes, or 4,096 values of float text.
constexpr std::size_t release_gil_above_bytes = 64 * 1024;
constexpr std::size_t release_gil_above_values = 4096;

// Releases the GIL for its scope when `worth_it`, and takes it back however the scope ends (an
// exception included: `guarded` sets Python's error only with the GIL held). The code it wraps
// touches no Python object, except inside a `retaken` of it.
class gil_released_if {
public:
    explicit gil_released_if(bool worth_it) : state_(worth_it ? PyEval_SaveThread() : nullptr) {}
    gil_released_if(const gil_released_if&) = delete;
    gil_released_if& operator=(const gil_released_if&) = delete;
    ~gil_released_if() {
        if (state_ != nullptr) PyEval_RestoreThread(state_);
    }

    // Holds the GIL again for its own scope, inside a released one (a callback of the core that
    // calls into Python).
    class retaken {
    public:
        explicit retaken(gil_released_if& released) : released_(released) {
            if (released_.state_ != nullptr) PyEval_RestoreThread(released_.state_);
        }
        retaken(const retaken&) = delete;
        retaken& operator=(const retaken&) = delete;
        ~retaken() {
            if (released_.state_ != nullptr) released_.state_ = PyEval_SaveThread();
        }

    private:
        gil_released_if& released_;
    };

private:
    PyThreadState* state_;
};

// A test hook (_native._inject_failure): the failure the next call of throw_if_failure_injected
// throws, standing for what the core can throw while the GIL is released.
enum class injected_failure : int { none, bad_alloc, length_error, system_error };
inline std::atomic<injected_failure> next_injected_failure{injected_failure::none};

inline void throw_if_failure_injected() {
    switch (next_injected_failure.exchange(injected_failure::none, std::memory_order_relaxed)) {
        case injected_failure::none: return;
        case injected_failure::bad_alloc: throw std::bad_alloc();
        case injected_failure::length_error: throw std::length_error("injected: a size too large");
        case injected_failure::system_error:
            throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                    "injected: no thread to be had");
    }
}

// tensorb64.DecodeError, made at import (module.cpp): malformed input to a reader.
inline PyObject* decode_error_type = nullptr;

// A DecodeError's pos or row where the reader does not know it (None in Python).
constexpr std::size_t not_known = ~std::size_t{0};

// Sets a DecodeError, `message` its text, and unwinds to the entry point.
[[noreturn]] inline void raise_decode_error(const std::string& message, const std::string& reason,
                                            std::size_t pos, std::size_t row) {
    const auto number_or_none = [](std::size_t n) {
        return n != not_known ? PyLong_FromSize_t(n) : Py_NewRef(Py_None);
    };
    ref error(PyObject_CallFunction(decode_error_type, "ssNN", message.c_str(), reason.c_str(),
                                    number_or_none(pos), number_or_none(row)));
    if (error) PyErr_SetObject(decode_error_type, error.get());
    throw python_error{};
}

// Runs an entry point's body, turning C++ failures into Python exceptions, the one mapping of
// them: bad_alloc is MemoryError; length_error, which the core throws for a size that does not
// fit in a size_t (arithmetic, before any allocation), MemoryError too, as the binding's own size
// checks (sizes.hpp) raise it for a size past the machine's memory: one error type for an output
// that cannot be made; system_error (no thread to be had) RuntimeError, as
// threading.Thread.start() raises it; any other (invalid_argument, a bad TENSORB64_SIMD)
// ValueError, a value the caller gave.
template <class Body>
PyObject* guarded(Body&& body) {
    try {
        return body();
    } catch (const python_error&) {
        return nullptr;
    } catch (const std::bad_alloc&) {
        return PyErr_NoMemory();
    } catch (const std::length_error& e) {
        PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const std::system_error& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    }
    return nullptr;
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
