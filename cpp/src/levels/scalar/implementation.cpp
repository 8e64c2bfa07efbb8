// The scalar level: portable code with the baseline flags, run on every CPU, and the reference
// every other level's functions must equal.
#include "base64/row_encoder.hpp"
#include "common/scalar_ops.hpp"
#include "float_text/float_text.hpp"
#include "levels/scalar/scalar.hpp"

namespace tensorb64 {

void encode_rows_scalar(const row_job& job) noexcept { encode_rows_with<scalar_ops>(job); }

extern const float_text_writers float_text_writers_scalar{
    write_values_f32, write_values_f64, write_values_orjson_f32, write_values_orjson_f64};

constexpr implementation scalar_implementation{simd_level::scalar,
                                               "scalar",
                                               0,
                                               encode_rows_scalar,
                                               &float_text_writers_scalar,
                                               detail::parse_number_row_scalar,
                                               detail::parse_number_row_double_scalar,
                                               decode_base64_groups_scalar};

}  // namespace tensorb64
