// DLPack's C exchange API (DLPack 1.2+, offered by torch as the capsule
// `torch.Tensor.__dlpack_c_exchange_api__`): one C call fills a DLTensor (device, dtype, shape,
// strides) where reading them through the tensor's methods takes five Python calls. The layout
// is the DLPack standard's (dlpack.h, major version 1), declared here so that the package needs
// no torch or dlpack headers.
#pragma once

#include <cstdint>

#include "tensorb64/tensorb64.hpp"

namespace binding::dlpack {

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
inline int core_code(data_type t) {
    namespace tb = tensorb64;
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

}  // namespace binding::dlpack
