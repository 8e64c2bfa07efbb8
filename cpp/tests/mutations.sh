#!/usr/bin/env bash
# Mutation check of the SIMD kernels' skeletons, the float-text writers and the reading kernels (the
# number-row parsers and the base64 group decoder): each mutation below (one source line changed,
# a bug that could have been written) is made in a copy of cpp/, the tests it should fail are built
# and run, and the mutation must make them fail. Prints each mutation with the test that caught it, or
# SURVIVED; exits non-zero if any survived.
#
#   cpp/tests/mutations.sh [native|aarch64]      (default native: the x86 levels, natively;
#                                                 aarch64: the neon level, under qemu-aarch64)
#   ONLY=TEXT cpp/tests/mutations.sh ...           only the mutations of files whose path holds TEXT
#
# The tests run: float_text_tests --quick (every level's writers against the scalar ones),
# vocabulary_tests (every operation against its model), number_parser_tests (every level's row
# parsers against the scalar one and from_chars), body_reader_tests (every level's base64 group
# decoder against the scalar one), core_tests --quick, and under qemu the neon slices of float_text_exhaustive that CTest declares there. A mutation the quick tests miss but the
# exhaustive runs would catch is listed as SURVIVED: it says the quick tests are too thin there.
set -euo pipefail
target="${1:-native}"
cpp="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tensorb64-mutations.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$cpp" "$work/cpp"
generic=src/levels/generic

# file | the text replaced | its replacement | targets (native, aarch64 or both)
mutations=(
  "$generic/float_text_shortest.hpp|splat32(6) - x.h32|splat32(5) - x.h32|both"
  "$generic/float_text_shortest.hpp|integral + where32(rounds_up, splat32(1))|integral + where32(rounds_up, splat32(2))|both"
  "$generic/float_text_shortest.hpp|select32(above_in, below + splat32(10),|select32(above_in, below + splat32(9),|both"
  "$generic/float_text_shortest.hpp|cb - select32(x.irregular, one, splat32(2))|cb - select32(x.irregular, splat32(2), one)|both"
  "$generic/float_text_shortest.hpp|splat32(static_cast<std::uint32_t>(4 * i)) + byte_length32(quads[i])|splat32(static_cast<std::uint32_t>(4 * i - 1)) + byte_length32(quads[i])|both"
  "$generic/float_text_shortest.hpp|greater32(splat32(kFloatOne - kShortestLeast),|greater32(splat32(kFloatOne - kShortestLeast + 0x800000),|native"
  "$generic/float_text_repr.hpp|const u32x right = shift_left32<2>(power_high) \| shift_right32<30>(power_low);|const u32x right = shift_left32<3>(power_high) \| shift_right32<29>(power_low);|both"
  "$generic/float_text_repr.hpp|const lane_mask is17 = greater(digits, splat64(9999999999999999ull));|const lane_mask is17 = greater(digits, splat64(999999999999999ull));|both"
  "$generic/float_text_repr.hpp|const u32x lead = shift_right32<25>(mul_high32(high9, splat32(1441151881u)));|const u32x lead = shift_right32<24>(mul_high32(high9, splat32(1441151881u)));|both"
  "$generic/float_text_repr.hpp|x.k + splat32(15) + narrow32(halves[0].is17, halves[1].is17)|x.k + splat32(15) + narrow32(halves[1].is17, halves[0].is17)|both"
  "$generic/float_text_texts.hpp|words[i] = words[i] ^ where32(eq32(word, splat32(static_cast<std::uint32_t>(i))), comma);|words[i] = words[i] ^ where32(eq32(word, splat32(static_cast<std::uint32_t>(i + 1))), comma);|both"
  "$generic/float_text_texts.hpp|const u32x at = sign + splat32(1) - d.e10;|const u32x at = sign + splat32(2) - d.e10;|both"
  "$generic/float_text_texts.hpp|store_zip32(t->words[Quads / 2], words[Quads], ascii);|store_zip32(t->words[Quads / 2], ascii, words[Quads]);|both"
  "$generic/float_text_writers.hpp|static constexpr int kFixedMin = Orjson ? -5 : -4;|static constexpr int kFixedMin = Orjson ? -4 : -4;|both"
  "$generic/float_text_writers.hpp|const u64x narrow_bits = splat64((std::uint64_t{1} << 29) - 1);|const u64x narrow_bits = splat64((std::uint64_t{1} << 28) - 1);|both"
  "$generic/float_text_writers.hpp|    for (; i < n; i += kGroup)|    for (; i + 1 < n; i += kGroup)|both"
  "src/levels/avx512/float_text.cpp|first[h].v, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), second[h].v);|first[h].v, _mm512_setr_epi64(4, 12, 5, 13, 7, 14, 6, 15), second[h].v);|native"
  "src/levels/avx512/float_text.cpp|greater_signed32(e10, splat32(static_cast<std::uint32_t>(Text::kFixedMin - 1))));|greater_signed32(e10, splat32(static_cast<std::uint32_t>(Text::kFixedMin))));|native"
  "src/levels/avx2/vocabulary.hpp|return {_mm256_blend_epi32(first.v, _mm256_slli_epi64(second.v, 32), 0xaa)};|return {_mm256_blend_epi32(first.v, _mm256_slli_epi64(second.v, 32), 0xa8)};|native"
  "src/levels/avx2/vocabulary.hpp|_mm256_permutevar8x32_epi32(second.v, low), 0x20)};|_mm256_permutevar8x32_epi32(second.v, low), 0x02)};|native"
  "src/levels/neon/vocabulary.hpp|const uint32x4_t bias = vdupq_n_u32(39);|const uint32x4_t bias = vdupq_n_u32(40);|aarch64"
  "src/levels/neon/vocabulary.hpp|vst2q_u32(q + 8, (uint32x4x2_t{{a.v[1], b.v[1]}}));|vst2q_u32(q + 8, (uint32x4x2_t{{b.v[1], a.v[1]}}));|aarch64"
  # the reading kernels
  "$generic/base64_groups.hpp|                         ? 0x80|                         ? 0x40|both"
  "src/levels/avx2/base64_decoder.cpp|const __m256i pack_both = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);|const __m256i pack_both = _mm256_setr_epi32(0, 1, 2, 4, 6, 5, 3, 7);|native"
  "src/levels/neon/base64_decoder.cpp|bytes.val[1] = vsliq_n_u8(vshrq_n_u8(c, 2), b, 4);|bytes.val[1] = vsliq_n_u8(vshrq_n_u8(c, 3), b, 4);|aarch64"
  "src/levels/neon/base64_decoder.cpp|return !any_high_bit(*values \| characters);|return !any_high_bit(*values);|aarch64"
  "$generic/number_rows.hpp|? 31 - shape.point[0] : 0|? 30 - shape.point[0] : 0|both"
  "$generic/number_rows.hpp|fractions \|= std::uint64_t{15 - at} << (8 * i);|fractions \|= std::uint64_t{14 - at} << (8 * i);|both"
  "$generic/number_rows.hpp|fractions \|= std::uint64_t{length - 2 - minus} << (8 * i);|fractions \|= std::uint64_t{length - 1 - minus} << (8 * i);|both"
  "$generic/number_rows.hpp|const bool plain = (word & 0xffffu) == ('0' \| '.' << 8);|const bool plain = (word & 0xffu) == '0';|both"
)

build="$work/build"
config=(-DCMAKE_BUILD_TYPE=Release -DTENSORB64_BUILD_TESTS=ON)
run=()
if [[ $target == aarch64 ]]; then
  config+=(-DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DCMAKE_SYSTEM_NAME=Linux
           -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_EXE_LINKER_FLAGS=-static
           -DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64)
  run=(qemu-aarch64)
fi
command -v ninja >/dev/null && config+=(-G Ninja)
cmake -S "$work/cpp" -B "$build" "${config[@]}" > "$work/configure.log"
programs=(float_text_tests vocabulary_tests float_text_exhaustive number_parser_tests body_reader_tests core_tests)
cmake --build "$build" -j "${JOBS:-2}" --target "${programs[@]}" > "$work/build.log"

# The tests a mutation must fail: the first that does is named.
caught_by() {
  if ! "${run[@]}" "$build/float_text_tests" --quick > "$work/out.txt" 2>&1; then
    echo float_text_tests; return
  fi
  if ! "${run[@]}" "$build/vocabulary_tests" > "$work/out.txt" 2>&1; then
    echo vocabulary_tests; return
  fi
  if ! "${run[@]}" "$build/number_parser_tests" 200000 > "$work/out.txt" 2>&1; then
    echo number_parser_tests; return
  fi
  if ! "${run[@]}" "$build/body_reader_tests" > "$work/out.txt" 2>&1; then
    echo body_reader_tests; return
  fi
  if ! "${run[@]}" "$build/core_tests" --quick > "$work/out.txt" 2>&1; then
    echo "core_tests --quick"; return
  fi
  if [[ $target == aarch64 ]] &&
     ! (cd "$build" && TENSORB64_TEST_TIMEOUT=600 ctest -R float_text_neon > "$work/out.txt" 2>&1); then
    echo "float_text_exhaustive (neon slices)"; return
  fi
  echo SURVIVED
}

survived=0
if [[ "$(caught_by)" != SURVIVED ]]; then
  echo "mutations.sh: the tests fail on the sources as they are:" >&2; cat "$work/out.txt" >&2; exit 1
fi
for m in "${mutations[@]}"; do
  IFS=$'\x1f' read -r file old new targets <<< "$(printf '%s' "$m" | sed 's/\\|/\x1e/g; s/|/\x1f/g; s/\x1e/|/g')"
  [[ $targets == both || $targets == "$target" ]] || continue
  [[ -z ${ONLY:-} || $file == *"$ONLY"* ]] || continue
  path="$work/cpp/$file"
  cp "$path" "$work/original"
  OLD="$old" NEW="$new" python3 - "$path" <<'PY'
import os, sys
p = sys.argv[1]
s = open(p).read()
if s.count(os.environ["OLD"]) != 1:
    sys.exit(f"mutations.sh: the text to replace is not in {p} exactly once: {os.environ['OLD']}")
open(p, "w").write(s.replace(os.environ["OLD"], os.environ["NEW"]))
PY
  if cmake --build "$build" -j "${JOBS:-2}" --target "${programs[@]}" > "$work/build.log" 2>&1; then
    verdict="$(caught_by)"
  else
    verdict="(does not compile)"
  fi
  [[ $verdict == SURVIVED ]] && survived=$((survived + 1))
  printf '%-32s %s: %s -> %s\n' "$verdict" "$file" "$old" "$new"
  cp "$work/original" "$path"
done
cmake --build "$build" -j "${JOBS:-2}" --target "${programs[@]}" > "$work/build.log"
echo "mutations.sh ($target): $survived survived"
[[ $survived == 0 ]]
