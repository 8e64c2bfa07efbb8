"""Runs a check in several threads at once and collects what went wrong."""

from __future__ import annotations

import threading


def failures_in_threads(check, count: int, repeats: int) -> list:
    """Calls ``check(i)`` ``repeats`` times in each of ``count`` threads (i = the thread's index),
    all released together by a barrier; the list of (i, what) for each call that returned False
    or raised."""
    failures = []
    barrier = threading.Barrier(count)

    def worker(i):
        try:
            barrier.wait()
            for _ in range(repeats):
                if not check(i):
                    failures.append((i, "wrong result"))
        except BaseException as e:  # noqa: BLE001 (reported to the caller)
            failures.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return failures
