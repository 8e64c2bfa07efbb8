"""The vLLM plugin's swaps in Dynamo's vLLM worker, against Dynamo's own functions.

Opt-in (`-m vllm`: Dynamo's /pooling encoder calls vLLM's own tensor2binary) and run by
ci/vllm_check.sh, which sets TENSORB64_DYNAMO_WHEEL. Dynamo's functions are read from ai-dynamo
1.6.1's wheel into modules of their own names (tests/support/dynamo_code.py), the plugin is
registered as vLLM registers it in Dynamo's worker, the modules are imported, and each swapped
function is compared with Dynamo's own on the same inputs:

* ``dynamo.vllm.handlers._pooling_output_to_base64`` (the embeddings route): the same strings;
* ``dynamo.vllm.pooling_handlers._pooling_output_to_nested`` (/pooling, float): the same nested
  lists of the same floats (bit for bit, NaN and infinity included);
* ``dynamo.vllm.pooling_handlers._encode_pooling_output`` (/pooling, base64 and bytes): the same
  (string, shape) for every embed_dtype and endianness.

What a swap does not take (other dtypes, shapes, lists) is Dynamo's own, and gives its answer.
"""

from __future__ import annotations

import struct
import sys
import warnings

import pytest

with warnings.catch_warnings():  # vLLM's and torch's own import-time warnings are not this suite's
    warnings.simplefilter("ignore")
    vllm = pytest.importorskip("vllm", reason="vLLM is not installed here (ci/vllm_check.sh builds a venv with it)")
    torch = pytest.importorskip("torch", reason="torch is not installed")

from tensorb64 import vllm_plugin  # noqa: E402
from tensorb64._hosts import dynamo_vllm  # noqa: E402
from tensorb64._hosts.patching import install_module  # noqa: E402
from tests.support import dynamo_code  # noqa: E402

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


@pytest.fixture(scope="module")
def dynamo(tmp_path_factory):
    """Dynamo's two modules, imported after the plugin was registered: (handlers, pooling_handlers)."""
    with dynamo_code.installed(tmp_path_factory.mktemp("dynamo"), *dynamo_code.MODULES):
        vllm_plugin.register()
        import dynamo.vllm.handlers as handlers
        import dynamo.vllm.pooling_handlers as pooling_handlers

        yield handlers, pooling_handlers


def embeddings(batch, dim, seed=0):
    """float32 values over many magnitudes, with ±0, subnormals, float32's extremes, NaN and ±inf."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, dim, generator=generator, dtype=torch.float64)
    x *= torch.pow(10.0, torch.randint(-40, 39, (batch, dim), generator=generator).to(torch.float64))
    x = x.clamp(-3.4028234663852886e38, 3.4028234663852886e38).to(torch.float32)
    specials = [0.0, -0.0, 1e-45, -1.4e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, float("nan"), float("inf"),
                -float("inf"), 65504.0, 1e-8]
    flat = x.view(-1)
    count = min(len(specials), flat.numel())
    flat[:count] = torch.tensor(specials[:count])
    return x


def tensors():
    """Pooling outputs as Dynamo's worker gets them: rows, (1, D), token-level matrices, N-D, other
    float dtypes, views, grad, empty; each with an id."""
    x = embeddings(6, 384)
    yield "row", x[0]
    yield "(1, D)", x[1:2]
    yield "token matrix", x[:5]
    yield "3-D", x.reshape(2, 3, 384)
    yield "bfloat16", x[2].to(torch.bfloat16)
    yield "float16", x[3].to(torch.float16)
    yield "float64", x[3].to(torch.float64) * 1e300  # beyond float32: cast as torch casts
    yield "strided column", x[:, 5]
    yield "strided matrix", x[:, ::3]
    yield "requires grad", x[4].clone().requires_grad_()
    yield "empty row", torch.empty(0)
    yield "(0, D)", torch.empty(0, 384)
    yield "(3, 0)", torch.empty(3, 0)
    yield "scalar", torch.tensor(0.5)
    yield "3072", embeddings(1, 3072, seed=1)[0]
    yield "int64", torch.arange(7)


def bits(value):
    """A nested value with each float as its 8 bytes (NaN equal to itself, -0.0 not to 0.0), the
    types kept (an int is not a float)."""
    if isinstance(value, list):
        return ["list", [bits(item) for item in value]]
    if isinstance(value, float):
        return ["float", struct.pack("<d", value)]
    return [type(value).__name__, value]


@pytest.mark.parametrize("case", [case for case, _ in tensors()])
def test_nested_is_dynamos(dynamo, case):
    _, pooling = dynamo
    data = dict(tensors())[case]
    swapped = pooling._pooling_output_to_nested
    original = swapped.__tensorb64_replaces__
    assert bits(swapped(data)) == bits(original(data))


def test_nested_takes_what_it_should(dynamo, monkeypatch):
    """The core writes rows and matrices of float32, bfloat16 and float16; the rest is Dynamo's."""
    _, pooling = dynamo
    taken = []
    float_lists = dynamo_vllm._native._float_lists
    monkeypatch.setattr(dynamo_vllm._native, "_float_lists", lambda *a, **k: taken.append(1) or float_lists(*a, **k))
    for case, data in tensors():
        before = len(taken)
        pooling._pooling_output_to_nested(data)
        expected = data.dtype in (torch.float32, torch.bfloat16, torch.float16) and data.ndim in (1, 2)
        assert (len(taken) > before) == expected, case
    lists = [[0.5, 1.5], [2.5, 3.5]]
    assert pooling._pooling_output_to_nested(lists) == lists  # (a list: Dynamo's own path)


@pytest.mark.parametrize("endianness", dynamo_vllm.VLLM_ENDIANNESS)
@pytest.mark.parametrize("embed_dtype", dynamo_vllm.VLLM_EMBED_DTYPES)
def test_encoded_is_dynamos(dynamo, embed_dtype, endianness):
    _, pooling = dynamo
    swapped = pooling._encode_pooling_output
    original = swapped.__tensorb64_replaces__
    for case, data in tensors():
        assert swapped(data, embed_dtype, endianness) == original(data, embed_dtype, endianness), case
    assert swapped([0.5, 1.5], embed_dtype, endianness) == original([0.5, 1.5], embed_dtype, endianness)


def test_encoded_takes_what_it_should(dynamo, monkeypatch):
    """The core encodes every floating-point tensor; vLLM's tensor2binary (Dynamo's own path) is
    called for the rest alone."""
    from vllm.utils import serial_utils

    _, pooling = dynamo
    called = []
    tensor2binary = serial_utils.tensor2binary
    monkeypatch.setattr(serial_utils, "tensor2binary", lambda *a: called.append(1) or tensor2binary(*a))
    for case, data in tensors():
        before = len(called)
        pooling._encode_pooling_output(data, "float16", "big")
        assert (len(called) == before) == data.is_floating_point(), case
    pooling._encode_pooling_output([0.5], "float16", "big")
    assert called[-1:] == [1]


def test_vllms_names_are_dynamos_and_vllms(dynamo):
    """The embed_dtype and endianness names the swap takes are those Dynamo's pooling handlers
    accept and vLLM's serialiser has."""
    from vllm.utils.serial_utils import EMBED_DTYPES, ENDIANNESS

    assert set(dynamo_vllm.VLLM_EMBED_DTYPES) == set(EMBED_DTYPES)
    assert set(dynamo_vllm.VLLM_ENDIANNESS) == set(ENDIANNESS)
    source = dynamo_code.source("dynamo.vllm.pooling_handlers")
    assert "tensor2binary(tensor, embed_dtype, endianness)" in source


def test_encoded_refusals_are_dynamos(dynamo):
    """A name vLLM does not know: Dynamo's own answers (vLLM's assertion), as unswapped."""
    _, pooling = dynamo
    swapped = pooling._encode_pooling_output
    for embed_dtype, endianness in (("int8", "little"), ("float32", "middle")):
        with pytest.raises(AssertionError):
            swapped(torch.ones(3), embed_dtype, endianness)
        with pytest.raises(AssertionError):
            swapped.__tensorb64_replaces__(torch.ones(3), embed_dtype, endianness)


@pytest.mark.parametrize("case", [case for case, _ in tensors()])
def test_base64_is_dynamos(dynamo, case):
    handlers, _ = dynamo
    data = dict(tensors())[case]
    swapped = handlers._pooling_output_to_base64
    original = swapped.__tensorb64_replaces__
    assert swapped(data) == original(data)
    assert swapped([0.5, 1.5, 2.5]) == original([0.5, 1.5, 2.5])  # (a list: Dynamo's own path)


def test_swapped_once_on_import(dynamo):
    """Imported after register(): each function swapped, Dynamo's own kept beside it; patching
    again changes nothing."""
    handlers, pooling = dynamo
    swapped = (handlers._pooling_output_to_base64, pooling._pooling_output_to_nested, pooling._encode_pooling_output)
    for function in swapped:
        original = function.__tensorb64_replaces__
        assert original.__module__ in ("dynamo.vllm.handlers", "dynamo.vllm.pooling_handlers")
        assert not hasattr(original, "__tensorb64_replaces__")
    assert install_module(dynamo_vllm.DYNAMO_VLLM, dynamo_vllm.DYNAMO_MODULE, handlers) and install_module(dynamo_vllm.DYNAMO_VLLM, dynamo_vllm.DYNAMO_POOLING_MODULE, pooling)
    vllm_plugin.register()
    assert (handlers._pooling_output_to_base64, pooling._pooling_output_to_nested,
            pooling._encode_pooling_output) == swapped
    assert sys.modules["dynamo.vllm.pooling_handlers"] is pooling
