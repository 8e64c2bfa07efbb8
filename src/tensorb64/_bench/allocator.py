"""glibc allocator control for the body section: the two malloc states it measures in, pinned
with mallopt. Imported only by that section (ctypes and libc are loaded when it runs, never by
`import tensorb64`)."""

from __future__ import annotations

import platform

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def allocator_states() -> list:
    """[(name, description, apply)]: the glibc malloc states the body section is measured in.

    glibc starts with a 128 KiB mmap threshold and a 128 KiB trim threshold: a block above the
    first is mmapped (its pages faulted in on first write, returned on free), and the top of the
    heap is returned to the kernel past the second, so every call of a fresh process that makes
    a large output can fault in all its pages. After it frees an mmapped block, glibc raises both
    (up to 32 MiB and 64 MiB), and a long-running server then reuses the same memory. Both states
    are pinned with mallopt (which also stops glibc adjusting them), so a measurement does not
    depend on what ran before it.
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return [("as found", "not glibc: the allocator is left as it is", lambda: None)]
    import ctypes

    libc = ctypes.CDLL(None)

    def pin(mmap_threshold, trim_threshold):
        def apply():
            if not (libc.mallopt(_M_MMAP_THRESHOLD, mmap_threshold) and libc.mallopt(_M_TRIM_THRESHOLD, trim_threshold)):
                raise RuntimeError("mallopt refused the thresholds")
            libc.malloc_trim(0)

        return apply

    return [
        ("fresh", "glibc's initial thresholds (mmap 128 KiB, trim 128 KiB), held: a fresh process before its first "
                  "large free, or one run with MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ set; large outputs are mmapped "
                  "or trimmed away after each call, so each call faults their pages in", pin(128 << 10, 128 << 10)),
        ("raised", "the thresholds glibc raises itself to after freeing a large mmapped block (mmap 32 MiB, trim "
                   "64 MiB at most), as in a long-running server once it has sent one large body by any route: "
                   "freed memory is reused", pin(32 << 20, 64 << 20)),
    ]

