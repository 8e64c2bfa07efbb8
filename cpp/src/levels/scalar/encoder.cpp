// The portable kernel: baseline flags only, runs on every CPU.
#include "float_text/float_text.hpp"
#include "dispatch/implementations.hpp"
#include "base64/row_encoder.hpp"
#include "common/scalar_ops.hpp"

namespace tensorb64 {

namespace {
void encode_rows_scalar(const row_job& job) noexcept { encode_rows_with<scalar_ops>(job); }
}  // namespace

encode_rows_fn scalar_kernel() noexcept { return encode_rows_scalar; }

const float_text_writers* scalar_float_text() noexcept {
    static constexpr float_text_writers writers{write_values_f32, write_values_f64,
                                                write_values_orjson_f32};
    return &writers;
}

}  // namespace tensorb64
