"""The OS facts the tests depend on, decided here once: each test that needs Linux (or glibc) is
marked through `linux_only` / `glibc_only`, which skip elsewhere saying why; and the peak resident
set in the units each OS gives it.

The package itself decides what the bench can measure in src/tensorb64/_bench/os_facts.py; these
are the tests' own facts (what an assertion needs), not a second copy of that one.
"""

from __future__ import annotations

import platform
import sys

import pytest

LINUX = sys.platform.startswith("linux")
GLIBC = LINUX and platform.libc_ver()[0] == "glibc"
# bindings/output_memory.cpp prepares pages (MADV_HUGEPAGE, MADV_POPULATE_WRITE) on Linux only:
# elsewhere no madvise call is made, and its counters of advice given stay where they are.
PAGE_PREPARATION = LINUX


def linux_only(reason: str):
    """Skips the test where the OS is not Linux, naming what Linux has that it needs."""
    return pytest.mark.skipif(not LINUX, reason=f"Linux only: {reason}")


def glibc_only(reason: str):
    """Skips the test where the C library is not glibc (musl, macOS, Windows), naming why."""
    return pytest.mark.skipif(not GLIBC, reason=f"glibc only: {reason}")


# The peak resident set of the process, in bytes, as source for the tests' subprocess scripts
# (which run with `python -c` and cannot import tests/): getrusage(2)'s ru_maxrss is KiB on Linux
# and bytes on macOS; Windows has no getrusage, and the tests that use it are linux_only or skip
# there.
PEAK_RSS_SOURCE = '''
def peak_rss_bytes():
    import resource, sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
'''
PEAK_RSS = sys.platform != "win32"
PEAK_RSS_ABSENT = "the peak resident set is read with getrusage, which Windows has not"
