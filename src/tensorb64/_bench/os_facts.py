"""What the bench can measure on this OS: decided here once, from `sys.platform` and what the
standard library has, and read by every section (timing.py, allocator.py, body.py, client.py).

* Minor page faults (getrusage's ru_minflt) are counted on Linux only: Windows has no `resource`
  module, and macOS's count is its "page reclaims", which leaves out most zero-fill faults of new
  memory, so its figure would not be the one the Linux rows mean (a fault per page first written).
* The package's page preparation (bindings/output_memory.cpp: MADV_HUGEPAGE, MADV_POPULATE_WRITE)
  exists on Linux only; elsewhere there is nothing to switch off, so the prepared-against-unprepared
  comparisons are not made.
* glibc's malloc states (mallopt) exist where glibc does (allocator.allocator_states).
* The kernel's page costs (allocator.page_floor: mmap, madvise) are measured on Linux only.

Wherever a figure is not measured the output says so (the `*_ABSENT` lines), never a number.
"""

from __future__ import annotations

import platform
import sys


def _resource_module():
    try:
        import resource
    except ImportError:  # Windows
        return None
    return resource


LINUX = sys.platform.startswith("linux")
GLIBC = LINUX and platform.libc_ver()[0] == "glibc"
resource = _resource_module()
MINOR_FAULTS = LINUX and resource is not None
PAGE_PREPARATION = LINUX

MINOR_FAULTS_ABSENT = (f"minor page faults are not counted on {sys.platform} (getrusage's ru_minflt is Linux's "
                       "count of a fault per page first written; Windows has no getrusage, macOS counts page reclaims)")
PAGE_PREPARATION_ABSENT = (f"page preparation (madvise: huge pages, MADV_POPULATE_WRITE) is Linux's; on {sys.platform} "
                           "every large output's pages fault in as they are written, and the prepared/unprepared "
                           "comparisons are not made")


def minor_faults() -> int | None:
    """This process's minor page faults so far, or None where they are not counted (MINOR_FAULTS)."""
    if not MINOR_FAULTS:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def absent_lines() -> list:
    """What this OS's run leaves unmeasured, a line each (none on Linux)."""
    return [line for measured, line in ((MINOR_FAULTS, MINOR_FAULTS_ABSENT), (PAGE_PREPARATION, PAGE_PREPARATION_ABSENT))
            if not measured]
