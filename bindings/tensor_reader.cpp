#include "tensor_reader.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "dlpack.hpp"
#include "entry_points.hpp"
#include "names.hpp"

namespace binding {

namespace {

// What the reader knows of torch, from _register_tensor_type (once torch is loaded): its tensor
// type, the core code of each of its dtypes, its exchange API. `import torch` may run in one
// thread while others are inside calls (on a free-threaded build nothing orders them), so each
// registration is a whole new registry published through one atomic pointer, and none is ever
// freed: a call sees no registry or all of one, never a half-written or a released one.
struct tensor_registry {
    PyObject* tensor_type = nullptr;  // strong references, kept for the process
    PyObject* dtypes = nullptr;       // dict: dtype object -> core dtype code
    PyObject* exchange_capsule = nullptr;
    const dlpack::exchange_api* exchange = nullptr;
};
std::atomic<const tensor_registry*> known{nullptr};

// Non-null once is_registered_tensor has said yes.
const tensor_registry& registry() { return *known.load(std::memory_order_acquire); }

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
        if (stride == 0) continue;  // a broadcast dimension reads nothing more, however long
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

// The core code of a tensor's dtype object, or -1 where the core does not read it in place.
int tensor_dtype_code(PyObject* dtype) {
    PyObject* code = PyDict_GetItemWithError(registry().dtypes, dtype);  // borrowed
    if (code == nullptr) {
        PyErr_Clear();  // an unhashable dtype is just an unknown one
        return -1;
    }
    return static_cast<int>(PyLong_AsLong(code));
}

// Element strides beyond this cannot address real memory (and their byte strides could overflow).
constexpr std::int64_t max_stride = std::numeric_limits<std::ptrdiff_t>::max() / 16;

[[noreturn]] void strides_out_of_range() {
    raise(PyExc_ValueError,
          "the tensor's shape and strides reach outside its storage (they are out of range)");
}

// The tensor's element type, shape, strides (in bytes) and address into `in`, through torch's
// DLPack exchange API: false (no error set) where it cannot say, or says something the core does
// not read in place (another device or dtype); the tensor's methods are asked then.
bool describe_by_exchange(const dlpack::exchange_api& exchange, PyObject* x, input_array& in) {
    dlpack::tensor dl{};
    if (exchange.dltensor_from_py_object_no_sync(x, &dl) != 0) {
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
        ref dtype(PyObject_GetAttr(x, interned.dtype));
        if (!dtype || tensor_dtype_code(dtype.get()) != code) {
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
    const dlpack::exchange_api* exchange = registry().exchange;
    if (exchange != nullptr && describe_by_exchange(*exchange, x, in)) return true;
    ref dtype(PyObject_GetAttr(x, interned.dtype));
    const int code = dtype ? tensor_dtype_code(dtype.get()) : -1;
    ref is_cpu(PyObject_GetAttr(x, interned.is_cpu));
    ref shape(PyObject_GetAttr(x, interned.shape));
    ref strides(call_method(x, interned.stride));
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

}  // namespace

// Exactly the registered type: a subclass's methods may say anything.
bool is_registered_tensor(PyObject* x) {
    const tensor_registry* known_torch = known.load(std::memory_order_acquire);
    return known_torch != nullptr &&
           Py_TYPE(x) == reinterpret_cast<PyTypeObject*>(known_torch->tensor_type);
}

bool read_tensor(PyObject* x, input_array& in) {
    // The storage first, and everything else after it (see test_storage_swapped_mid_call):
    // holding it keeps the memory alive for the whole call, even if another thread gives the
    // tensor new storage meanwhile (t.set_(), which torch runs without the GIL). Every byte read
    // is checked against the storage held, so whatever the race, it lies in memory this call
    // holds.
    ref storage(call_method(x, interned.untyped_storage));
    in.data = nullptr;
    if (!storage || !describe_tensor(x, in)) return false;
    // A negative-bit view (x.conj().imag) stores its values negated: the Python layer resolves it.
    ref negated(call_method(x, interned.is_neg));
    ref storage_address(call_method(storage.get(), interned.data_ptr));
    ref storage_bytes(call_method(storage.get(), interned.nbytes));
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
        ref elements(call_method(x, interned.storage_offset));
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

namespace {

// The reader reads `tensor_type` objects (exactly that type) in place: their dtype objects are
// `getattr(dtypes, torch_name)` for each element type of the table (those `dtypes` has), and
// `exchange_api` is torch's DLPack exchange API capsule, or None. True if tensors are read
// through that API.
PyObject* register_tensor_type_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 3) {
            raise(PyExc_TypeError,
                  "_register_tensor_type takes 3 arguments (tensor_type, dtypes, exchange_api)");
        }
        ref codes(checked(PyDict_New()));
        for (std::size_t i = 0; i < element_type_count; ++i) {
            ref dtype(PyObject_GetAttrString(args[1], element_types[i].torch_name));
            if (!dtype) {  // uint16/32/64 exist from torch 2.3 on
                PyErr_Clear();
                continue;
            }
            ref code(checked(PyLong_FromSize_t(i)));
            if (PyDict_SetItem(codes.get(), dtype.get(), code.get()) != 0) throw python_error{};
        }
        auto* made = new tensor_registry;  // never freed: see tensor_registry
        made->dtypes = codes.release();
        made->tensor_type = Py_NewRef(args[0]);
        // Taken only for the major version dlpack.hpp declares, from 1.2 (where the exchange API
        // appeared) on; otherwise the tensor's methods are read.
        PyObject* capsule = args[2];
        if (capsule != Py_None && PyCapsule_IsValid(capsule, dlpack::capsule_name)) {
            const auto* api = static_cast<const dlpack::exchange_api*>(
                PyCapsule_GetPointer(capsule, dlpack::capsule_name));
            if (api != nullptr && api->api_version.major == 1 && api->api_version.minor >= 2 &&
                api->dltensor_from_py_object_no_sync != nullptr) {
                made->exchange_capsule = Py_NewRef(capsule);
                made->exchange = api;
            }
        }
        PyErr_Clear();
        known.store(made, std::memory_order_release);
        return PyBool_FromLong(made->exchange != nullptr);
    });
}

}  // namespace

PyMethodDef tensor_methods[] = {
    {"_register_tensor_type", as_method(register_tensor_type_entry), METH_FASTCALL,
     "_register_tensor_type(tensor_type, dtypes, exchange_api, /)\n--\n\n"
     "Has the reader read tensor_type objects (torch.Tensor) in place; True if through the "
     "DLPack exchange API capsule given."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
