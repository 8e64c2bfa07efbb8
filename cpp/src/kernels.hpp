// The kernel entry points: one per instruction set, each in its own translation unit compiled
// with that set's flags, all with the same signature. dispatch.cpp picks one at run time.
#pragma once

#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {

// A batch of rows to encode; outputs[r] receives row r (see encode_rows in the public API).
struct row_job {
    strided_rows source;
    element_format target;
    char* const* outputs;
    row_output output;
};

using encode_rows_fn = void (*)(const row_job& job) noexcept;

void encode_rows_scalar(const row_job& job) noexcept;
#if defined(TENSORB64_HAVE_X86_KERNELS)
void encode_rows_avx2(const row_job& job) noexcept;
void encode_rows_avx512(const row_job& job) noexcept;
#endif
#if defined(TENSORB64_HAVE_NEON_KERNEL)
void encode_rows_neon(const row_job& job) noexcept;
#endif

}  // namespace tensorb64
