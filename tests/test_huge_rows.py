"""A row whose base64 text is longer than 2**31 characters: no 32-bit length or offset anywhere."""

from __future__ import annotations

import binascii
import os

import numpy as np
import pytest

import tensorb64


def available_memory() -> int | None:
    """Free memory in bytes, or None where this OS does not say (/proc/meminfo is Linux's; macOS's
    sysconf has no SC_AVPHYS_PAGES, Windows no sysconf)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


@pytest.mark.slow
def test_row_of_more_than_two_gib_of_text():
    n = 2**29 + 5  # 2 GiB + 20 bytes of float32: 2.86e9 characters of base64
    needed = 10 * 2**30  # input, text, decoded copy, and room to spare
    available = available_memory()
    if available is None:
        pytest.skip(f"needs {needed >> 30} GiB of free memory, and this OS does not say how much is free")
    if available < needed:
        pytest.skip(f"needs {needed >> 30} GiB of free memory, {available >> 30} GiB available")
    bits = np.arange(n, dtype=np.uint32)
    bits *= 2654435761  # spread the bits (Knuth's multiplicative hash) so every byte varies
    text = tensorb64.encode(bits.view(np.float32))
    assert len(text) == 4 * ((4 * n + 2) // 3) > 2**31
    decoded = np.frombuffer(binascii.a2b_base64(text), dtype="<u4")
    del text
    np.testing.assert_array_equal(decoded, bits)
