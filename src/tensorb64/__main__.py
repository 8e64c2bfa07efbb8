"""python -m tensorb64 {info,bench}: what this install runs, and how fast against the usual paths."""

from __future__ import annotations

import sys


def usage() -> str:
    from ._bench.runner import ALL, SECTIONS, section_lines  # (the runner alone: no section, no torch)

    return ("usage: python -m tensorb64 {info,bench} [options]\n\n"
            "  info    the version, the SIMD level in use and the levels this CPU can run\n"
            "  bench   tensorb64 against the paths servers and clients use today\n"
            f"          [--section all|{'|'.join(SECTIONS)}] [--full] [--json PATH] [--plot PATH.png] [--table PATH.md]\n"
            + "".join(f"          {line}\n" for line in section_lines())
            + f"          all: {', '.join(ALL)} (needs the bench extra: pip install \"tensorb64[bench]\")\n")


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
        print(usage(), end="")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "info":
        if rest:
            print(f"info takes no arguments, got {' '.join(rest)}\n\n{usage()}", end="", file=sys.stderr)
            return 2
        return info()
    if command == "bench":
        from ._bench.runner import main as bench  # its sections import torch, pybase64...: only when asked for

        return bench(rest)
    print(f"unknown command {command!r}\n\n{usage()}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
