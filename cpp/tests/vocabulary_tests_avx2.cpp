// The avx2 level's vector vocabulary against its contract (vocabulary_checks.hpp), compiled with
// the level's flags (cpp/CMakeLists.txt); where the target does not build the level, a stub.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "check.hpp"
#include "levels/avx2/vocabulary.hpp"

#if TENSORB64_COMPILES_AVX2
namespace tensorb64 {
namespace avx2 {
#include "vocabulary_checks.hpp"
}  // namespace avx2
}  // namespace tensorb64

// The failed comparisons, or -1 where this build has no avx2 level.
long vocabulary_checks_avx2() { return tensorb64::avx2::check_vocabulary("avx2"); }
#else
long vocabulary_checks_avx2() { return -1; }
#endif
