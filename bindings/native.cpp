// The Python binding of the C++ core.
//
// One reader (`read_input`) turns every input into one array descriptor: a numpy array or any
// other buffer through the buffer protocol, a CPU torch tensor through its own methods (checked
// element by element against its storage's bounds), and anything else through the Python layer's
// `readable()` (src/tensorb64/_inputs.py), which either converts it once, explicitly, into one of
// those or raises the error that names what was wrong. Every entry point reads through it.
//
// Output sizes are computed exactly, with overflow guards, and checked against the machine's
// memory before anything is allocated. Python objects are made with the GIL held; the GIL is
// released while the kernel writes into them (when there is enough to write to pay for it).
//
// The hot entry points (encode, encode_rows, encode_body's bytes) are METH_FASTCALL functions
// written against the C API: a pybind11 call costs more than encoding a 384-value row.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "tensorb64/tensorb64.hpp"

namespace py = pybind11;
namespace tb = tensorb64;
using namespace std::string_literals;

namespace {

// ---- errors ---------------------------------------------------------------------------------

// A Python exception already set (by the C API or by this file).
struct python_error {};

[[noreturn]] void raise(PyObject* type, const std::string& message) {
    PyErr_SetString(type, message.c_str());
    throw python_error{};
}

std::string repr_of(PyObject* object) {
    PyObject* text = PyObject_Repr(object);
    if (text == nullptr) {
        PyErr_Clear();
        return "<unprintable>";
    }
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    std::string result =
        utf8 != nullptr ? std::string(utf8, static_cast<std::size_t>(size)) : "<unprintable>";
    if (utf8 == nullptr) PyErr_Clear();
    Py_DECREF(text);
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

// ---- the GIL while the core writes ------------------------------------------------------------

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

// ---- the registry: names resolved by the Python layer, handed over once -----------------------

// src/tensorb64/_formats.py holds every name; `_configure` gives the binding the dicts it needs.
struct registry {
    PyObject* output_dtypes = nullptr;  // dict: dtype name -> core dtype code (int)
    PyObject* byteorders = nullptr;     // dict: byteorder name -> 0 (little) or 1 (big)
    PyObject* float_formats = nullptr;  // dict: float_format name -> tensorb64::float_format code
    PyObject* ndarray_type = nullptr;   // numpy.ndarray
    PyObject* readable = nullptr;  // _inputs.readable: x -> (readable object, dtype code or None)
    PyObject* tensor_type = nullptr;   // torch.Tensor, once the Python layer has seen torch
    PyObject* torch_dtypes = nullptr;  // dict: torch.dtype -> core dtype code
    PyObject* torch_exchange_capsule = nullptr;  // torch.Tensor.__dlpack_c_exchange_api__, if any
    // The staging pipeline's encode_rows and json_rows (src/tensorb64/_cuda.py), for CUDA tensors.
    PyObject* cuda_encode_rows = nullptr;
    PyObject* cuda_json_rows = nullptr;
    std::string dtype_names;  // "float32, float16, ..." for messages
    std::string byteorder_names;
    std::string float_format_names;
} names;

// "a, b, c" (or "'a', 'b' or 'c'" with `quoted`): the names a message lists as accepted.
std::string joined_keys(PyObject* dict, bool quoted) {
    std::vector<std::string> keys;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        const char* text = PyUnicode_AsUTF8(key);
        keys.push_back(text != nullptr ? (quoted ? "'"s + text + "'" : text) : "?");
    }
    PyErr_Clear();
    std::string joined;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i > 0) joined += quoted && i + 1 == keys.size() ? " or " : ", ";
        joined += keys[i];
    }
    return joined;
}

int lookup_code(PyObject* dict, PyObject* name) {
    PyObject* code = PyDict_GetItemWithError(dict, name);  // borrowed
    if (code == nullptr) {
        PyErr_Clear();  // an unhashable name is just an unknown one
        return -1;
    }
    return static_cast<int>(PyLong_AsLong(code));
}

tb::dtype output_dtype(PyObject* name) {
    const int code = name == nullptr ? static_cast<int>(tb::dtype::float32)
                                     : lookup_code(names.output_dtypes, name);
    if (code < 0)
        raise(PyExc_ValueError,
              "unknown dtype " + repr_of(name) + "; expected one of " + names.dtype_names);
    return static_cast<tb::dtype>(code);
}

tb::byte_order byte_order(PyObject* name) {
    const int code = name == nullptr ? 0 : lookup_code(names.byteorders, name);
    if (code < 0)
        raise(PyExc_ValueError,
              "unknown byteorder " + repr_of(name) + "; expected " + names.byteorder_names);
    return code == 0 ? tb::byte_order::little : tb::byte_order::big;
}

tb::float_format float_format(PyObject* name) {
    const int code = name == nullptr ? 0 : lookup_code(names.float_formats, name);
    if (code < 0) {
        raise(PyExc_ValueError,
              "unknown float_format " + repr_of(name) + "; expected " + names.float_format_names);
    }
    return static_cast<tb::float_format>(code);
}

// More threads than this cannot help on any machine this runs on (the core's pool cap).
constexpr long max_threads = 256;

unsigned thread_count(PyObject* value) {
    if (value == nullptr) return 1;
    long threads = -1;
    if (!PyBool_Check(value)) {
        ref index(PyNumber_Index(value));  // ints and numpy integers
        if (index) {
            int overflow = 0;
            threads = PyLong_AsLongAndOverflow(index.get(), &overflow);
            if (overflow != 0) threads = -1;
        }
        PyErr_Clear();
    }
    if (threads < 1 || threads > max_threads) {
        raise(PyExc_ValueError, "threads must be an int from 1 to " + std::to_string(max_threads) +
                                    " (a Python or numpy integer), got " + repr_of(value));
    }
    return static_cast<unsigned>(threads);
}

// ---- the reader ---------------------------------------------------------------------------------

// An input as the core reads it: where its elements lie, its shape and byte strides, their
// format, and what keeps the memory alive while it is read.
struct input_array {
    const void* data = nullptr;
    std::size_t ndim = 0;
    std::size_t shape[tb::max_dims] = {};
    std::ptrdiff_t strides[tb::max_dims] = {};
    tb::element_format format{tb::dtype::float32, tb::host_byte_order};

    Py_buffer view{};  // when read through the buffer protocol
    bool has_view = false;
    ref owner;      // what keeps the memory alive: the tensor's storage (a buffer holds its own)
    ref converted;  // what the Python layer converted the input to, if anything

    input_array() = default;
    input_array(const input_array&) = delete;
    input_array& operator=(const input_array&) = delete;
    ~input_array() {
        if (has_view) PyBuffer_Release(&view);
    }
};

// The core type of a buffer's items, from the struct-module format and the item size (which
// says how wide 'l' is on this platform); false for anything else.
bool buffer_format(const char* format, Py_ssize_t itemsize, tb::element_format* out) {
    if (format == nullptr) format = "B";
    tb::byte_order order = tb::host_byte_order;
    switch (*format) {
        case '<':
            order = tb::byte_order::little;
            ++format;
            break;
        case '>':
        case '!':
            order = tb::byte_order::big;
            ++format;
            break;
        case '@':
        case '=': ++format; break;
        default: break;
    }
    if (format[0] == '\0' || format[1] != '\0') return false;
    const char code = format[0];
    tb::dtype type;
    if (std::strchr("efd", code) != nullptr) {
        if (itemsize == 2)
            type = tb::dtype::float16;
        else if (itemsize == 4)
            type = tb::dtype::float32;
        else if (itemsize == 8)
            type = tb::dtype::float64;
        else
            return false;
    } else if (std::strchr("bhilqn", code) != nullptr) {
        if (itemsize == 1)
            type = tb::dtype::int8;
        else if (itemsize == 2)
            type = tb::dtype::int16;
        else if (itemsize == 4)
            type = tb::dtype::int32;
        else if (itemsize == 8)
            type = tb::dtype::int64;
        else
            return false;
    } else if (std::strchr("BHILQN", code) != nullptr) {
        if (itemsize == 1)
            type = tb::dtype::uint8;
        else if (itemsize == 2)
            type = tb::dtype::uint16;
        else if (itemsize == 4)
            type = tb::dtype::uint32;
        else if (itemsize == 8)
            type = tb::dtype::uint64;
        else
            return false;
    } else if (code == '?' && itemsize == 1) {
        type = tb::dtype::bool8;
    } else {
        return false;
    }
    *out = {type, order};
    return true;
}

// Reads a buffer exporter. numpy arrays may hold any numeric type; other buffers (memoryview,
// array.array) must hold floats, since a byte buffer there is far more often raw bytes passed
// by mistake than integers. False (no error set) for what the Python layer must handle.
bool read_buffer(PyObject* x, int source_override, input_array& in) {
    const bool is_ndarray =
        PyObject_TypeCheck(x, reinterpret_cast<PyTypeObject*>(names.ndarray_type));
    if (!is_ndarray && source_override < 0) {
        if (!PyObject_CheckBuffer(x) || PyBytes_Check(x) || PyByteArray_Check(x)) return false;
    }
    if (PyObject_GetBuffer(x, &in.view, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();  // a dtype numpy cannot export (bfloat16, object, ...): the Python layer
                        // explains
        return false;
    }
    in.has_view = true;
    tb::element_format format{};
    if (!buffer_format(in.view.format, in.view.itemsize, &format)) return false;
    if (source_override >= 0) {
        format.type = static_cast<tb::dtype>(source_override);
        if (tb::dtype_size(format.type) != static_cast<std::size_t>(in.view.itemsize)) return false;
    } else if (!is_ndarray && format.type != tb::dtype::float16 &&
               format.type != tb::dtype::float32 && format.type != tb::dtype::float64) {
        return false;
    }
    if (in.view.ndim < 0 || static_cast<std::size_t>(in.view.ndim) > tb::max_dims) return false;
    in.data = in.view.buf;
    in.ndim = static_cast<std::size_t>(in.view.ndim);
    if (in.view.shape == nullptr &&
        in.ndim != 0) {  // allowed for a 1-D exporter: len bytes of items
        in.ndim = 1;
        in.shape[0] = static_cast<std::size_t>(in.view.len / in.view.itemsize);
        in.strides[0] = in.view.itemsize;
    } else {
        // No strides (ctypes gives none): C-contiguous.
        std::ptrdiff_t contiguous = in.view.itemsize;
        for (std::size_t d = in.ndim; d-- > 0;) {
            in.shape[d] = static_cast<std::size_t>(in.view.shape[d]);
            in.strides[d] = in.view.strides != nullptr ? in.view.strides[d] : contiguous;
            contiguous *= static_cast<std::ptrdiff_t>(in.shape[d]);
        }
    }
    in.format = format;
    return true;
}

// Calls a method of `object` with no arguments; null (error cleared) if it raised.
PyObject* call_method(PyObject* object, PyObject* name) {
    PyObject* result = PyObject_CallMethodNoArgs(object, name);
    if (result == nullptr) PyErr_Clear();
    return result;
}

bool as_size(PyObject* number, std::size_t* out) {
    const std::size_t value = PyLong_AsSize_t(number);
    if (value == static_cast<std::size_t>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    *out = value;
    return true;
}

bool as_ssize(PyObject* number, std::ptrdiff_t* out) {
    const Py_ssize_t value = PyLong_AsSsize_t(number);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    *out = value;
    return true;
}

// The byte offsets, from the first element, of the lowest and one past the highest byte that
// an array reads; false if they do not fit (no real array is that large).
bool byte_extent(const input_array& in, std::ptrdiff_t* low, std::ptrdiff_t* high) {
    constexpr std::ptrdiff_t limit = std::numeric_limits<std::ptrdiff_t>::max() / 4;
    std::ptrdiff_t lo = 0, hi = 0;
    for (std::size_t d = 0; d < in.ndim; ++d) {
        if (in.shape[d] == 0) {
            *low = *high = 0;
            return true;  // no element at all: nothing is read
        }
        const std::ptrdiff_t stride = in.strides[d];
        if (in.shape[d] > static_cast<std::size_t>(limit) || stride < -limit || stride > limit)
            return false;
        const auto steps = static_cast<std::ptrdiff_t>(in.shape[d] - 1);
        const std::ptrdiff_t magnitude = stride < 0 ? -stride : stride;
        if (magnitude != 0 && steps > limit / magnitude) return false;
        (stride < 0 ? lo : hi) += steps * stride;
        if (lo < -limit || hi > limit) return false;
    }
    *low = lo;
    *high = hi + static_cast<std::ptrdiff_t>(tb::dtype_size(in.format.type));
    return true;
}

// DLPack's C exchange API (DLPack 1.2+, offered by torch as the capsule
// `torch.Tensor.__dlpack_c_exchange_api__`): one C call fills a DLTensor (device, dtype, shape,
// strides) where reading them through the tensor's methods takes five Python calls. The layout
// is the DLPack standard's (dlpack.h, major version 1), declared here so that the package needs
// no torch or dlpack headers.
namespace dlpack {
struct version {
    std::uint32_t major, minor;
};
struct device {
    std::int32_t type, id;
};
constexpr std::int32_t cpu_device = 1;  // kDLCPU
struct data_type {
    std::uint8_t code, bits;
    std::uint16_t lanes;
};
struct tensor {
    void* data;
    device where;
    std::int32_t ndim;
    data_type type;
    std::int64_t* shape;
    std::int64_t* strides;  // in elements; null means C-contiguous
    std::uint64_t byte_offset;
};
struct exchange_api {
    version api_version;  // the header, stable across versions
    const void* previous_api;
    const void* managed_tensor_allocator;
    const void* managed_tensor_from_py_object_no_sync;
    const void* managed_tensor_to_py_object_no_sync;
    // Fills `out` for `py_object`, borrowed (valid while the object lives and is not changed);
    // 0, or -1 with a Python exception set.
    int (*dltensor_from_py_object_no_sync)(void* py_object, tensor* out);
    const void* current_work_stream;
};
constexpr const char* capsule_name = "dlpack_exchange_api";

// The core type of a DLPack element type; -1 where the core does not read it in place.
int core_code(data_type t) {
    if (t.lanes != 1) return -1;
    enum : std::uint8_t {
        int_code = 0,
        uint_code = 1,
        float_code = 2,
        bfloat_code = 4,
        bool_code = 6,
        float8_e4m3fn_code = 10,
        float8_e5m2_code = 12
    };
    tb::dtype core;
    switch (t.code * 256 + t.bits) {
        case float_code * 256 + 32: core = tb::dtype::float32; break;
        case float_code * 256 + 16: core = tb::dtype::float16; break;
        case float_code * 256 + 64: core = tb::dtype::float64; break;
        case bfloat_code * 256 + 16: core = tb::dtype::bfloat16; break;
        case float8_e4m3fn_code * 256 + 8: core = tb::dtype::float8_e4m3fn; break;
        case float8_e5m2_code * 256 + 8: core = tb::dtype::float8_e5m2; break;
        case int_code * 256 + 8: core = tb::dtype::int8; break;
        case int_code * 256 + 16: core = tb::dtype::int16; break;
        case int_code * 256 + 32: core = tb::dtype::int32; break;
        case int_code * 256 + 64: core = tb::dtype::int64; break;
        case uint_code * 256 + 8: core = tb::dtype::uint8; break;
        case uint_code * 256 + 16: core = tb::dtype::uint16; break;
        case uint_code * 256 + 32: core = tb::dtype::uint32; break;
        case uint_code * 256 + 64: core = tb::dtype::uint64; break;
        case bool_code * 256 + 8: core = tb::dtype::bool8; break;
        default: return -1;
    }
    return static_cast<int>(core);
}
}  // namespace dlpack

const dlpack::exchange_api* torch_exchange = nullptr;  // set by _configure_torch when offered

// Element strides beyond this cannot address real memory (and their byte strides could overflow).
constexpr std::int64_t max_stride = std::numeric_limits<std::ptrdiff_t>::max() / 16;

[[noreturn]] void strides_out_of_range() {
    raise(PyExc_ValueError,
          "the tensor's shape and strides reach outside its storage (they are out of range)");
}

// The tensor's element type, shape, strides (in bytes) and address into `in`, through torch's
// DLPack exchange API: false (no error set) where it cannot say, or says something the core does
// not read in place (another device or dtype); the tensor's methods are asked then.
bool describe_by_exchange(PyObject* x, input_array& in) {
    dlpack::tensor dl{};
    if (torch_exchange->dltensor_from_py_object_no_sync(x, &dl) != 0) {
        PyErr_Clear();
        return false;
    }
    const int code = dlpack::core_code(dl.type);
    if (dl.where.type != dlpack::cpu_device || code < 0 || dl.ndim < 0 ||
        static_cast<std::size_t>(dl.ndim) > tb::max_dims || (dl.ndim > 0 && dl.shape == nullptr)) {
        return false;
    }
    if (code == static_cast<int>(tb::dtype::int8) || code == static_cast<int>(tb::dtype::uint8)) {
        // torch exports its sub-byte integer dtypes (int1..int7, uint1..uint7) as 8-bit
        // integers: the tensor's dtype says which it is.
        static PyObject* const dtype_name = PyUnicode_InternFromString("dtype");
        ref dtype(PyObject_GetAttr(x, dtype_name));
        if (!dtype || lookup_code(names.torch_dtypes, dtype.get()) != code) {
            PyErr_Clear();
            return false;
        }
    }
    in.format = {static_cast<tb::dtype>(code), tb::host_byte_order};
    in.data = static_cast<const char*>(dl.data) + dl.byte_offset;
    const auto size = static_cast<std::int64_t>(tb::dtype_size(in.format.type));
    in.ndim = static_cast<std::size_t>(dl.ndim);
    std::int64_t contiguous = 1;
    for (std::size_t d = in.ndim; d-- > 0;) {
        const std::int64_t stride = dl.strides != nullptr ? dl.strides[d] : contiguous;
        if (dl.shape[d] < 0 || stride > max_stride || stride < -max_stride) strides_out_of_range();
        in.shape[d] = static_cast<std::size_t>(dl.shape[d]);
        in.strides[d] = static_cast<std::ptrdiff_t>(stride * size);
        contiguous *= dl.shape[d] == 0 ? 1 : dl.shape[d];
    }
    return true;
}

// The tensor's element type, shape and strides (in bytes) into `in`, and its address where the
// exchange API gives it (null otherwise): through that API when torch offers it and it can say,
// otherwise through the tensor's methods. False (no error set) for what the Python layer must
// handle: another device, dtype or layout, anything that raised.
bool describe_tensor(PyObject* x, input_array& in) {
    if (torch_exchange != nullptr && describe_by_exchange(x, in)) return true;
    static PyObject* const dtype_name = PyUnicode_InternFromString("dtype");
    static PyObject* const is_cpu_name = PyUnicode_InternFromString("is_cpu");
    static PyObject* const shape_name = PyUnicode_InternFromString("shape");
    static PyObject* const stride_name = PyUnicode_InternFromString("stride");
    ref dtype(PyObject_GetAttr(x, dtype_name));
    const int code = dtype ? lookup_code(names.torch_dtypes, dtype.get()) : -1;
    ref is_cpu(PyObject_GetAttr(x, is_cpu_name));
    ref shape(PyObject_GetAttr(x, shape_name));
    ref strides(call_method(x, stride_name));
    if (code < 0 || is_cpu.get() != Py_True || !shape || !strides || !PyTuple_Check(shape.get()) ||
        !PyTuple_Check(strides.get()) ||
        PyTuple_GET_SIZE(shape.get()) != PyTuple_GET_SIZE(strides.get()) ||
        PyTuple_GET_SIZE(shape.get()) > static_cast<Py_ssize_t>(tb::max_dims)) {
        PyErr_Clear();
        return false;
    }
    in.format = {static_cast<tb::dtype>(code), tb::host_byte_order};
    const auto size = static_cast<std::ptrdiff_t>(tb::dtype_size(in.format.type));
    in.ndim = static_cast<std::size_t>(PyTuple_GET_SIZE(shape.get()));
    for (std::size_t d = 0; d < in.ndim; ++d) {
        std::ptrdiff_t extent = 0, stride = 0;
        if (!as_ssize(PyTuple_GET_ITEM(shape.get(), d), &extent) ||
            !as_ssize(PyTuple_GET_ITEM(strides.get(), d), &stride) || extent < 0 ||
            stride > max_stride || stride < -max_stride) {
            strides_out_of_range();
        }
        in.shape[d] = static_cast<std::size_t>(extent);
        in.strides[d] = stride * size;
    }
    return true;
}

// Reads a CPU torch.Tensor (exactly that type: a subclass's methods may say anything) in place:
// no torch headers, no numpy view. False (no error set) for what the Python layer must handle:
// another device, dtype or layout, a negative-bit view, anything that raised. Raises if its
// shape and strides reach outside its storage (a shrunk storage, as FSDP leaves).
bool read_tensor(PyObject* x, input_array& in) {
    static PyObject* const is_neg_name = PyUnicode_InternFromString("is_neg");
    static PyObject* const data_ptr_name = PyUnicode_InternFromString("data_ptr");
    static PyObject* const offset_name = PyUnicode_InternFromString("storage_offset");
    static PyObject* const storage_name = PyUnicode_InternFromString("untyped_storage");
    static PyObject* const nbytes_name = PyUnicode_InternFromString("nbytes");

    // The storage first, and everything else after it (see test_storage_swapped_mid_call):
    // holding it keeps the memory alive for the whole call, even if another thread gives the
    // tensor new storage meanwhile (t.set_(), which torch runs without the GIL). Every byte read
    // is checked against the storage held, so whatever the race, it lies in memory this call
    // holds.
    ref storage(call_method(x, storage_name));
    in.data = nullptr;
    if (!storage || !describe_tensor(x, in)) return false;
    // A negative-bit view (x.conj().imag) stores its values negated: the Python layer resolves it.
    ref negated(call_method(x, is_neg_name));
    ref storage_address(call_method(storage.get(), data_ptr_name));
    ref storage_bytes(call_method(storage.get(), nbytes_name));
    std::size_t base = 0, capacity = 0;
    if (negated.get() != Py_False || !storage_address || !storage_bytes ||
        !as_size(storage_address.get(), &base) || !as_size(storage_bytes.get(), &capacity)) {
        PyErr_Clear();
        return false;
    }
    const auto size = static_cast<std::ptrdiff_t>(tb::dtype_size(in.format.type));
    // The address torch gave, if it lies in the storage held; otherwise (the methods' path, a
    // tensor given new storage since, or a shrunk one) the offset into the storage held, in bytes
    // (whether what is read lies inside is checked below).
    const auto address = reinterpret_cast<std::uintptr_t>(in.data);
    bool offset_inside = address != 0 && address >= base && address - base <= capacity;
    std::size_t offset = offset_inside ? address - base : 0;
    if (!offset_inside) {
        ref elements(call_method(x, offset_name));
        std::ptrdiff_t elements_before = 0;
        if (!elements || !as_ssize(elements.get(), &elements_before)) return false;
        offset_inside =
            elements_before >= 0 && static_cast<std::size_t>(elements_before) <= capacity / size;
        offset = offset_inside ? static_cast<std::size_t>(elements_before * size) : 0;
    }
    const std::size_t data = base + offset;
    in.data = reinterpret_cast<const void*>(data);
    std::ptrdiff_t low = 0, high = 0;
    bool inside = byte_extent(in, &low, &high);
    if (inside && high > low) {
        inside = offset_inside && offset <= capacity && static_cast<std::size_t>(-low) <= offset &&
                 static_cast<std::size_t>(high) <= capacity - offset;
    }
    if (!inside) {
        raise(PyExc_ValueError, "the tensor's shape and strides reach outside its storage (" +
                                    std::to_string(capacity) + " bytes): it cannot be read");
    }
    in.owner = std::move(storage);
    return true;
}

bool read_in_place(PyObject* x, int source_override, input_array& in) {
    if (names.tensor_type != nullptr &&
        Py_TYPE(x) == reinterpret_cast<PyTypeObject*>(names.tensor_type)) {
        return read_tensor(x, in);
    }
    return read_buffer(x, source_override, in);
}

// A plain torch.Tensor on a CUDA device: what the staging pipeline (src/tensorb64/_cuda.py)
// reads, for the entry points it serves. Asked only of inputs that could not be read in place.
bool on_cuda_device(PyObject* x) {
    static PyObject* const is_cuda_name = PyUnicode_InternFromString("is_cuda");
    if (names.tensor_type == nullptr ||
        Py_TYPE(x) != reinterpret_cast<PyTypeObject*>(names.tensor_type)) {
        return false;
    }
    ref is_cuda(PyObject_GetAttr(x, is_cuda_name));
    PyErr_Clear();
    return is_cuda.get() == Py_True;
}

enum class device_inputs { converted, left_to_the_pipeline };

// The one reader: every input of every entry point comes through here. With
// `left_to_the_pipeline`, false (nothing read) for a tensor on a CUDA device: the entry point
// hands the call to the staging pipeline, which copies it in chunks (narrowed on the GPU where
// the output is narrower) and calls the entry point again on each chunk's host copy.
bool read_input(PyObject* x, input_array& in, device_inputs device = device_inputs::converted) {
    if (read_in_place(x, -1, in)) return true;
    if (PyErr_Occurred()) throw python_error{};
    if (device == device_inputs::left_to_the_pipeline && on_cuda_device(x)) return false;
    if (in.has_view) {
        PyBuffer_Release(&in.view);
        in.has_view = false;
    }
    // The Python layer converts what cannot be read in place, once, or raises the error that
    // names what was wrong and what is accepted.
    ref converted(PyObject_CallOneArg(names.readable, x));
    if (!converted) throw python_error{};
    if (!PyTuple_Check(converted.get()) || PyTuple_GET_SIZE(converted.get()) != 2) {
        raise(PyExc_SystemError, "tensorb64: readable() must return (object, dtype code or None)");
    }
    PyObject* object = PyTuple_GET_ITEM(converted.get(), 0);
    PyObject* override_code = PyTuple_GET_ITEM(converted.get(), 1);
    const int source_override =
        override_code == Py_None ? -1 : static_cast<int>(PyLong_AsLong(override_code));
    if (!read_in_place(object, source_override, in)) {
        if (PyErr_Occurred()) throw python_error{};
        raise(PyExc_TypeError, "cannot read " + repr_of(object) + " (converted from a " +
                                   Py_TYPE(x)->tp_name + "); this is a bug in tensorb64");
    }
    in.converted = std::move(converted);  // keeps the converted object alive
    return true;
}

// The staging pipeline's function for an entry point, called with the entry's own arguments
// (already checked).
PyObject* call_pipeline(PyObject* function, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
    if (function == nullptr) raise(PyExc_SystemError, "tensorb64: _configure_cuda was not called");
    PyObject* result =
        PyObject_Vectorcall(function, args, static_cast<std::size_t>(nargs), kwnames);
    if (result == nullptr) throw python_error{};
    return result;
}

// ---- from an array to rows -------------------------------------------------------------------

// The rows of an array: all dimensions but the last index rows (a 1-D array is one row, a 0-D
// one a row of one element). Leading dimensions merge where their strides allow, so that only a
// permuted N-D input needs the core's multi-dimensional row index (which points into `in`).
tb::strided_rows rows_of(input_array& in) {
    tb::strided_rows rows{};
    rows.data = in.data;
    rows.format = in.format;
    rows.rows = 1;
    rows.row_length = in.ndim == 0 ? 1 : in.shape[in.ndim - 1];
    rows.element_stride = in.ndim == 0 ? 0 : in.strides[in.ndim - 1];
    // Merge leading dimensions in place (in.shape/strides become the row index).
    std::size_t kept = 0;
    for (std::size_t d = 0; d + 1 < in.ndim; ++d) {
        rows.rows *= in.shape[d];  // cannot overflow: the elements exist in memory
        if (in.shape[d] == 1) continue;
        if (kept > 0 &&
            in.strides[kept - 1] == in.strides[d] * static_cast<std::ptrdiff_t>(in.shape[d])) {
            in.shape[kept - 1] *= in.shape[d];
            in.strides[kept - 1] = in.strides[d];
        } else {
            in.shape[kept] = in.shape[d];
            in.strides[kept] = in.strides[d];
            ++kept;
        }
    }
    if (rows.rows == 0 || rows.row_length == 0) rows.element_stride = 0;
    if (kept <= 1) {
        rows.row_stride = kept == 1 ? in.strides[0] : 0;
    } else {
        rows.row_dims = kept;
        rows.row_shape = in.shape;
        rows.row_strides = in.strides;
    }
    return rows;
}

// The whole array as one row, when all its dimensions merge into one (a C-contiguous array, or
// any evenly strided one); otherwise its rows, as rows_of gives them.
tb::strided_rows as_one_row(input_array& in) {
    std::size_t count = 1;
    std::ptrdiff_t stride = 0;
    bool merges = true;
    for (std::size_t d = in.ndim; d-- > 0;) {  // innermost first
        if (in.shape[d] == 1) continue;
        if (count == 1) {
            stride = in.strides[d];
        } else if (in.strides[d] != stride * static_cast<std::ptrdiff_t>(count)) {
            merges = false;
        }
        count *= in.shape[d];
    }
    if (!merges || count == 0) return rows_of(in);
    tb::strided_rows row{};
    row.data = in.data;
    row.rows = 1;
    row.row_length = count;
    row.element_stride = count == 1 ? 0 : stride;
    row.format = in.format;
    return row;
}

void check_convertible(const tb::strided_rows& source, tb::element_format target) {
    if (!tb::can_convert(source.format.type, target.type)) {
        raise(PyExc_ValueError, "cannot encode "s + tb::to_string(source.format.type) +
                                    " elements as " + tb::to_string(target.type));
    }
}

// The machine's physical memory in bytes (0 if unknown): an output larger than this cannot be
// made, and trying would end in the OOM killer rather than a MemoryError.
std::size_t physical_memory() {
    // Asked once: sysconf(_SC_PHYS_PAGES) is a system call, dearer than encoding a short row.
    static const std::size_t bytes = [] {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0 &&
            static_cast<std::size_t>(pages) <= SIZE_MAX / static_cast<std::size_t>(page)) {
            return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
        }
#endif
        return std::size_t{0};
    }();
    return bytes;
}

// rows x per_row bytes of output, or a MemoryError naming the size if that cannot exist.
std::size_t checked_total(std::size_t rows, std::size_t per_row, const char* what,
                          const char* unit = "rows") {
    const std::size_t limit = static_cast<std::size_t>(PY_SSIZE_T_MAX);
    const bool overflow = per_row > limit || (rows != 0 && per_row > limit / rows);
    const std::size_t total = overflow ? 0 : rows * per_row;
    const std::size_t memory = physical_memory();
    if (overflow || (memory != 0 && total > memory)) {
        const double bytes = static_cast<double>(rows) * static_cast<double>(per_row);
        char size[64];
        std::snprintf(size, sizeof size, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
        raise(PyExc_MemoryError,
              "the "s + what + " would take " + size + " (" + std::to_string(rows) + " " + unit +
                  "), more than this machine's memory" +
                  (memory != 0 ? " (" + std::to_string(memory >> 20) + " MiB)" : ""));
    }
    return total;
}

std::size_t row_text_length(const tb::strided_rows& source, tb::element_format target) {
    const std::size_t size = tb::dtype_size(target.type);
    std::size_t length = 0;
    if (source.row_length > SIZE_MAX / size ||
        !tb::encoded_size(source.row_length * size, &length)) {
        raise(PyExc_MemoryError,
              "a row of " + std::to_string(source.row_length) + " values is too long to encode");
    }
    return length;
}

void run_kernel(const tb::strided_rows& source, tb::element_format target, char* const* outputs,
                unsigned threads, tb::row_output output, std::size_t total) {
    gil_released_if released(total >= release_gil_above_bytes);
    tb::encode_rows(source, target, outputs, threads, output);
}

// One base64 str per row, written in place by the kernel.
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
    run_kernel(source, target, outputs.data(), threads, tb::row_output::base64, total);
    return list.release();
}

// The base64 str of all the rows' bytes end to end (C order).
PyObject* rows_to_one_str(const tb::strided_rows& source, tb::element_format target) {
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
    if (source.rows <= 1 || row_bytes % 3 == 0) {
        // Every row but the last ends on a whole base64 group: the rows' texts simply concatenate.
        const std::size_t row_text = row_bytes / 3 * 4;
        std::vector<char*> outputs(source.rows);
        for (std::size_t r = 0; r < source.rows; ++r) outputs[r] = out + r * row_text;
        run_kernel(source, target, outputs.data(), 1, tb::row_output::base64, length);
    } else {
        // Rows that end mid-group (a permuted N-D input whose rows are not a multiple of 3 bytes):
        // one temporary of the converted bytes, then their text. The only full-size temporary.
        std::vector<unsigned char> converted(bytes);
        std::vector<char*> outputs(source.rows);
        for (std::size_t r = 0; r < source.rows; ++r)
            outputs[r] = reinterpret_cast<char*>(converted.data()) + r * row_bytes;
        run_kernel(source, target, outputs.data(), 1, tb::row_output::bytes, bytes);
        tb::strided_rows flat{};
        flat.data = converted.data();
        flat.rows = 1;
        flat.row_length = bytes / size;
        flat.element_stride = static_cast<std::ptrdiff_t>(size);
        flat.format = {target.type, target.order};
        char* const one[] = {out};
        run_kernel(flat, target, one, 1, tb::row_output::base64, length);
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
    std::vector<char*> outputs(source.rows);
    for (std::size_t r = 0; r < source.rows; ++r) outputs[r] = data + r * row_bytes;
    run_kernel(source, target, outputs.data(), threads, tb::row_output::bytes, total);
    return body.release();
}

// ---- argument parsing for the fast entry points -------------------------------------------------

// The positional input and the keyword options of a METH_FASTCALL | METH_KEYWORDS call.
struct call_args {
    PyObject* x = nullptr;
    PyObject* dtype = nullptr;
    PyObject* byteorder = nullptr;
    PyObject* threads = nullptr;
    PyObject* float_format = nullptr;
};

// The keywords an entry point takes besides threads=.
enum class options { encoding, float_text };

void parse_call(const char* function, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                bool takes_threads, call_args* out, options taken = options::encoding) {
    static PyObject* const float_format_key = PyUnicode_InternFromString("float_format");
    static PyObject* const dtype_key = PyUnicode_InternFromString("dtype");
    static PyObject* const byteorder_key = PyUnicode_InternFromString("byteorder");
    static PyObject* const threads_key = PyUnicode_InternFromString("threads");
    if (nargs != 1) {
        raise(PyExc_TypeError,
              function + " takes exactly one positional argument (the embeddings), got "s +
                  std::to_string(nargs));
    }
    out->x = args[0];
    const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; ++i) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, i);
        PyObject* value = args[nargs + i];
        // Keyword names from a call site are interned: compare pointers first.
        const auto is = [key](PyObject* name) {
            return key == name || PyUnicode_Compare(key, name) == 0;
        };
        if (taken == options::float_text) {
            if (is(float_format_key)) {
                out->float_format = value;
                continue;
            }
            if (takes_threads && is(threads_key)) {
                out->threads = value;
                continue;
            }
            PyErr_Clear();
            raise(PyExc_TypeError, function + " got an unexpected keyword argument "s +
                                       repr_of(key) + "; it takes float_format= and threads=");
        }
        if (is(dtype_key)) {
            out->dtype = value;
        } else if (is(byteorder_key)) {
            out->byteorder = value;
        } else if (takes_threads && is(threads_key)) {
            out->threads = value;
        } else {
            PyErr_Clear();
            raise(PyExc_TypeError,
                  function + " got an unexpected keyword argument "s + repr_of(key) +
                      "; it takes dtype=, byteorder=" + (takes_threads ? " and threads=" : ""));
        }
    }
}

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

PyObject* encode_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        call_args call;
        parse_call("encode", args, nargs, kwnames, false, &call);
        const tb::element_format target{output_dtype(call.dtype), byte_order(call.byteorder)};
        input_array in;
        read_input(call.x, in);
        return rows_to_one_str(as_one_row(in), target);
    });
}

PyObject* encode_rows_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        call_args call;
        parse_call("encode_rows", args, nargs, kwnames, true, &call);
        const tb::element_format target{output_dtype(call.dtype), byte_order(call.byteorder)};
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in, device_inputs::left_to_the_pipeline))
            return call_pipeline(names.cuda_encode_rows, args, nargs, kwnames);
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
        call_args call;
        parse_call("encode_body", args, nargs, kwnames, true, &call);
        const tb::element_format target{output_dtype(call.dtype), byte_order(call.byteorder)};
        const unsigned threads = thread_count(call.threads);
        input_array in;
        read_input(call.x, in);
        if (in.ndim == 0)
            raise(PyExc_ValueError, "encode_body needs an input with at least one dimension");
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
        read_input(x, in);
        if (in.ndim == 0) raise(PyExc_ValueError, "embeddings need at least one dimension");
        const tb::strided_rows rows = rows_of(in);
        return Py_BuildValue("(nn)", static_cast<Py_ssize_t>(rows.rows),
                             static_cast<Py_ssize_t>(rows.row_length));
    });
}

// ---- the /v1/embeddings response body ------------------------------------------------------

// Parses the positional arguments (x, dtype, byteorder, head, tail, first_index, threads).
struct body_args {
    PyObject* x;
    PyObject* head;
    PyObject* tail;
    std::size_t first_index;
    unsigned threads;
};

body_args parse_body_args(const char* function, PyObject* const* args, Py_ssize_t nargs,
                          Py_ssize_t expected) {
    if (nargs != expected) {
        raise(PyExc_TypeError, function + " takes "s + std::to_string(expected) +
                                   " arguments, got " + std::to_string(nargs));
    }
    body_args parsed{args[0], args[nargs - 4], args[nargs - 3], 0, thread_count(args[nargs - 1])};
    if (!PyBytes_Check(parsed.head) || !PyBytes_Check(parsed.tail))
        raise(PyExc_TypeError, "head and tail must be bytes");
    parsed.first_index = PyLong_AsSize_t(args[nargs - 2]);
    if (parsed.first_index == static_cast<std::size_t>(-1) && PyErr_Occurred())
        throw python_error{};
    return parsed;
}

// One bytes object: `head` (the envelope up to and including `"data":[`), the data entries of
// every row written by the core, then `tail` (`]` and the rest of the envelope). Every size is
// checked before the one allocation; the GIL is released while the core writes.
PyObject* response_body_base64_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        const body_args call = parse_body_args("_response_body_base64", args, nargs, 7);
        const tb::element_format target{output_dtype(args[1]), byte_order(args[2])};
        input_array in;
        read_input(call.x, in);
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
                                        call.threads);
        }
        std::memcpy(end, PyBytes_AS_STRING(call.tail), tail_size);
        return body.release();
    });
}

// Raises the ValueError for a row that has a NaN or an infinity.
[[noreturn]] void refuse_non_finite(const tb::float_text_result& result) {
    raise(PyExc_ValueError,
          "row " + std::to_string(result.row) + ", column " + std::to_string(result.column) +
              " is NaN or infinite: NaN and infinity have no JSON text (json.dumps with "
              "allow_nan=False refuses them too); use encoding_format='base64' for such values");
}

PyObject* check_finite_entry(PyObject*, PyObject* x) {
    return guarded([&] {
        input_array in;
        read_input(x, in);
        const tb::float_text_result result = tb::find_non_finite(rows_of(in));
        if (!result.finite) refuse_non_finite(result);
        Py_RETURN_NONE;
    });
}

PyObject* check_threads_entry(PyObject*, PyObject* threads) {
    return guarded([&] { return PyLong_FromUnsignedLong(thread_count(threads)); });
}

// Each row's JSON text as one bytes object (made at its bound, then trimmed).
PyObject* json_rows_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        call_args call;
        parse_call("json_rows", args, nargs, kwnames, true, &call, options::float_text);
        const tb::float_format format = float_format(call.float_format);
        const unsigned threads = thread_count(call.threads);
        input_array in;
        if (!read_input(call.x, in, device_inputs::left_to_the_pipeline))
            return call_pipeline(names.cuda_json_rows, args, nargs, kwnames);
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
            result = tb::write_float_rows(source, format, outputs.data(), lengths.data(), threads);
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

// head + the data entries of float rows + tail, in one bytes object made at its bound and trimmed
// (the pages past the text are never touched, so they cost address space, not memory).
PyObject* response_body_float_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        const body_args call = parse_body_args("_response_body_float", args, nargs, 6);
        const tb::float_format format = float_format(args[1]);
        input_array in;
        read_input(call.x, in);
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
                                          call.threads);
        }
        if (!result.finite) refuse_non_finite(result);
        std::memcpy(end, PyBytes_AS_STRING(call.tail), tail_size);
        body = owner.release();
        if (_PyBytes_Resize(&body, static_cast<Py_ssize_t>(end + tail_size - out)) != 0)
            throw python_error{};
        return body;
    });
}

PyMethodDef fast_methods[] = {
    {"encode", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(encode_entry)),
     METH_FASTCALL | METH_KEYWORDS,
     "encode(x, *, dtype='float32', byteorder='little')\n--\n\n"
     "The whole input, flattened in C order, as one base64 str."},
    {"encode_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(encode_rows_entry)),
     METH_FASTCALL | METH_KEYWORDS,
     "encode_rows(x, *, dtype='float32', byteorder='little', threads=1)\n--\n\n"
     "One base64 str per row: a 1-D input is one row; an N-D input has all its leading dimensions "
     "as rows."},
    {"row_bytes", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(row_bytes_entry)),
     METH_FASTCALL | METH_KEYWORDS,
     "row_bytes(x, *, dtype='float32', byteorder='little', threads=1)\n--\n\n"
     "(body, rows, row_length): every row's converted bytes end to end, and the rows' shape."},
    {"_response_body_base64",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(response_body_base64_entry)),
     METH_FASTCALL,
     "_response_body_base64(x, dtype, byteorder, head, tail, first_index, threads, /)\n--\n\n"
     "head + the data entries of every row as base64 + tail, in one bytes object."},
    {"json_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(json_rows_entry)),
     METH_FASTCALL | METH_KEYWORDS,
     "json_rows(x, *, float_format='repr', threads=1)\n--\n\n"
     "Each row's JSON array text, as bytes: exactly json.dumps(row.tolist(), separators=(',', "
     "':')) in 'repr' "
     "mode; the fewest digits that read back to the same float32 in 'shortest' mode."},
    {"_response_body_float",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(response_body_float_entry)),
     METH_FASTCALL,
     "_response_body_float(x, float_format, head, tail, first_index, threads, /)\n--\n\n"
     "head + the data entries of every row as JSON number arrays + tail, in one bytes object."},
    {"_check_finite", check_finite_entry, METH_O,
     "_check_finite(x, /)\n--\n\nThe ValueError naming the row and column of x's first NaN or "
     "infinity, if any."},
    {"_check_threads", check_threads_entry, METH_O,
     "_check_threads(threads, /)\n--\n\nthreads as an int, or the ValueError every entry point "
     "raises for it."},
    {"row_shape", row_shape_entry, METH_O,
     "row_shape(x, /)\n--\n\n(rows, row_length) of an input as the encoders see its rows."},
    {nullptr, nullptr, 0, nullptr},
};

std::vector<std::string> available_levels() {
    std::vector<std::string> levels;
    for (tb::simd_level level : tb::available_simd_levels())
        levels.emplace_back(tb::to_string(level));
    return levels;
}

void keep(PyObject*& slot, const py::object& value) {
    Py_XDECREF(slot);
    slot = value.is_none() ? nullptr : value.inc_ref().ptr();
}

}  // namespace

// ==== decode: strict base64 (or a binary body's raw bytes) into a caller's buffer ============
// Self-contained: the Python layer (src/tensorb64/_decode.py) sizes the output with
// decoded_length, allocates it once, and decode_into fills it. Element types and byte orders are
// the core's enum values (the registry's codes: DTYPES, and 0/1 for little/big).
namespace decode_binding {

// A held buffer, released (with the GIL) when this goes.
struct held_buffer {
    Py_buffer view{};
    bool held = false;
    held_buffer() = default;
    held_buffer(const held_buffer&) = delete;
    held_buffer& operator=(const held_buffer&) = delete;
    ~held_buffer() {
        if (held) PyBuffer_Release(&view);
    }
};

// The characters (or raw bytes) of a str or bytes-like argument, read in place. A str that is
// not ASCII cannot be base64: its first bad character is reported, named as the code point.
struct input_text {
    const char* data = nullptr;
    std::size_t size = 0;
    held_buffer buffer;
};

[[noreturn]] void refuse_non_ascii(PyObject* text, tensorb64::dtype stored) {
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
    const tensorb64::decode_result r =
        tensorb64::check_base64(marked.data(), marked.size(), stored);
    const auto at = static_cast<Py_ssize_t>(r.offset);
    if (r.status == tensorb64::decode_status::bad_character && r.character == 0x80) {
        char code[16];
        std::snprintf(code, sizeof code, "U+%04X",
                      static_cast<unsigned>(PyUnicode_READ(kind, data, at)));
        const py::str character(
            py::reinterpret_steal<py::object>(PyUnicode_Substring(text, at, at + 1)));
        throw py::value_error("invalid base64: non-ASCII character " +
                              py::repr(character).cast<std::string>() + " (" + code +
                              ") at offset " + std::to_string(r.offset) +
                              " (the alphabet is A-Z, a-z, 0-9, '+' and '/', with '=' padding)");
    }
    throw py::value_error(tensorb64::to_string(r));
}

void read_text(const py::handle& object, tensorb64::dtype stored, bool base64, input_text* text) {
    PyObject* o = object.ptr();
    if (PyUnicode_Check(o)) {
        if (!base64) throw py::type_error("expected bytes, got str");
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(o) != 0) throw py::error_already_set();  // a legacy str, before 3.12
#endif
        if (!PyUnicode_IS_ASCII(o)) refuse_non_ascii(o, stored);
        text->data = static_cast<const char*>(PyUnicode_DATA(o));  // ASCII: one byte per character
        text->size = static_cast<std::size_t>(PyUnicode_GET_LENGTH(o));
        return;
    }
    if (PyObject_GetBuffer(o, &text->buffer.view, PyBUF_SIMPLE) != 0) {
        if (PyObject_CheckBuffer(o)) throw py::error_already_set();  // e.g. not contiguous: say so
        PyErr_Clear();
        throw py::type_error(
            std::string(base64 ? "expected a base64 str or bytes" : "expected bytes") + ", got " +
            Py_TYPE(o)->tp_name);
    }
    text->buffer.held = true;
    text->data = static_cast<const char*>(text->buffer.view.buf);
    text->size = static_cast<std::size_t>(text->buffer.view.len);
}

tensorb64::dtype dtype_of(int code) {
    const auto type = static_cast<tensorb64::dtype>(code);
    if (code < 0 || code > 255 || std::string_view(tensorb64::to_string(type)) == "unknown") {
        throw py::value_error("unknown element type code " + std::to_string(code));
    }
    return type;
}

tensorb64::byte_order byte_order_of(int code) {
    if (code != static_cast<int>(tensorb64::byte_order::little) &&
        code != static_cast<int>(tensorb64::byte_order::big)) {
        throw py::value_error("unknown byte order code " + std::to_string(code));
    }
    return static_cast<tensorb64::byte_order>(code);
}

void check(const tensorb64::decode_result& result) {
    if (result.status != tensorb64::decode_status::ok)
        throw py::value_error(tensorb64::to_string(result));
}

void add_functions(py::module_& m) {
    m.def(
        "decoded_length",
        [](const py::object& data, int dtype, bool base64) {
            const tensorb64::dtype stored = dtype_of(dtype);
            input_text text;
            read_text(data, stored, base64, &text);
            std::size_t elements = 0;
            if (base64) {
                check(tensorb64::decoded_elements(text.data, text.size, stored, &elements));
            } else {
                const std::size_t size = tensorb64::dtype_size(stored);
                if (text.size % size != 0) {
                    tensorb64::decode_result r;
                    r.status = tensorb64::decode_status::not_whole_values;
                    r.offset = text.size;
                    r.stored = stored;
                    check(r);
                }
                elements = text.size / size;
            }
            return elements;
        },
        py::arg("data"), py::arg("dtype"), py::arg("base64") = true,
        "The number of elements of type `dtype` (a DTYPES value) that `data` holds: strict "
        "base64 text (str or bytes), judged by its length and padding, or with base64=False raw "
        "stored bytes. ValueError naming what is wrong, and where.");
    m.def(
        "decode_into",
        [](const py::object& data, const py::object& out, int dtype, int byteorder, bool widen,
           bool base64) {
            const tensorb64::element_format stored{dtype_of(dtype), byte_order_of(byteorder)};
            input_text text;
            read_text(data, stored.type, base64, &text);
            held_buffer output;
            if (PyObject_GetBuffer(out.ptr(), &output.view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) !=
                0) {
                throw py::error_already_set();
            }
            output.held = true;
            const auto out_bytes = static_cast<std::size_t>(output.view.len);
            tensorb64::decode_result result;
            {
                gil_released_if released(text.size >= release_gil_above_bytes);
                result = base64 ? tensorb64::decode_base64(text.data, text.size, stored, widen,
                                                           output.view.buf, out_bytes)
                                : tensorb64::convert_elements(text.data, text.size, stored, widen,
                                                              output.view.buf, out_bytes);
            }
            check(result);
        },
        py::arg("data"), py::arg("out"), py::arg("dtype"), py::arg("byteorder"), py::arg("widen"),
        py::arg("base64") = true,
        "Decodes `data` (strict base64, or with base64=False raw stored bytes) into the writable "
        "C-contiguous buffer `out`, which must hold exactly its values: the stored elements in "
        "host byte order, or with widen their float32 values. ValueError naming what is wrong.");
}

}  // namespace decode_binding
// ==== end of decode ===========================================================================

// mod_gil_not_used: on a free-threaded CPython (3.13t, 3.14t) importing this module leaves the
// GIL off. Its shared state is safe without the GIL: the registries are handed over once at import
// (and torch's under the Python layer's lock), the dispatch's level is an atomic pointer, the
// thread pool and the CUDA staging pool take their own locks (tests/test_free_threading.py).
PYBIND11_MODULE(_native, m, py::mod_gil_not_used()) {
    m.doc() = "The C++ core of tensorb64; use the functions of the tensorb64 package instead.";
    m.attr("__version__") = TENSORB64_VERSION;

    // Fail at import, with the reason, when TENSORB64_SIMD names a level this CPU lacks.
    try {
        tb::active_simd_level();
    } catch (const std::runtime_error& e) {
        throw py::import_error(e.what());
    }
    if (PyModule_AddFunctions(m.ptr(), fast_methods) != 0) throw py::error_already_set();

    // The core's element types, by name, for the Python layer's registry.
    py::dict dtypes;
    for (int code = 0; code <= static_cast<int>(tb::dtype::bool8); ++code) {
        dtypes[tb::to_string(static_cast<tb::dtype>(code))] = code;
    }
    m.attr("DTYPES") = dtypes;
    m.attr("HOST_BYTE_ORDER") = tb::host_byte_order == tb::byte_order::little ? "little" : "big";

    m.def(
        "_configure",
        [](const py::dict& output_dtypes, const py::dict& byteorders, const py::dict& float_formats,
           const py::object& ndarray_type, const py::object& readable) {
            keep(names.output_dtypes, output_dtypes);
            keep(names.byteorders, byteorders);
            keep(names.float_formats, float_formats);
            names.float_format_names = joined_keys(float_formats.ptr(), true);
            keep(names.ndarray_type, ndarray_type);
            keep(names.readable, readable);
            names.dtype_names = joined_keys(output_dtypes.ptr(), false);
            names.byteorder_names = joined_keys(byteorders.ptr(), true);
        },
        py::arg("output_dtypes"), py::arg("byteorders"), py::arg("float_formats"),
        py::arg("ndarray_type"), py::arg("readable"),
        "Hands the binding the Python layer's registry of names and its input converter (once, at "
        "import).");
    m.def(
        "_configure_cuda",
        [](const py::object& encode_rows, const py::object& json_rows) {
            keep(names.cuda_encode_rows, encode_rows);
            keep(names.cuda_json_rows, json_rows);
        },
        py::arg("encode_rows"), py::arg("json_rows"),
        "Hands the binding the staging pipeline's encode_rows and json_rows, which take the calls "
        "of those entry points whose input is a torch.Tensor on a CUDA device.");
    m.def(
        "_configure_torch",
        [](const py::object& tensor_type, const py::dict& torch_dtypes,
           const py::object& exchange_api) {
            keep(names.torch_dtypes, torch_dtypes);
            keep(names.tensor_type, tensor_type);
            // Taken only for the major version this file declares, from 1.2 (where the exchange
            // API appeared) on; otherwise the tensor's methods are read.
            torch_exchange = nullptr;
            if (!exchange_api.is_none() &&
                PyCapsule_IsValid(exchange_api.ptr(), dlpack::capsule_name)) {
                const auto* api = static_cast<const dlpack::exchange_api*>(
                    PyCapsule_GetPointer(exchange_api.ptr(), dlpack::capsule_name));
                if (api != nullptr && api->api_version.major == 1 && api->api_version.minor >= 2 &&
                    api->dltensor_from_py_object_no_sync != nullptr) {
                    keep(names.torch_exchange_capsule, exchange_api);
                    torch_exchange = api;
                }
            }
            PyErr_Clear();
            return torch_exchange != nullptr;
        },
        py::arg("tensor_type"), py::arg("torch_dtypes"), py::arg("exchange_api"),
        "Tells the binding torch.Tensor, the core code of each torch dtype it reads in place, and "
        "torch's DLPack exchange API capsule (or None); True if tensors are read through that "
        "API.");
    m.def(
        "simd_level", [] { return std::string(tb::to_string(tb::active_simd_level())); },
        "The SIMD level of the kernel in use.");
    m.def("available_simd_levels", &available_levels,
          "The SIMD levels this CPU can run, lowest first.");
    m.def(
        "_set_simd_level",
        [](const std::string& name) {
            tb::simd_level level;
            if (!tb::parse_simd_level(name, &level)) {
                throw py::value_error("unknown SIMD level '" + name +
                                      "'; expected scalar, avx2, avx512 or neon");
            }
            try {
                tb::force_simd_level(level);
            } catch (const std::invalid_argument& e) {
                throw py::value_error(e.what());
            }
        },
        py::arg("name"), "Switches every later call to the named SIMD level (for tests).");

    decode_binding::add_functions(m);  // decode_into, decoded_length
}
