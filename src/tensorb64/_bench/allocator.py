"""The memory a large output is written into, for the body and client sections: the two glibc
malloc states they measure in (pinned with mallopt), the first call of a process (in a fresh
subprocess), the package's page preparation switched off for comparison, and the kernel's own
costs, the floor under any large output (page zeroing, MADV_POPULATE_WRITE, huge pages).
Imported only by those sections (ctypes and libc are loaded when they run, never by
`import tensorb64`)."""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time

from . import os_facts

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def allocator_states() -> list:
    """[(name, description, apply)]: the glibc malloc states the body section is measured in.

    glibc starts with a 128 KiB mmap threshold and a 128 KiB trim threshold: a block above the
    first is mmapped (its pages faulted in on first write, returned on free), and the top of the
    heap is returned to the kernel past the second, so every call of a fresh process that makes
    a large output can fault in all its pages. After it frees an mmapped block, glibc raises both
    (up to 32 MiB and 64 MiB), and a long-running server then reuses the same memory, for outputs
    below 32 MiB: a larger one is mapped anew in every state. Both states are pinned with mallopt
    (which also stops glibc adjusting them), and in the fresh state the heap's free blocks are held
    (_plug_heap_holes), so a measurement does not depend on what ran before it.
    """
    if not os_facts.GLIBC:
        return [("as found", "not glibc: the allocator is left as it is", lambda: None)]
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def pin(mmap_threshold, trim_threshold, plug):
        def apply():
            while _heap_plugs:
                libc.free(_heap_plugs.pop())
            if not (libc.mallopt(_M_MMAP_THRESHOLD, mmap_threshold) and libc.mallopt(_M_TRIM_THRESHOLD, trim_threshold)):
                raise RuntimeError("mallopt refused the thresholds")
            libc.malloc_trim(0)
            if plug:
                _plug_heap_holes(libc, mmap_threshold)

        return apply

    return [
        ("fresh", "glibc's initial thresholds (mmap 128 KiB, trim 128 KiB), held: a fresh process before its first "
                  "large free, or one run with MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ set; large outputs are mmapped "
                  "or trimmed away after each call, so each call's pages are new", pin(128 << 10, 128 << 10, True)),
        ("raised", "the thresholds glibc raises itself to after freeing a large mmapped block (mmap 32 MiB, trim "
                   "64 MiB at most), as in a long-running server once it has sent one large body by any route: "
                   "freed memory is reused, below 32 MiB", pin(32 << 20, 64 << 20, False)),
    ]


# Blocks held while the "fresh" state is in force (_plug_heap_holes), freed when a state is applied.
_heap_plugs: list = []


def _plug_heap_holes(libc, least: int) -> None:
    """Holds every free block of `least` bytes or more left in the heap by what ran before (a
    section measured in the "raised" state frees large blocks into it, and malloc_trim gives their
    pages back but keeps the blocks), so that a large output is mapped anew as in a fresh process
    instead of reusing one of them. The blocks are never written: they hold address space, not
    memory. A block glibc maps on its own (IS_MMAPPED, bit 1 of the size word before it) means
    none of that size is left."""
    import ctypes

    size = 1 << 30
    while size >= least:
        while True:
            block = libc.malloc(size)
            if not block:
                break
            if ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value & 2:
                libc.free(block)
                break
            _heap_plugs.append(block)
        size //= 2


def unprepared(call):
    """`call` with the package's page preparation switched off for its duration (the private
    switch the tests use): the same output written into pages that fault one at a time, as
    before the preparation existed. Timed only where there is a preparation to switch off
    (os_facts.PAGE_PREPARATION): the callers skip it elsewhere."""
    from tensorb64 import _native

    def run():
        _native._set_page_preparation(False, 0)
        try:
            return call()
        finally:
            _native._set_page_preparation(True, 0)

    return run


# The child counts its minor faults only where the parent's os_facts says they are counted
# (and only then imports `resource`: Windows has none).
_FIRST_CALL = """
import json, sys, time
if {count_faults}:
    import resource
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
{setup}
if not {prepared}:
    from tensorb64 import _native
    _native._set_page_preparation(False, 0)
def timed():
    global size
    before = faults() if {count_faults} else None
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    size = len(result) if isinstance(result, bytes) else result.nbytes
    return seconds, faults() - before if {count_faults} else None
first = timed()
later = [timed() for _ in range({later})]
print(json.dumps({{"first": first, "later": later, "size": size}}))
"""


def first_call_of_a_process(setup: str, *, runs: int, later: int = 7, prepared: bool = True, timeout: float = 300) -> dict:
    """The first call of a fresh process against its later calls, over `runs` processes.

    `setup` is Python that defines `call()` (returning bytes or an array) and has already made
    one small call of the same entry point (so that imports and first-call work are done: what is
    left is the memory).
    Each process times its first call, then `later` more (glibc raises its thresholds after the
    first large free, so those reuse memory, as a long-running server's do). Returns the medians
    over the processes: first_us, later_us (each process's median), ratio (first / later, per
    process), first_minflt and later_minflt (minor faults of one call; None where this OS's are
    not counted), output_bytes. `prepared` False switches the page preparation off; where there is
    none (os_facts.PAGE_PREPARATION) every call is unprepared and the result says so."""
    prepared = prepared and os_facts.PAGE_PREPARATION
    script = _FIRST_CALL.format(setup=setup, prepared=prepared, later=later, count_faults=os_facts.MINOR_FAULTS)
    firsts, laters, ratios, first_faults, later_faults, size = [], [], [], [], [], 0
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"the first-call process failed:\n{proc.stderr[-2000:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        later_s = statistics.median(t for t, _ in got["later"])
        firsts.append(got["first"][0] * 1e6)
        laters.append(later_s * 1e6)
        ratios.append(got["first"][0] / later_s)
        if os_facts.MINOR_FAULTS:
            first_faults.append(got["first"][1])
            later_faults.append(statistics.median(f for _, f in got["later"]))
        size = got["size"]
    med = statistics.median
    return {"first_us": med(firsts), "later_us": med(laters), "ratio": med(ratios),
            "first_minflt": med(first_faults) if first_faults else None,
            "later_minflt": med(later_faults) if later_faults else None, "runs": runs, "prepared": prepared,
            "output_bytes": size}


def zeroing_us(floor: dict | None, size: int | None) -> float | None:
    """The kernel's zeroing of `size` bytes of fresh huge pages (MADV_POPULATE_WRITE alone, as
    page_floor measured it), the least any output of that size costs where its memory is new."""
    if floor is None or not size:
        return None
    return floor["us_per_mib"]["MADV_POPULATE_WRITE, fresh huge pages"] * size / 2**20


def first_call_lines(first_calls: list, floor: dict | None = None, target: float = 1.5) -> list:
    lines = ["The first call of a process against its later calls (each process: one small call first, then the large "
             "call, then 7 more; medians over the processes; minflt: minor faults of one call; the floor: a later call "
             "plus the kernel zeroing the output's pages, huge pages, as measured below):"]
    if not os_facts.MINOR_FAULTS:
        lines.append(f"  ({os_facts.MINOR_FAULTS_ABSENT})")

    def faults(n):
        return "" if n is None else f" ({n:.0f} minflt)"

    for f in first_calls:
        met = "" if not f["prepared"] else f"  (target <= {target})  {'met' if f['ratio'] <= target else 'NOT met'}"
        zeroing = zeroing_us(floor, f.get("output_bytes"))
        below = "" if zeroing is None or not f["prepared"] else \
            f"; the floor: {(f['later_us'] + zeroing) / f['later_us']:.2f}"
        lines.append(f"  {f['what']}, {'prepared' if f['prepared'] else 'pages unprepared'}: first {f['first_us']:,.0f} µs"
                     f"{faults(f['first_minflt'])}, later {f['later_us']:,.0f} µs{faults(f['later_minflt'])}: "
                     f"first / later = {f['ratio']:.2f} over {f['runs']} processes{met}{below}")
    return lines


def page_floor(size_mib: int = 64, rounds: int = 7) -> dict | None:
    """The kernel's costs under any output of size_mib MiB, in µs per MiB (medians of `rounds`
    interleaved rounds, each on a fresh anonymous mapping aligned to 2 MiB): writing it where it
    is resident already (memset), writing it into fresh 4 KiB pages (a fault each) and into
    fresh transparent huge pages (MADV_HUGEPAGE first), MADV_POPULATE_WRITE alone over fresh
    4 KiB pages and huge pages (the page zeroing itself, without a trap a page), and over pages
    already resident (what preparing reused memory would cost, 4 KiB pages), and the mincore
    probe of one page that spares it. None where not Linux or the kernel refuses
    MADV_POPULATE_WRITE (before 5.14)."""
    if not os_facts.LINUX:
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.memset.restype = ctypes.c_void_p
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    prot_rw, map_private_anonymous, madv_hugepage, madv_populate_write = 0x3, 0x22, 14, 23
    huge, size = 2 << 20, size_mib << 20

    def mapping():
        base = libc.mmap(None, size + huge, prot_rw, map_private_anonymous, -1, 0)
        if base in (None, ctypes.c_void_p(-1).value):
            raise MemoryError("mmap failed")
        return base, (base + huge - 1) & ~(huge - 1)

    def timed(step, prepare=None):
        base, at = mapping()
        try:
            if prepare is not None:
                prepare(at)
            start = time.perf_counter()
            if step(at) != 0:
                return None
            return (time.perf_counter() - start) * 1e6 / size_mib
        finally:
            libc.munmap(base, size + huge)

    def write(at):
        libc.memset(at, 1, size)
        return 0

    def populate(at):
        return libc.madvise(at, size, madv_populate_write)

    def advise_huge(at):
        libc.madvise(at, size, madv_hugepage)

    def probe(at):
        flag = ctypes.create_string_buffer(1)
        start = time.perf_counter()
        for _ in range(1000):
            libc.mincore(at + size - 4096, 4096, flag)
        return (time.perf_counter() - start) * 1e3  # µs a call

    steps = {
        "write into resident memory (memset)": (write, write),
        "write into fresh 4 KiB pages (a fault each)": (write, None),
        "write into fresh huge pages (MADV_HUGEPAGE)": (write, advise_huge),
        "MADV_POPULATE_WRITE, fresh 4 KiB pages": (populate, None),
        "MADV_POPULATE_WRITE, fresh huge pages": (populate, advise_huge),
        "MADV_POPULATE_WRITE, resident 4 KiB pages": (populate, write),
    }
    samples = {name: [] for name in steps}
    for r in range(rounds):
        names = list(steps)[r % len(steps):] + list(steps)[:r % len(steps)]
        for name in names:
            step, prepare = steps[name]
            got = timed(step, prepare)
            if got is None:
                return None  # MADV_POPULATE_WRITE refused: a kernel before 5.14
            samples[name].append(got)
    base, at = mapping()
    try:
        write(at)
        probe_us = probe(at)
    finally:
        libc.munmap(base, size + huge)
    out = {"size_mib": size_mib, "rounds": rounds, "us_per_mib": {k: statistics.median(v) for k, v in samples.items()},
           "mincore_probe_us": probe_us}
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            out["thp_enabled"] = f.read().strip()
    except OSError:
        out["thp_enabled"] = "unknown"
    out["kernel"] = platform.release()
    return out


def page_floor_lines(floor: dict | None) -> list:
    if floor is None:
        return ["The kernel's page costs: not measured (not Linux, or no MADV_POPULATE_WRITE: a kernel before 5.14)"]
    lines = [f"The kernel's page costs, {floor['size_mib']} MiB, median of {floor['rounds']} interleaved rounds "
             f"(kernel {floor['kernel']}, transparent huge pages: {floor['thp_enabled']}):"]
    lines += [f"  {name:<48} {us:9.1f} µs/MiB" for name, us in floor["us_per_mib"].items()]
    lines.append(f"  {'mincore of one page (the resident probe)':<48} {floor['mincore_probe_us']:9.2f} µs a call")
    return lines
