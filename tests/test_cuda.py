"""CUDA tensors on a CUDA device: every entry point gives the bytes of the tensor's CPU copy.

Marked `cuda` and skipped, with the reason, where torch has no CUDA device; ci/gpu_check.sh
runs them on a GPU machine. The pipeline's logic (chunks, slots, waiting, bounds) is tested
without a GPU in tests/test_cuda_staging.py; these check the device side: torch's CUDA casts
against the core's (GPU narrowing), streams, device indices, pinned buffers.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.threads import failures_in_threads

torch = pytest.importorskip("torch")

import tensorb64  # noqa: E402
from tensorb64 import _formats  # noqa: E402
from tensorb64._cuda import route as _cuda  # noqa: E402
from tensorb64._cuda import staging as _staging  # noqa: E402
from tensorb64.openai import embedding_data, iter_response_body, response_body  # noqa: E402

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine (torch.cuda.is_available() is False)"),
]

OUTPUTS = ("float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2")
SOURCES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# Below the plain-copy threshold; one chunk, below NARROW_FROM (not narrowed); several chunks,
# narrowed on the GPU for every source (2100x1024 is 4.2 MB in a 16-bit dtype).
SHAPES = ((1, 384), (64, 3072), (2100, 1024))


def edge_values(rows: int, width: int, dtype, device="cuda") -> torch.Tensor:
    """Normal values and, spread over the rows, what GPU narrowing must not change: NaN
    payloads, infinities, values past each narrow format's range, subnormals, rounding ties."""
    g = torch.Generator().manual_seed(rows * 7919 + width)
    t = torch.randn(rows, width, generator=g, dtype=torch.float32) * 0.05
    specials = torch.tensor(
        [0x7FC00001, 0xFFA00000 - (1 << 32), 0x7F800000, 0xFF800000 - (1 << 32), 0x00000001, 0x00400000,
         0x33000000, 0x33800001, 0x477FF000, 0x47800000, 0x43E00000, 0x43E80000, 0x7F7FFFFF, 0x387FC000],
        dtype=torch.int32,
    ).view(torch.float32)
    for row in range(1, rows, max(1, rows // 5)):
        t[row, : min(width, len(specials))] = specials[: min(width, len(specials))]
    if rows > 2:  # a row of ties for float16 (bit 12 set exactly) and bfloat16 (bit 15)
        t[rows - 1] = (torch.randn(width, generator=g).abs().view(torch.int32) & ~0x1FFF | 0x1000).view(torch.float32)
    return t.to(dtype).to(device)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_every_entry_point_equals_the_cpu_copy(source, shape):
    t = edge_values(*shape, source)
    c = t.cpu()
    view, cview = t[:, : shape[1] // 2 + 1], c[:, : shape[1] // 2 + 1]
    for output in OUTPUTS:
        for x, cx in ((t, c), (view, cview)):
            assert tensorb64.encode_rows(x, dtype=output) == tensorb64.encode_rows(cx, dtype=output), output
            assert tensorb64.encode_binary_body(x, dtype=output, byteorder="big") == tensorb64.encode_binary_body(cx, dtype=output, byteorder="big"), output
            assert response_body(x, model="m", encoding_format="base64", dtype=output) == response_body(cx, model="m", encoding_format="base64", dtype=output), output
        vllm = {"model": "m", "encoding_format": "base64", "dtype": output, "layout": "vllm"}
        assert response_body(t, **vllm) == response_body(c, **vllm), output
        assert tensorb64.encode(t, dtype=output) == tensorb64.encode(c, dtype=output)
    assert embedding_data(view, encoding_format="base64") == embedding_data(cview, encoding_format="base64")
    assert b"".join(iter_response_body(t, model="m", encoding_format="base64", dtype="float16", chunk_size=100_000)) == response_body(c, model="m", encoding_format="base64", dtype="float16")
    finite = torch.nan_to_num(t, nan=0.0, posinf=1.0, neginf=-1.0)
    for float_format in ("repr", "shortest", "orjson"):
        assert response_body(finite, model="m", encoding_format="float", float_format=float_format) == response_body(
            finite.cpu(), model="m", encoding_format="float", float_format=float_format)
        assert tensorb64.json_rows(finite, float_format=float_format) == tensorb64.json_rows(finite.cpu(), float_format=float_format)
    if shape[0] > 1:  # row 1 starts with a NaN
        with pytest.raises(ValueError, match=r"row 1, column 0 is NaN or infinite"):
            response_body(t, model="m", encoding_format="float")
        with pytest.raises(ValueError, match=r"row 1, column 0 is NaN or infinite"):
            iter_response_body(t, model="m", encoding_format="float")


def test_gpu_narrowing_equals_the_core_on_every_float16_and_bfloat16_neighbourhood():
    """float32 values around every float16 and bfloat16 value (each, its midpoints to its
    neighbours, and one ulp either side of them) narrowed on the GPU give the core's bytes."""
    bits = torch.arange(0, 1 << 16, dtype=torch.int32)
    for narrow in (torch.float16, torch.bfloat16):
        centres = bits.to(torch.int16).view(narrow).to(torch.float32).view(torch.int32)
        candidates = torch.cat([centres + d for d in (-0x1001, -0x1000, -1, 0, 1, 0x1000, 0x1001)] if narrow == torch.float16
                               else [centres + d for d in (-0x8001, -0x8000, -1, 0, 1, 0x8000, 0x8001)])
        candidates = candidates.view(torch.float32)
        for output in OUTPUTS:
            # only what is narrowed on the GPU: NaN, infinities and values past the output's
            # largest finite one are narrowed by the core (edge_values covers those)
            largest = torch.finfo(getattr(torch, _formats.output_type(output).torch_name)).max
            kept = candidates[torch.isfinite(candidates) & (candidates.abs() <= largest)]
            values = kept[: kept.numel() // 1024 * 1024].reshape(-1, 1024)
            expected = tensorb64.encode_binary_body(values, dtype=output)[0]
            always = replace(_staging.default_staging(), narrow_from=0)  # (~1.8 MB: below NARROW_FROM)
            with _staging.forced(always):
                device = values.cuda()
                assert _cuda.route(device).row_bytes(device, output, "little", 1)[0] == expected, (narrow, output)


def test_the_copy_is_ordered_after_work_on_a_non_default_stream():
    stream = torch.cuda.Stream()
    expected = None
    with torch.cuda.stream(stream):
        for _ in range(5):
            a = torch.randn(2048, 2048, device="cuda")
            torch.cuda._sleep(2_000_000)  # keep the stream busy: an unordered copy would read old values
            t = (a @ a)[:512] * 1e-3
            body = tensorb64.encode_binary_body(t, dtype="float16")[0]
            rows = tensorb64.encode_rows(t)
            expected = tensorb64.encode_binary_body(t.cpu(), dtype="float16")[0]
            assert body == expected
            assert rows == tensorb64.encode_rows(t.cpu())
    torch.cuda.synchronize()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one CUDA device: the second device index is not tested")
def test_a_second_device():
    t = edge_values(300, 1024, torch.bfloat16, device="cuda:1")
    with torch.cuda.device(0):
        assert tensorb64.encode_binary_body(t, dtype="fp8_e4m3") == tensorb64.encode_binary_body(t.cpu(), dtype="fp8_e4m3")
        assert tensorb64.encode_rows(t) == tensorb64.encode_rows(t.cpu())


def test_rows_of_tensors_on_the_gpu_and_beside_a_cpu_row():
    """A list of rows on the GPU is stacked there (one batch); a CPU row among them (torch.stack
    refuses the mix) has each row copied to the host first: the same bytes either way."""
    t = edge_values(64, 3072, torch.float32)
    c = t.cpu()
    for rows in (list(t), [c[0], *t[1:]]):
        assert tensorb64.encode_rows(rows) == tensorb64.encode_rows(c)
        assert response_body(rows, model="m", encoding_format="base64", dtype="float16") == response_body(
            c, model="m", encoding_format="base64", dtype="float16")


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one CUDA device: rows on two devices are not tested")
def test_rows_on_two_devices():
    t = edge_values(64, 1024, torch.bfloat16)
    rows = [row.to(f"cuda:{i % 2}") for i, row in enumerate(t)]
    assert tensorb64.encode_rows(rows) == tensorb64.encode_rows(t.cpu())
    assert tensorb64.encode_binary_body(rows, dtype="fp8_e4m3") == tensorb64.encode_binary_body(t.cpu(), dtype="fp8_e4m3")


def test_device_index_zero_named_explicitly_and_requires_grad():
    t = edge_values(200, 1024, torch.float32, device=torch.device("cuda", 0)).requires_grad_()
    assert tensorb64.encode_binary_body(t, dtype="bfloat16") == tensorb64.encode_binary_body(t.detach().cpu(), dtype="bfloat16")
    assert tensorb64.encode_rows(t) == tensorb64.encode_rows(t.detach().cpu())


def test_concurrent_threads_on_the_gpu():
    tensors = [edge_values(300 + 17 * i, 1024, (torch.float32, torch.bfloat16)[i % 2]) for i in range(8)]
    expected = [(tensorb64.encode_rows(t.cpu()), response_body(t.cpu(), model="m", encoding_format="base64", dtype="float16")) for t in tensors]
    def check(i):
        return (tensorb64.encode_rows(tensors[i]), response_body(tensors[i], model="m", encoding_format="base64", dtype="float16")) == expected[i]

    failures = failures_in_threads(check, count=8, repeats=5)
    assert failures == []
    staging = _staging.default_staging().pool
    assert staging.leased == 0 and staging.held <= staging.limit and staging.reuses > 0


def test_pinned_buffers_are_reused_and_pinned():
    t = torch.randn(1024, 3072, device="cuda")
    staging = _staging.default_staging().pool
    tensorb64.encode_rows(t)
    allocations = staging.allocations
    for _ in range(3):
        tensorb64.encode_rows(t)
        tensorb64.encode_binary_body(t, dtype="float16")
    assert staging.leased == 0
    assert staging.allocations <= allocations + 2  # the pipeline's slots, once
    host = _cuda.route(t).host_copy(t)
    assert host.is_pinned() and torch.equal(host, t.cpu())
