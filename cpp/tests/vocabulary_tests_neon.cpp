// The neon level's vector vocabulary against its contract (vocabulary_checks.hpp), compiled with
// the level's flags (cpp/CMakeLists.txt); where the target does not build the level, a stub.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "check.hpp"
#include "levels/neon/vocabulary.hpp"

#if TENSORB64_COMPILES_NEON
namespace tensorb64 {
namespace neon {
#include "vocabulary_checks.hpp"
}  // namespace neon
}  // namespace tensorb64

// The failed comparisons, or -1 where this build has no neon level.
long vocabulary_checks_neon() { return tensorb64::neon::check_vocabulary("neon"); }
#else
long vocabulary_checks_neon() { return -1; }
#endif
