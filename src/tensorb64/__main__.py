"""python -m tensorb64 {info,bench}: what this install runs, and how fast against the usual paths."""

from __future__ import annotations

import sys

USAGE = """usage: python -m tensorb64 {info,bench} [options]

  info    the version, the SIMD level in use and the levels this CPU can run
  bench   tensorb64 against the paths servers and clients use today
          [--section all|base64|body|client|cuda] [--full] [--json PATH] [--plot PATH.png] [--table PATH.md]
          cuda (also --device cuda): CUDA tensors (staged copies, GPU narrowing) against the same paths
          (needs the bench extra: pip install "tensorb64[bench]")
"""


def info() -> int:
    import os

    import tensorb64

    print(f"tensorb64 {tensorb64.__version__}")
    print(f"simd_level: {tensorb64.simd_level()}")
    print(f"available_simd_levels: {', '.join(tensorb64.available_simd_levels())}")
    forced = os.environ.get("TENSORB64_SIMD")
    if forced:
        print(f"TENSORB64_SIMD={forced}")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "info":
        if rest:
            print(f"info takes no arguments, got {' '.join(rest)}\n\n{USAGE}", end="", file=sys.stderr)
            return 2
        return info()
    if command == "bench":
        from ._bench.runner import main as bench  # its sections import torch, pybase64...: only when asked for

        return bench(rest)
    print(f"unknown command {command!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
