#!/usr/bin/env bash
# Hardening runs of the C++ core and the Python extension:
#   1. the C++ tests (cpp/CMakeLists.txt declares them to CTest) built with AddressSanitizer +
#      UndefinedBehaviorSanitizer (g++) and run by ctest: every SIMD level this CPU has (the
#      programs iterate the available levels themselves); --quick runs the tests labelled quick,
#      otherwise core_tests and edge_tests run in full and float_text_tests --quick;
#   2. core_tests --quick, edge_tests --quick and body_reader_tests, built without sanitizers, under
#      valgrind memcheck, ctest's launcher (CMAKE_TEST_LAUNCHER, CMake 3.29+; valgrind's CPU has no
#      AVX-512, so they see scalar and avx2 only; TENSORB64_SIMD=avx2 is forced on top);
#   3. the libFuzzer targets (clang): fuzz_encode (every level equals scalar; identity encodings
#      decode back to the input), fuzz_rows (odd strides, threads > 1 equal threads = 1) and
#      fuzz_body (any bytes as a response body, float rows to float32 or float64: an error or a
#      result, the same as the careful reading's, which guesses no row end, and the same with
#      threads > 1 and at the scalar level), run
#      side by side, each for about its seconds of one core;
#   4. (--full) the Python extension built with ASan + UBSan, and a subset of the Python suite run
#      against it with libasan preloaded (on JOBS pytest-xdist workers);
#   5. (--full) the Python extension (core included) built with ThreadSanitizer (clang), and the
#      concurrency tests run against it on a free-threaded CPython itself built with
#      --with-thread-sanitizer (TSAN_PYTHON; ci/interpreters.sh 3.14t-tsan builds one): calls
#      truly in parallel, every access of the interpreter and of the extension seen by TSan.
#
# Usage: cpp/hardening/sanitize.sh [--quick | --full] [--fuzz SECONDS]
#   (default)   steps 1-3, fuzzers 60 s of a core each, core_tests in full (~5-6 min on 2 cores)
#   --quick     steps 1-3 with core_tests --quick, edge_tests --quick under valgrind, fuzzers 20 s
#   --full      steps 1-5
#   --fuzz S    only build and run each fuzzer for S seconds (a long run: --fuzz 3600)
# Environment: JOBS (cores to use: build jobs, ctest and pytest workers, fuzzers side by side;
#   default 2), TENSORB64_HARDENING_BUILD (default build/hardening), TSAN_PYTHON
#   (step 5: a free-threaded CPython built with --with-thread-sanitizer; skipped when unset).
# Exits non-zero if anything failed; prints a summary either way.
set -u -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${TENSORB64_HARDENING_BUILD:-$root/build/hardening}"
jobs="${JOBS:-2}"
mode=default
fuzz_seconds=60
fuzz_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick; fuzz_seconds=20 ;;
    --full) mode=full ;;
    --fuzz) fuzz_only=1; fuzz_seconds="${2:?--fuzz needs SECONDS}"; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

mkdir -p "$build"
summary=()
failed=0
step() {  # step NAME COMMAND...: runs it, records PASS/FAIL and its time
  local name="$1"; shift
  local start=$SECONDS log="$build/$(echo "$name" | tr ' /:' '___').log"
  echo "=== $name"
  if "$@" >"$log" 2>&1; then
    summary+=("PASS  $(printf '%4ds' $((SECONDS - start)))  $name")
    tail -n 3 "$log"
  else
    summary+=("FAIL  $(printf '%4ds' $((SECONDS - start)))  $name   (log: $log)")
    failed=1
    tail -n 40 "$log"
  fi
}
# Like step, for a command already started in the background (its output going to LOG): waits
# for it and records it the same way.
step_wait() {  # step_wait NAME START_SECONDS PID LOG
  local name="$1" start="$2" pid="$3" log="$4"
  echo "=== $name"
  if wait "$pid"; then
    summary+=("PASS  $(printf '%4ds' $((SECONDS - start)))  $name")
    tail -n 3 "$log"
  else
    summary+=("FAIL  $(printf '%4ds' $((SECONDS - start)))  $name   (log: $log)")
    failed=1
    tail -n 40 "$log"
  fi
}
skip() { summary+=("SKIP         $1"); echo "=== $1: SKIPPED"; }
finish() {
  echo
  echo "==== sanitize.sh summary ($mode$( [ $fuzz_only = 1 ] && echo ", fuzz only")) ===="
  printf '%s\n' "${summary[@]}"
  [ $failed = 0 ] && echo "ALL PASSED" || echo "SOME FAILED"
  exit $failed
}

san_flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Configures and builds the core and its tests with the given compiler flags (and any further
# CMake arguments).
build_core() {  # build_core DIR CXX FLAGS [CMAKE ARGS...]
  local dir="$1" cxx="$2" flags="$3"
  shift 3
  cmake -S "$root/cpp" -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_CXX_FLAGS="$flags" -DTENSORB64_BUILD_TESTS=ON "$@" >/dev/null &&
  cmake --build "$dir" -j "$jobs" --target tensorb64_tests
}
# Runs ctest in DIR with the given selection, each test's output shown when it fails.
run_ctest() {  # run_ctest DIR CTEST ARGS...
  local dir="$1"
  shift
  ctest --test-dir "$dir" -j "$jobs" --timeout "${CTEST_TIMEOUT:-1800}" --output-on-failure "$@"
}

# ---- libFuzzer --------------------------------------------------------------------------------
run_fuzzers() {
  local clang="${CLANGXX:-clang++}"
  if ! command -v "$clang" >/dev/null; then skip "fuzzers (no $clang: apt-get install clang libclang-rt-14-dev)"; return; fi
  local dir="$build/fuzz"
  mkdir -p "$dir"
  local fflags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -g -O1"
  step "fuzz: build core (clang, ASan+UBSan)" build_fuzz_core "$clang" "$dir" "$fflags"
  local targets=(fuzz_encode fuzz_rows fuzz_body) target
  for target in "${targets[@]}"; do
    step "fuzz: build $target" "$clang" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined \
         -fno-sanitize-recover=all -I"$root/cpp/include" -I"$root/cpp/src" "$here/$target.cpp" "$dir/core/libtensorb64_core.a" \
         -pthread -o "$dir/$target"
  done
  # The runs side by side (each libFuzzer process uses one core), each for fuzz_seconds x (the
  # runs / the cores they share), so that each still gets about fuzz_seconds of a core.
  local n=0 cores="$jobs"
  for target in "${targets[@]}"; do [ -x "$dir/$target" ] && n=$((n + 1)); done
  [ "$cores" -le "$n" ] || cores="$n"
  local seconds=$(( (fuzz_seconds * n + cores - 1) / (cores > 0 ? cores : 1) )) start=$SECONDS pids=() names=()
  for target in "${targets[@]}"; do
    [ -x "$dir/$target" ] || continue
    # New inputs go to a scratch corpus; the committed seeds are read only.
    mkdir -p "$dir/corpus_$target"
    "$dir/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/crash-$target-" "$dir/corpus_$target" "$here/corpus/$target" \
      >"$build/fuzz_run_$target.log" 2>&1 &
    pids+=($!)
    names+=("$target")
  done
  local i
  for i in "${!pids[@]}"; do
    step_wait "fuzz: run ${names[i]} ${seconds}s (beside $((n - 1)) others on $cores cores)" "$start" "${pids[i]}" \
      "$build/fuzz_run_${names[i]}.log"
  done
}
build_fuzz_core() {
  local clang="$1" dir="$2" flags="$3"
  cmake -S "$root/cpp" -B "$dir/core" -DCMAKE_CXX_COMPILER="$clang" -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_CXX_FLAGS="$flags" >/dev/null && cmake --build "$dir/core" -j "$jobs" --target tensorb64_core
}

if [ $fuzz_only = 1 ]; then run_fuzzers; finish; fi

# ---- 1. ASan + UBSan --------------------------------------------------------------------------
cxx="${CXX:-g++}"
step "asan+ubsan: build ($cxx)" build_core "$build/asan" "$cxx" "$san_flags"
if [ "$mode" = quick ]; then
  step "asan+ubsan: ctest -L quick" run_ctest "$build/asan" -L '^quick$'
else
  # Every test but the quick core and edge runs, and float_text_tests --quick rather than in full
  # (long under ASan).
  step "asan+ubsan: ctest (core, edge in full)" run_ctest "$build/asan" -E '^(core_quick|edge_quick|float_text)$'
fi

# ---- 2. valgrind ------------------------------------------------------------------------------
if ! command -v valgrind >/dev/null; then
  skip "valgrind (not installed: apt-get install valgrind)"
elif [ "$(printf '%s\n' 3.29 "$(cmake --version | sed -n 's/^cmake version //p')" | sort -V | head -n 1)" != 3.29 ]; then
  skip "valgrind (needs CMake 3.29+ for CMAKE_TEST_LAUNCHER)"
else
  vg="valgrind;--error-exitcode=1;--errors-for-leak-kinds=definite;--leak-check=full;-q"
  step "valgrind: build (plain, -O1 -g)" build_core "$build/plain" "$cxx" "-g -O1" "-DCMAKE_TEST_LAUNCHER=$vg"
  # The test programs' watchdog (cpp/tests/watchdog.hpp) allows 120 s between two checks by
  # default; valgrind runs them tens of times slower.
  export TENSORB64_TEST_TIMEOUT="${TENSORB64_TEST_TIMEOUT:-600}"
  TENSORB64_SIMD=avx2 step "valgrind: core_quick, edge_quick, body_reader (TENSORB64_SIMD=avx2)" \
    run_ctest "$build/plain" -R '^(core_quick|edge_quick|body_reader)$'
fi

# ---- 3. fuzzers -------------------------------------------------------------------------------
run_fuzzers

# ---- 4. the Python extension under ASan -------------------------------------------------------
python_under_asan() {
  local py="${PYTHON:-python3}" target="$build/pyasan"
  # libstdc++ is preloaded too: python itself does not link it, and without it ASan's __cxa_throw
  # interceptor finds no real __cxa_throw ("CHECK failed: ... real___cxa_throw") at the first throw.
  local libasan; libasan="$("$cxx" -print-file-name=libasan.so) $("$cxx" -print-file-name=libstdc++.so)"
  rm -rf "$target"
  SKBUILD_CMAKE_ARGS="-DCMAKE_CXX_FLAGS=$san_flags;-DCMAKE_BUILD_TYPE=None" \
    "$py" -m pip install --no-build-isolation --no-deps --quiet --target "$target" \
      -Cbuild-dir="$build/pyasan-build" "$root" || return 1
  # The ASan build must be what is imported, not the installed one. Its tests run several times
  # slower than the wheel's, so each gets 900 s rather than pyproject's 600 (-o timeout).
  PYTHONPATH="$target" LD_PRELOAD="$libasan" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
    "$py" -c "import tensorb64._native as n, sys; assert n.__file__.startswith('$target'), n.__file__; print('extension:', n.__file__)" || return 1
  (cd "$root" && PYTHONPATH="$target" LD_PRELOAD="$libasan" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
    "$py" -m pytest -q -p no:cacheprovider -o timeout=900 -n "$jobs" tests/test_float32_parity.py tests/test_dtypes.py tests/test_rfc4648.py \
      tests/test_bad_inputs.py tests/test_decode.py tests/test_hostile_inputs.py tests/test_concurrency.py \
      tests/test_binary_body.py tests/test_reader.py tests/test_response_body.py tests/test_float_text.py \
      tests/test_decode_response_body.py)
}
if [ "$mode" = full ]; then
  step "python under asan+ubsan: build extension and run the suite" python_under_asan
fi

# ---- 5. the extension under ThreadSanitizer, on a free-threaded CPython built with TSan ---------
# Why an instrumented interpreter rather than suppressions: on the free-threaded build objects
# come from the interpreter's mimalloc and are handed between threads through its own atomics and
# locks; with an uninstrumented interpreter TSan sees none of that synchronisation and reports
# this module's writes into a reused object as races. CPython's own suppressions (its known
# benign races, the file its CI uses with this configuration) ship with the interpreter
# (ci/interpreters.sh copies Tools/tsan/suppressions_free_threading.txt next to it).
python_under_tsan() {
  local py="$TSAN_PYTHON" env="$build/tsan-env" target="$build/pytsan"
  local clang="${CLANGXX:-clang++}" suppressions
  suppressions="$(dirname "$(dirname "$py")")/tsan_suppressions.txt"
  [ -f "$suppressions" ] || { echo "no $suppressions beside $py"; return 1; }
  [ -x "$env/bin/python" ] || "$py" -m venv "$env" || return 1
  "$env/bin/python" -m pip install -q --only-binary=:all: numpy pytest hypothesis \
    "scikit-build-core>=0.10" cmake ninja || return 1
  rm -rf "$target"
  # The interpreter's own compiler (clang): one TSan runtime in the process, the interpreter's.
  CC=clang CXX="$clang" SKBUILD_CMAKE_ARGS="-DCMAKE_CXX_FLAGS=-fsanitize=thread -g -O1;-DCMAKE_BUILD_TYPE=None" \
    "$env/bin/python" -m pip install --no-build-isolation --no-deps --quiet --target "$target" \
      -Cbuild-dir="$build/pytsan-build" "$root" || return 1
  (cd "$root" && PYTHONPATH="$target" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$suppressions" \
    "$env/bin/python" -c "import sys, tensorb64._native as n; assert n.__file__.startswith('$target'), n.__file__; assert not sys._is_gil_enabled(); print('extension:', n.__file__)" &&
   PYTHONPATH="$target" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$suppressions" \
    "$env/bin/python" -m pytest -q -p no:cacheprovider tests/test_free_threading.py tests/test_concurrency.py)
}
if [ "$mode" = full ]; then
  if [ -n "${TSAN_PYTHON:-}" ]; then
    step "python under tsan (free-threaded $("$TSAN_PYTHON" -c 'import sys; print(sys.version.split()[0])')): build extension, run the concurrency tests" python_under_tsan
  else
    skip "python under tsan (TSAN_PYTHON unset: ci/interpreters.sh 3.14t-tsan builds one)"
  fi
fi

finish
