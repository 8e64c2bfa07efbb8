"""Shared fixtures: every kernel-facing test runs once per SIMD level this CPU has."""

from __future__ import annotations

import pytest

from tensorb64 import _native

LEVELS = _native.available_simd_levels()


@pytest.fixture(params=LEVELS)
def each_simd_level(request):
    """Runs the test with the kernel forced to each available level in turn (as pybase64 does)."""
    previous = _native.simd_level()
    _native._set_simd_level(request.param)
    try:
        yield request.param
    finally:
        _native._set_simd_level(previous)
