#!/usr/bin/env bash
# each wheel's suite (no torch) in a venv of its own CPython; the GIL stays off on 3.13t/3.14t; free-threaded scaling
source "$(dirname "$0")/lib.sh"
ci/test_wheels.sh "$work/wheels" 3.10 3.12 3.13 3.14 3.13t 3.14t
x86_64=$(built 'old-glibc/*manylinux2014_x86_64*.whl' old_glibc)
for name_wheel in "3.14t $(built 'wheels/*-cp314-cp314t-*x86_64*.whl' wheels)" "3.11 $x86_64"; do
  set -- $name_wheel
  rm -rf "$work/env-bench-$1"
  "$(ci/interpreters.sh "$1" | cut -d' ' -f2)" -m venv "$work/env-bench-$1"
  "$work/env-bench-$1/bin/python" -m pip install -q --only-binary=:all: "$2"
  (cd "$work" && "$work/env-bench-$1/bin/python" "$repo/benchmarks/free_threading.py" --rounds 7 --seconds 0.1)
done
