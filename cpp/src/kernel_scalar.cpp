// The portable kernel: baseline flags only, runs on every CPU.
#include "kernels.hpp"
#include "row_encoder.hpp"
#include "scalar_ops.hpp"

namespace tensorb64 {

void encode_rows_scalar(const row_job& job) noexcept { encode_rows_with<scalar_ops>(job); }

}  // namespace tensorb64
