"""Shared fixtures: every kernel-facing test runs once per SIMD level this CPU has; every test
runs under a time limit (pyproject's `timeout`), so that a hang fails the run; and the default
selection of tests, written here once (OPT_IN)."""

from __future__ import annotations

import faulthandler
import importlib.util
import os
import re
import sys

import pytest

from tensorb64 import _native

LEVELS = _native.available_simd_levels()
_HAVE_PYTEST_TIMEOUT = importlib.util.find_spec("pytest_timeout") is not None
# Seconds a `slow` test may run (see pytest_collection_modifyitems).
SLOW_TEST_TIMEOUT = 1800
# The default selection, the one place it is written: a test with one of these markers runs only
# where the -m expression names the marker (`-m slow`, `-m vllm`, `-m "ingest or clients"`), as
# each needs what a plain `pytest` has not: minutes (slow: cross-CPU builds, sanitizers, huge rows)
# or another package's venv (ci/vllm_check.sh, sglang_check.sh, client_check.sh, ingest_check.sh).
# Every runner of the suite (pyproject's test-command, ci/stages/lib.sh, ci/test_wheels.sh,
# ci/gpu_check.sh) passes only what it adds to this (`not needs_source_tree`, `serial`, `cuda`).
OPT_IN = ("slow", "vllm", "sglang", "clients", "gateway", "ingest")
_terminal_stderr = None  # without pytest-timeout: where a hung test's stacks go


@pytest.fixture(params=LEVELS)
def each_simd_level(request):
    """Runs the test with the kernel forced to each available level in turn (as pybase64 does)."""
    previous = _native.simd_level()
    _native._set_simd_level(request.param)
    try:
        yield request.param
    finally:
        _native._set_simd_level(previous)


def pytest_addoption(parser):
    # pyproject's `timeout` and `timeout_method` are pytest-timeout's (the `test` extra pins it).
    # Where a bare pytest runs without it (an offline machine), they are declared here so that
    # --strict-config accepts them, and faulthandler ends a hung test instead (below).
    if not _HAVE_PYTEST_TIMEOUT:
        parser.addini("timeout", "seconds a test may run (pytest-timeout's setting)", default="0")
        parser.addini("timeout_method", "pytest-timeout's setting (unused without it)", default="thread")


def pytest_configure(config):
    global _terminal_stderr
    if not _HAVE_PYTEST_TIMEOUT:
        _terminal_stderr = os.dup(sys.__stderr__.fileno())


def pytest_collection_modifyitems(config, items):
    left_out = set(OPT_IN) - set(re.findall(r"\w+", config.getoption("markexpr") or ""))
    dropped = [item for item in items if any(item.get_closest_marker(marker) for marker in left_out)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        ids = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in ids]
    # The slow tests build and run the C++ tests (sanitizers, qemu) under subprocess limits of
    # their own, up to 15 minutes: the default limit would end the run before theirs says what
    # hung, so they get a longer one (a test's own timeout mark wins).
    if not _HAVE_PYTEST_TIMEOUT:
        return
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TEST_TIMEOUT))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Without pytest-timeout: a test still running after its limit has every thread's Python
    stack dumped and the run ends with exit status 1 (faulthandler's watchdog is a C thread: it
    fires even while the hung call holds the GIL)."""
    limit = 0.0
    if not _HAVE_PYTEST_TIMEOUT:
        limit = SLOW_TEST_TIMEOUT if item.get_closest_marker("slow") else float(item.config.getini("timeout"))
    if limit > 0:
        # sys.stderr is captured (and lost at exit): the terminal's stderr, as pytest's own
        # faulthandler plugin keeps it.
        faulthandler.dump_traceback_later(limit, exit=True, file=_terminal_stderr)
    try:
        yield
    finally:
        if limit > 0:
            faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def native_reads(monkeypatch):
    """For the openai patch's tests: the number of responses tensorb64.openai.patch() read with
    the core (not handed back to the client's own parse); the patch is undone afterwards."""
    import tensorb64.openai
    from tensorb64._hosts import openai_client

    count = [0]
    original = openai_client._read_embeddings

    def counting(*args):
        parsed = original(*args)
        count[0] += parsed is not None
        return parsed

    monkeypatch.setattr(openai_client, "_read_embeddings", counting)
    yield count
    tensorb64.openai.unpatch()
