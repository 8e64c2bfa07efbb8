"""Which torch behaviour the dtype tests compare with.

tensorb64's bytes are fixed and documented: they are torch 2.13's casts (README, "dtype=").
Other torch releases cast some values differently (torch 2.11's float8_e4m3fn overflow is not
2.13's saturation), so a test that uses the installed torch as its oracle must first know
whether that torch still behaves as 2.13 does, and skip, naming the torch version and the
behaviour, where it does not. Each behaviour is probed on the installed torch itself (never
inferred from the version string), by a pure function of the cast's result so that the probe
logic can be tested on made-up casts (tests/test_reader.py).
"""

from __future__ import annotations

import math

REFERENCE_TORCH = "2.13"

# float32 values beyond float8_e4m3fn's largest finite value (448), and what torch 2.13 (and
# tensorb64) make of them: saturation at ±448 (0x7E / 0xFE), infinities included.
E4M3_OVERFLOW_INPUTS = (1e4, -1e4, 480.0, 465.0, math.inf, -math.inf)
E4M3_SATURATED_BITS = (0x7E, 0xFE, 0x7E, 0x7E, 0x7E, 0xFE)

BEHAVIOURS = {
    "fp8_e4m3fn_saturates": (
        "float32 values beyond ±448 (1e4, 480, 465, ±inf) cast to float8_e4m3fn saturate to ±448 (0x7E/0xFE)"
    ),
}

# The output dtypes (tensorb64 names) whose torch oracle depends on each behaviour.
OUTPUTS_DEPENDING_ON = {"fp8_e4m3fn_saturates": ("fp8_e4m3",)}


def e4m3_saturates(cast) -> bool:
    """True when ``cast(values) -> list of uint8 bit patterns`` saturates as torch 2.13 does."""
    return tuple(int(b) for b in cast(list(E4M3_OVERFLOW_INPUTS))) == E4M3_SATURATED_BITS


def torch_e4m3_cast(torch):
    """The installed torch's float32 -> float8_e4m3fn cast, as bit patterns."""

    def cast(values):
        return torch.tensor(values, dtype=torch.float32).to(torch.float8_e4m3fn).view(torch.uint8).tolist()

    return cast


def differences(version: str, e4m3_cast) -> dict:
    """{behaviour: skip reason} for every behaviour where this torch differs from 2.13."""
    found = {}
    if not e4m3_saturates(e4m3_cast):
        found["fp8_e4m3fn_saturates"] = (
            f"torch {version} does not behave as torch {REFERENCE_TORCH} (whose casts tensorb64 documents): "
            f"expected {BEHAVIOURS['fp8_e4m3fn_saturates']}, got bits "
            f"{[hex(int(b)) for b in e4m3_cast(list(E4M3_OVERFLOW_INPUTS))]} for {list(E4M3_OVERFLOW_INPUTS)}"
        )
    return found


def installed_differences() -> dict:
    """differences() for the installed torch ({} without torch: the torch tests skip anyway)."""
    try:
        import torch
    except ImportError:
        return {}
    return differences(torch.__version__, torch_e4m3_cast(torch))


def output_skip_reason(out_dtype: str, found: dict | None = None):
    """The reason to skip comparing output ``out_dtype`` with the installed torch, or None."""
    found = installed_differences() if found is None else found
    for behaviour, reason in found.items():
        if out_dtype in OUTPUTS_DEPENDING_ON.get(behaviour, ()):
            return reason
    return None


def compared_outputs(out_dtypes, found: dict | None = None) -> list:
    """The output dtypes whose torch oracle behaves as 2.13 here (for hypothesis strategies)."""
    return [d for d in out_dtypes if output_skip_reason(d, found) is None]


def output_params(out_dtypes) -> list:
    """pytest params of the output dtypes, each skipped with its reason where torch differs."""
    import pytest

    found = installed_differences()
    params = []
    for d in out_dtypes:
        reason = output_skip_reason(d, found)
        params.append(pytest.param(d, marks=pytest.mark.skip(reason=reason)) if reason else d)
    return params
