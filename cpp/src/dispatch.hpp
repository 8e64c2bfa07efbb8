// Internal: the kernel chosen by dispatch.cpp.
#pragma once

#include "kernels.hpp"

namespace tensorb64 {

// The entry point of the active SIMD level (chosen on first use; see active_simd_level).
encode_rows_fn active_kernel();

}  // namespace tensorb64
