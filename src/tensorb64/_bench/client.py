"""The client section (`--section client`): a whole /v1/embeddings response body back to one
float32 array, the way clients read it today.

Bodies written by tensorb64.openai.response_body for X float32 N(0, 0.05), B x D in 64x3072 and
1024x1024: base64, and float text in both layouts (shortest: orjson's and vLLM's digits; repr:
Starlette's json.dumps). One thread, interleaved medians. The routes, each ending in a [B, D]
float32 array that is checked bit for bit against X before it is timed:

  openai create       client.embeddings.create(input=..., model=...) through a mock transport
                      (the body served from memory: no network), then numpy.array of the rows;
                      for float bodies with encoding_format="float" (not timed above
                      OPENAI_FLOAT_MAX_VALUES: pydantic checks every value, seconds a call)
  openai parse        what that client does after the transport: json.loads, then per row
                      numpy.frombuffer(base64.b64decode(s), "float32").tolist()
                      (openai.lib._parsing._embeddings), then numpy.array; for float bodies
                      json.loads then numpy.array
  orjson + pybase64   orjson.loads, then each row decoded by pybase64 (validate=True: its SIMD
                      path, 5x its default's speed) into one buffer allocated after the parse
  pybase64 floor      pybase64 alone over the row strings already taken out of the body, into
                      one buffer allocated beforehand: no JSON work at all
  orjson + numpy      float bodies: orjson.loads, then numpy.array(rows, dtype=numpy.float32)
and tensorb64's own routes (tensorb64_routes: decode_response_body, also with threads=2 on the
1024x1024 bodies, and embed through the same mock for base64 bodies): ratios are each route's time
over decode_response_body's. Every case runs in both allocator states (allocator.py: "fresh", a
process whose large blocks are new memory each call, and "raised", freed memory reused, as in a
long-running client), with minor page faults per call; on the 1024x1024 bodies
decode_response_body also runs with the package's page preparation off. The first call of a
process: decode_response_body of the 1024x3072 base64 body (16.8 MB) into a new array against its
later calls, each in a fresh process, prepared and unprepared.

The patched clients (tensorb64.openai.patch()): each library's own call with the patch
off, on, and at its floor (the patch with its body reading taken away: what any patch must still
pay, the Python floats and the client's own models), interleaved in the same rounds (each call sets
the patch first), the mock answering each request in the format it asks for (base64 for openai's
default, floats where none or "float" is asked), its results checked equal bit for bit before
they are timed; the 1-minute load average before and after each case:

  openai create() default      base64 body          openai create(encoding_format="float")
  LangChain embed_documents    base64 (its default) LlamaIndex get_text_embedding_batch (base64)
  litellm.embedding() default  float body (it posts no encoding_format; openai provider), also
                               with its RAW RESPONSE line built (the openai client's patch alone)
  litellm.embedding() hosted_vllm default   float body, LiteLLM's own HTTP handler
A row whose library is not installed is skipped, with the reason.
"""

from __future__ import annotations

import base64
import importlib
import json

import numpy as np

import tensorb64.openai
from tensorb64.openai import response_body
from . import os_facts
from .allocator import (
    allocator_states,
    first_call_lines,
    first_call_of_a_process,
    page_floor,
    page_floor_lines,
    unprepared,
)
from .report import fmt_us, markdown_table, spread_text, text_table
from .timing import measure_paths, minor_faults_per_call

NAME = "client"
REQUIRES = ("orjson", "pybase64", "openai")

SHAPES = ((64, 3072), (1024, 1024))
BODIES = ("base64", "float shortest", "float repr")
MODEL = "text-embedding-3-large"
# openai's float route validates each value with pydantic: above this many values a call takes
# seconds and is not timed (its output is still checked).
OPENAI_FLOAT_MAX_VALUES = 64 * 3072
DECODER = "tensorb64 decode_response_body"
EMBED = "tensorb64 embed(client) (mock transport)"
THREADED = "tensorb64 decode_response_body threads=2"
THREADED_FROM_VALUES = 1024 * 1024  # threads=2 is timed on bodies of this many values or more
UNPREPARED = "tensorb64 decode_response_body, pages unprepared"  # on bodies of THREADED_FROM_VALUES too
FIRST_CALL_SHAPE = (1024, 3072)


def _http_library(openai):
    """httpx (openai 1.x and 2.x) or httpx2 (3.x): the library openai's HTTP client derives from."""
    base = next(c for c in openai.DefaultHttpxClient.__mro__ if not c.__module__.startswith("openai"))
    return importlib.import_module(base.__module__.partition(".")[0])


def mock_client(openai, body: bytes):
    """An openai.OpenAI whose every request is answered with `body` from memory."""
    http = _http_library(openai)

    def answer(request):
        return http.Response(200, content=body, headers={"content-type": "application/json"})

    return openai.OpenAI(api_key="bench", base_url="http://bench.invalid/v1", max_retries=0,
                         http_client=openai.DefaultHttpxClient(transport=http.MockTransport(answer)))


def tensorb64_routes(api, kind: str, body: bytes, client, inputs, values: int) -> dict:
    """{name: call} for tensorb64's client-side API (`api`: tensorb64.openai, or the tests'
    stand-in) on this body of `values` numbers: the one place where it is wired in. Each call
    must return the [B, D] float32 array (it is checked against X like every other route)."""
    routes = {DECODER: lambda: api.decode_response_body(body)}
    if values >= THREADED_FROM_VALUES:
        routes[THREADED] = lambda: api.decode_response_body(body, threads=2)
        if api is tensorb64.openai and os_facts.PAGE_PREPARATION:
            routes[UNPREPARED] = unprepared(routes[DECODER])
    if kind == "base64":  # embed asks for base64 whatever the caller wants
        routes[EMBED] = lambda: api.embed(client, input=inputs, model=MODEL)
    return routes


def routes(mods: dict, api, kind: str, body: bytes, B: int, D: int) -> dict:
    """{name: (call, skip reason or None)} for one body; `api`: tensorb64.openai."""
    openai, orjson, pybase64 = mods["openai"], mods["orjson"], mods["pybase64"]
    client = mock_client(openai, body)
    inputs = ["x"] * B
    f32 = np.float32
    paths = {}
    if kind == "base64":
        b64decode = pybase64.b64decode
        row_bytes = D * 4

        def openai_parse():
            rows = [np.frombuffer(base64.b64decode(e["embedding"]), dtype="float32").tolist() for e in json.loads(body)["data"]]
            return np.array(rows, dtype=f32)

        def orjson_pybase64():
            data = orjson.loads(body)["data"]
            out = np.empty((len(data), D), f32)
            buffer = memoryview(out).cast("B")
            for e in data:
                i = e["index"]
                buffer[i * row_bytes:(i + 1) * row_bytes] = b64decode(e["embedding"], validate=True)
            return out

        strings = [e["embedding"] for e in orjson.loads(body)["data"]]
        floor_out = np.empty((B, D), f32)
        floor_buffer = memoryview(floor_out).cast("B")

        def floor():
            for i, s in enumerate(strings):
                floor_buffer[i * row_bytes:(i + 1) * row_bytes] = b64decode(s, validate=True)
            return floor_out

        paths["openai create + numpy.array"] = (
            lambda: np.array([e.embedding for e in client.embeddings.create(input=inputs, model=MODEL).data], dtype=f32), None)
        paths["openai parse (json.loads, b64decode, .tolist()) + numpy.array"] = (openai_parse, None)
        paths["orjson.loads + pybase64 into one buffer"] = (orjson_pybase64, None)
        paths["pybase64 alone over the row strings (floor)"] = (floor, None)
    else:
        slow = None
        if B * D > OPENAI_FLOAT_MAX_VALUES:
            slow = f"openai create (float) not timed at {B}x{D}: pydantic checks every value, seconds a call"
        paths["openai create (float) + numpy.array"] = (
            lambda: np.array([e.embedding for e in client.embeddings.create(input=inputs, model=MODEL, encoding_format="float").data],
                             dtype=f32), slow)
        paths["openai parse (json.loads) + numpy.array"] = (
            lambda: np.array([e["embedding"] for e in json.loads(body)["data"]], dtype=f32), None)
        paths["orjson.loads + numpy.array"] = (
            lambda: np.array([e["embedding"] for e in orjson.loads(body)["data"]], dtype=f32), None)
    paths.update({name: (call, None) for name, call in tensorb64_routes(api, kind, body, client, inputs, B * D).items()})
    return paths


PATCH_TARGETS = {  # the patch's targets at 64x3072: patch off / patch on, at least
    "openai create() default": 2, 'openai create(encoding_format="float")': 20,
    # LiteLLM's: >= 3 through the openai client's patch alone, >= 20 with its post_call line not
    # built where the logger drops it, which patch() does too (_hosts/litellm.py).
    "LangChain embed_documents": 1.5, "LlamaIndex get_text_embedding_batch": 1.5, "litellm.embedding() default": 20,
    # The caller keeps the base64 strings: nothing for the patch to do, and nothing it may cost.
    'openai create(encoding_format="base64")': 1,
}
BASE64_KEPT = 'openai create(encoding_format="base64")'
ON, OFF, FLOOR = "patch on", "patch off", "patch floor"
# Untimed calls before each sample: a state's first calls after another state's run slower (up to
# 1 ms at 64x3072, for about five calls: patch() recognising the client again after unpatch(),
# and the memory the other state's calls left), which is the switching, not the state.
SETTLE_CALLS = 4
LINE_BUILT = "patch on, RAW RESPONSE line built"  # LiteLLM's default: the openai client's patch alone
LINE_BUILT_FOR = "litellm.embedding() default"


def _library_calls(mods: dict, x, bodies: dict) -> tuple[dict, list]:
    """({library call name: (call returning the rows as lists of Python floats)}, [skip reasons])
    for the libraries installed, over one mock transport answering from `bodies`."""
    import os

    openai = mods["openai"]
    http = _http_library(openai)
    B = x.shape[0]

    def answer(request):
        asked = json.loads(request.content)
        return http.Response(200, content=bodies[asked.get("encoding_format", "float")],
                             headers={"content-type": "application/json"})

    def http_client():
        return openai.DefaultHttpxClient(transport=http.MockTransport(answer))

    url = "http://bench.invalid/v1"
    client = openai.OpenAI(api_key="bench", base_url=url, max_retries=0, http_client=http_client())
    inputs = ["x"] * B
    calls = {
        "openai create() default": lambda: [e.embedding for e in client.embeddings.create(input=inputs, model=MODEL).data],
        'openai create(encoding_format="float")': lambda: [
            e.embedding for e in client.embeddings.create(input=inputs, model=MODEL, encoding_format="float").data],
        BASE64_KEPT: lambda: [
            e.embedding for e in client.embeddings.create(input=inputs, model=MODEL, encoding_format="base64").data],
    }
    skipped = []
    try:
        from langchain_openai import OpenAIEmbeddings
    except ImportError as e:
        skipped.append(not_timed("LangChain embed_documents", "LangChain's openai package", "langchain_openai", e))
    else:
        # One request for the batch (its default chunk_size, 1000, would split 1024 inputs in
        # two); check_embedding_ctx_length=True would download a tiktoken file.
        lc = OpenAIEmbeddings(model=MODEL, api_key="bench", base_url=url, max_retries=0, http_client=http_client(),
                              check_embedding_ctx_length=False, chunk_size=B)
        calls["LangChain embed_documents"] = lambda: lc.embed_documents(inputs)
    try:
        from llama_index.embeddings.openai import OpenAIEmbedding
    except ImportError as e:
        skipped.append(not_timed("LlamaIndex get_text_embedding_batch", "LlamaIndex's openai embeddings", "llama_index", e))
    else:
        li = OpenAIEmbedding(model=MODEL, api_key="bench", api_base=url, max_retries=0, http_client=http_client(),
                             embed_batch_size=B)
        calls["LlamaIndex get_text_embedding_batch"] = lambda: li.get_text_embedding_batch(inputs)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of its cost map
    try:
        # LiteLLM first, so that where it is missing the reason names it (it needs httpx itself).
        litellm = importlib.import_module("litellm")
        HTTPHandler = importlib.import_module("litellm.llms.custom_httpx.http_handler").HTTPHandler  # noqa: N806
        httpx = importlib.import_module("httpx")  # LiteLLM's own HTTP handler (hosted_vllm) is built on httpx
    except ImportError as e:
        skipped.append(not_timed("litellm.embedding()", "LiteLLM", "litellm", e))
    else:
        def plain_answer(request):
            asked = json.loads(request.content)
            return httpx.Response(200, content=bodies[asked.get("encoding_format", "float")],
                                  headers={"content-type": "application/json"})

        handler = HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(plain_answer)))
        calls["litellm.embedding() default"] = lambda: [
            d["embedding"] for d in litellm.embedding(model=f"openai/{MODEL}", input=inputs, client=client, api_base=url,
                                                      api_key="bench").model_dump()["data"]]
        calls["litellm.embedding() hosted_vllm default"] = lambda: [
            d["embedding"] for d in litellm.embedding(model=f"hosted_vllm/{MODEL}", input=inputs, client=handler,
                                                      api_base=url, api_key="bench").model_dump()["data"]]
    return calls, skipped


def not_timed(route: str, library: str, module: str, error: ImportError) -> str:
    """Why a library's route is not timed, naming what is missing: the library itself (its
    module ``module`` not installed), or what its import needed and did not find."""
    missing = (getattr(error, "name", None) or "").split(".")[0]
    if missing == module.split(".")[0]:
        return f"{route} not timed: {library} is not installed ({module})"
    return f"{route} not timed: {library} is installed, but importing it failed ({error})"


class _Floor:
    """The patch with its body reading taken away: each response's rows and the rest of its body
    (the body with each embedding cut out) read once beforehand, so that a call pays only for what
    no reader can avoid, the Python floats (one .tolist()) and the client's own models and
    processing. off / floor is the best ratio a patch could reach."""

    def __init__(self, bodies: dict):
        from tensorb64._codec.body_reader import rows_and_offsets, without_embeddings
        from tensorb64._hosts import litellm as litellm_host
        from tensorb64._hosts import openai_client as openai_host

        self.modules = (openai_host, litellm_host)
        self.originals = (openai_host._read_embeddings, litellm_host.loads_embeddings)
        self.read = {}  # len(body): (rows, the rest of the body), for each body served
        for body in bodies.values():
            rows, offsets = rows_and_offsets(body)
            self.read[len(body)] = (rows, without_embeddings(body, offsets))

    def read_embeddings(self, response_wrapper, cast_to):  # openai_client._read_embeddings without the reading
        http_response = response_wrapper.http_response
        rows, rest = self.read[len(http_response.content)]
        parsed = response_wrapper._client._process_response_data(data=json.loads(rest), cast_to=cast_to,
                                                                  response=http_response)
        values = rows.tolist()
        for entry in parsed.data:
            entry.embedding = values[entry.index]
        return parsed

    def loads_embeddings(self, body):  # litellm.loads_embeddings without the reading
        rows, rest = self.read[len(body)]
        if rows.dtype.itemsize == 4:  # base64 rows, kept as strings: no bench call asks LiteLLM for them
            return self.originals[1](body)
        response = json.loads(rest)
        values = rows.tolist()
        for entry in response["data"]:
            entry["embedding"] = values[entry["index"]]
        return response

    def __enter__(self):
        self.modules[0]._read_embeddings, self.modules[1].loads_embeddings = self.read_embeddings, self.loads_embeddings

    def __exit__(self, *exc):
        self.modules[0]._read_embeddings, self.modules[1].loads_embeddings = self.originals


def _with_patch(state: str, call, floor: _Floor):
    from tensorb64._hosts import litellm as litellm_host

    patch, unpatch = tensorb64.openai.patch, tensorb64.openai.unpatch

    def run():
        if state == OFF:
            unpatch()
            return call()
        patch()
        if state == ON:
            return call()
        if state == LINE_BUILT:  # the post_call hook sees every logger keep the line
            drops = litellm_host._drops
            litellm_host._drops = lambda logger, level: False
            try:
                return call()
            finally:
                litellm_host._drops = drops
        with floor:
            return call()

    return run


def patch_cases(mods: dict, cfg: dict, log) -> tuple[list, list]:
    """Each library call with the patch off, on, and at its floor, at each shape: (cases, skip
    reasons). Each case carries the 1-minute load average before and after it was timed."""
    from .report import load_average

    cases, skipped = [], []
    try:
        for B, D in ((3, 8), (2, 5)) if cfg["mode"] == "smoke" else SHAPES:
            x = np.random.default_rng(B * D).normal(0, 0.05, (B, D)).astype(np.float32)
            bodies = {kind: _body(kind if kind == "base64" else "float shortest", x) for kind in ("base64", "float")}
            floor = _Floor(bodies)
            calls, skipped = _library_calls(mods, x, bodies)
            for name, call in calls.items():
                states = {LINE_BUILT_FOR: (OFF, ON, FLOOR, LINE_BUILT), BASE64_KEPT: (OFF, ON)}.get(name, (OFF, ON, FLOOR))
                runs = {state: _with_patch(state, call, floor) for state in states}
                if name == BASE64_KEPT:  # the same strings
                    got = {state: run() for state, run in runs.items()}
                    same = all(v == got[OFF] for v in got.values()) and all(isinstance(s, str) for s in got[ON])
                else:
                    # Bit for bit the unpatched call's floats (a float body's shortest float32 text
                    # reads to doubles near, not at, X's values: they round back to X).
                    got = {state: np.array(run(), np.float64) for state, run in runs.items()}
                    same = (all(np.array_equal(got[OFF].view(np.uint64), v.view(np.uint64)) for v in got.values())
                            and np.array_equal(got[ON].astype(np.float32), x))
                errors = [] if same else [f"{name}: patched values differ from unpatched (or from the embeddings)"]
                paths = {f"{name}, {state}": (run, None) for state, run in runs.items()}
                load = [load_average()]
                results = measure_paths(paths, cfg, checked=not errors, ref=f"{name}, {ON}", ratio_key="vs_patched",
                                        settle=SETTLE_CALLS)
                load.append(load_average())
                for e in errors:
                    log(f"  ERROR client patch B={B} D={D}: {e}")
                cases.append({"library": name, "B": B, "D": D, "results": results, "errors": errors, "load": load})
                if cfg["mode"] != "smoke" and not errors:
                    log(f"  done client patch {name:<40} B={B:<4} D={D:<4} " +
                        ", ".join(f"{r['path'][len(name) + 2:]} {r['us']:.0f} µs" for r in results if "us" in r) +
                        f" (load {load[0]:.1f}-{load[1]:.1f})")
    finally:
        tensorb64.openai.unpatch()
    return cases, skipped


def patch_rows(cases):
    for c in cases:
        for r in c["results"]:
            cells = (fmt_us(r["us"]), spread_text(r), f"{r['vs_patched']:.2f}×" if "vs_patched" in r else "") \
                if "us" in r else ("error", "", "")
            yield (r["path"], str(c["B"]), str(c["D"]), *cells)


def _state(case, state):
    """The measure of the case's `state` (None where it was not timed)."""
    name = f"{case['library']}: {state}"
    return next((r for r in case["results"] if r["path"] == name and "us" in r), None)


def _ratio(case, state):
    """The case's patch-off time over its `state` time (None where either was not timed)."""
    off, other = _state(case, OFF), _state(case, state)
    return off["us"] / other["us"] if off and other else None


def _spread(m) -> float:
    return (m["p75"] - m["p25"]) / m["us"]


# Where the floor measured in the run is below a target (off / floor < target: no patch could
# reach it on this machine), the patch is held to the floor instead: its time within this much of
# the floor's (the reading it adds to what any patch must still pay).
NEAR_FLOOR = 1.1
# The base64 rows the caller keeps (nothing for the patch to do: target 1) are met within the
# interleaved rows' own spread, but never more than this below the target: a patched call 5%
# slower is still noise on a loaded machine; one 10% slower is a cost, however noisy the run.
MOST_ALLOWED_SPREAD = 0.05


def _patch_verdict(case, target) -> str:
    """Whether the patch meets its target, stated where the target can be reached: against the
    floor measured in the same run where the floor is below it; for the base64 rows the caller
    keeps (nothing to do, target 1), within the interleaved rows' own spread, at most
    MOST_ALLOWED_SPREAD."""
    ratio, floor = _ratio(case, ON), _ratio(case, FLOOR)
    if case["library"] == BASE64_KEPT:
        spread = _spread(_state(case, OFF)) + _spread(_state(case, ON))
        allowed = min(spread, MOST_ALLOWED_SPREAD)
        met = ratio >= target - allowed
        return (f"patch off / on = {ratio:.2f} (target >= {target}, less the rows' spread {spread:.0%}, "
                f"at most {MOST_ALLOWED_SPREAD:.0%}: >= {target - allowed:.2f})  {'met' if met else 'NOT met'}")
    if floor is not None and floor < target:
        near = floor / ratio  # the patched call's time over the floor's
        return (f"patch off / on = {ratio:.2f}; the target >= {target} is out of reach here (off / floor = "
                f"{floor:.2f}): on / floor = {near:.2f} (target <= {NEAR_FLOOR})  {'met' if near <= NEAR_FLOOR else 'NOT met'}")
    return (f"patch off / on = {ratio:.2f} (target >= {target})  {'met' if ratio >= target else 'NOT met'}"
            f"{'' if floor is None else f'; off / floor = {floor:.2f}'}")


def patch_target_lines(cases) -> list:
    lines = []
    for c in cases:
        if (c["B"], c["D"]) != (64, 3072) or c["library"] not in PATCH_TARGETS:
            continue
        line_built = _ratio(c, LINE_BUILT)
        if _ratio(c, ON) is not None:
            target = PATCH_TARGETS[c["library"]]
            load = c.get("load", [float("nan")] * 2)
            lines.append(f"  {c['library']} 64x3072: {_patch_verdict(c, target)}; load {load[0]:.1f}-{load[1]:.1f}")
            if line_built is not None:
                lines.append(f"  {c['library']} 64x3072, the openai client's patch alone (RAW RESPONSE line built): "
                             f"off / on = {line_built:.2f} (target >= 3)  {'met' if line_built >= 3 else 'NOT met'}")
    return lines


PATCH_COLUMNS = ("library call", "B", "D", "µs/call", "spread", "× patch on")


def _check(paths: dict, x) -> list:
    """Problems found comparing each route's array with X bit for bit (empty when all agree)."""
    problems = []
    for name, (call, _skip) in paths.items():
        got = call()
        if not (isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == x.shape
                and np.array_equal(got.view(np.uint32), x.view(np.uint32))):
            problems.append(f"{name}: the array differs from the embeddings the body was written from")
    return problems


def _body(kind: str, x) -> bytes:
    usage = {"prompt_tokens": 8 * x.shape[0], "total_tokens": 8 * x.shape[0]}
    if kind == "base64":
        return response_body(x, model=MODEL, usage=usage, encoding_format="base64")
    return response_body(x, model=MODEL, usage=usage, encoding_format="float", float_format=kind.split()[1])


_FIRST_CALL_SETUP = """
import numpy
from tensorb64.openai import decode_response_body, response_body
x = numpy.random.default_rng(0).normal(0, 0.05, ({B}, {D})).astype(numpy.float32)
body = response_body(x, model="m", encoding_format="base64")
decode_response_body(response_body(x[:1], model="m", encoding_format="base64"))
def call():
    return decode_response_body(body)
"""


def measure_first_calls(cfg, log) -> list:
    """decode_response_body of the large base64 body into a new array: its first call in a fresh
    process against its later calls, prepared and unprepared (allocator.first_call_of_a_process)."""
    B, D = (64, 384) if cfg["mode"] == "smoke" else FIRST_CALL_SHAPE
    runs = 1 if cfg["mode"] == "smoke" else 5 if cfg["mode"] == "quick" else 9
    out = []
    for prepared in (True, False) if os_facts.PAGE_PREPARATION else (False,):
        got = first_call_of_a_process(_FIRST_CALL_SETUP.format(B=B, D=D), runs=runs, prepared=prepared)
        out.append({"what": f"decode_response_body base64 {B}x{D}", "B": B, "D": D, **got})
        log(f"  done client first call ({'prepared' if prepared else 'unprepared'}): {got['ratio']:.2f}x a later call")
    return out


def run(mods: dict, cfg: dict, log) -> dict:
    cases = []
    # "raised" last: the patched clients below run in it (where glibc's can be pinned, else "as found")
    for allocator, _, apply in allocator_states():
        apply()
        for B, D in ((3, 8), (2, 5)) if cfg["mode"] == "smoke" else SHAPES:
            x = np.random.default_rng(B * D).normal(0, 0.05, (B, D)).astype(np.float32)
            for kind in BODIES:
                body = _body(kind, x)
                paths = routes(mods, tensorb64.openai, kind, body, B, D)
                errors = _check(paths, x)
                results = measure_paths(paths, cfg, checked=not errors, ref=DECODER, ratio_key="vs_decoder",
                                        extra=lambda call, m: {"minflt": minor_faults_per_call(call, m["us"] * 1e-6)})
                for e in errors:
                    log(f"  ERROR client {kind} B={B} D={D} ({allocator}): {e}")
                cases.append({"allocator": allocator, "body": kind, "B": B, "D": D, "body_bytes": len(body), "results": results,
                              "errors": errors})
                if cfg["mode"] != "smoke":
                    log(f"  done client {allocator:<6} {kind:<14} B={B:<4} D={D:<4} "
                        + ", ".join(f"{r['path']} {r['us']:.1f} µs" for r in results[-2:] if "us" in r))
    first_calls = measure_first_calls(cfg, log)
    floor = page_floor(size_mib=4 if cfg["mode"] == "smoke" else 16, rounds=1 if cfg["mode"] == "smoke" else 7)
    versions = {m: getattr(mods[m], "__version__", None) for m in ("openai", "orjson")}
    versions["http"] = f"{_http_library(mods['openai']).__name__} {_http_library(mods['openai']).__version__}"
    patched, skipped = patch_cases(mods, cfg, log)
    for reason in skipped:
        log(f"  skipped: {reason}")
    return {"client_cases": cases, "client_versions": versions, "client_allocator": allocator,
            "client_first_calls": first_calls, "client_page_floor": floor, "client_patch_cases": patched, "client_patch_skipped": skipped}


def errors(report: dict) -> list:
    return [e for c in report["client_cases"] + report.get("client_patch_cases", []) for e in c["errors"]]


def summary(report: dict) -> str:
    return f"{len(report['client_cases'])} client cases"


# --------------------------------------------------------------------------- output

COLUMNS = ("allocator", "body", "B", "D", "MB", "path", "µs/call", "spread", "minflt/call", "× decode_response_body")
_RIGHT = {2, 3, 4, 6, 7, 8, 9}


def table_rows(cases):
    for c in cases:
        for r in c["results"]:
            if "us" in r:
                cells = (fmt_us(r["us"]), spread_text(r), f"{r['minflt']:.0f}" if r.get("minflt") is not None else "n/a",
                         f"{r['vs_decoder']:.2f}×" if "vs_decoder" in r else "")
            else:
                cells = ("skipped" if "skipped" in r else "error", "", "", "")
            yield (c.get("allocator", ""), c["body"], str(c["B"]), str(c["D"]), f"{c['body_bytes'] / 1e6:.2f}", r["path"], *cells)


def _us(case, name):
    return next((r["us"] for r in case["results"] if r["path"] == name and "us" in r), None)


def target_lines(cases) -> list:
    """The reader's targets, each ratio with its own (the 64x3072 float bodies: at least 15x orjson +
    numpy.array), as measured (none for a case whose decode_response_body failed its check)."""
    lines = []
    for c in cases:
        ours = _us(c, DECODER)
        if ours is None:
            continue
        key = (c["body"], c["B"], c["D"])
        checks = []
        if key == ("base64", 64, 3072):
            checks = [("decode_response_body / pybase64 floor", ours / _us(c, "pybase64 alone over the row strings (floor)"), "<=", 0.8),
                      ("openai parse / decode_response_body", _us(c, "openai parse (json.loads, b64decode, .tolist()) + numpy.array") / ours, ">=", 30)]
            create, embed = _us(c, "openai create + numpy.array"), _us(c, EMBED)
            if embed is not None:
                checks.append(("openai create / embed", create / embed, ">=", 5))
        elif key == ("base64", 1024, 1024):
            checks = [("orjson + pybase64 / decode_response_body", _us(c, "orjson.loads + pybase64 into one buffer") / ours, ">=", 8)]
            if _us(c, UNPREPARED) is not None:
                checks.append(("decode_response_body unprepared / prepared", _us(c, UNPREPARED) / ours, "", None))
        elif c["body"] != "base64" and (c["B"], c["D"]) == (64, 3072):
            checks = [("orjson + numpy.array / decode_response_body", _us(c, "orjson.loads + numpy.array") / ours, ">=", 15)]
        for what, value, op, target in checks:
            verdict = "" if target is None else \
                f" (target {op} {target})  {'met' if (value <= target if op == '<=' else value >= target) else 'NOT met'}"
            lines.append(f"  {c.get('allocator', '')} {c['body']} {c['B']}x{c['D']}: {what} = {value:.2f}{verdict}")
    return lines


def _notes(report: dict) -> list:
    cases = report["client_cases"]
    v = report["client_versions"]
    notes = [f"openai {v['openai']} ({v['http']}), orjson {v['orjson']}"]
    notes += sorted({r["skipped"] for c in cases for r in c["results"] if "skipped" in r})
    notes += os_facts.absent_lines()
    targets = target_lines(cases)
    if targets:
        notes += ["targets (one thread):", *targets]
    first_calls = report.get("client_first_calls", [])
    if first_calls:
        notes += first_call_lines(first_calls, report.get("client_page_floor"))
        notes += page_floor_lines(report.get("client_page_floor"))
    return notes


def _patch_notes(report: dict) -> list:
    notes = list(report.get("client_patch_skipped", []))
    targets = patch_target_lines(report.get("client_patch_cases", []))
    if targets:
        notes += ["targets of the patched clients (one thread):", *targets]
    return notes


def text(report: dict) -> list:
    out = ["", "A response body back to one float32 array (µs/call: median of interleaved rounds; minflt/call: minor page "
           "faults per call; × decode_response_body: the route's time over decode_response_body's, same body and allocator "
           "state, allocator.py's):",
           text_table(COLUMNS, table_rows(report["client_cases"]), _RIGHT), *("note: " + n for n in _notes(report))]
    if report.get("client_patch_cases"):
        out += ["", "The clients' own calls, tensorb64.openai.patch() off against on (× patch on: the row's time over the "
                "patched call's):", text_table(PATCH_COLUMNS, patch_rows(report["client_patch_cases"]), {1, 2, 3, 4, 5}),
                *("note: " + n for n in _patch_notes(report))]
    return out


def markdown(report: dict) -> str:
    out = ("\n## A response body back to an array (the client)\n\n" + markdown_table(COLUMNS, table_rows(report["client_cases"]), _RIGHT)
           + "\n\n" + "".join(f"* {n}\n" for n in _notes(report)))
    if report.get("client_patch_cases"):
        out += ("\n### The clients' own calls, `tensorb64.openai.patch()` off against on\n\n"
                + markdown_table(PATCH_COLUMNS, patch_rows(report["client_patch_cases"]), {1, 2, 3, 4, 5})
                + "\n\n" + "".join(f"* {n}\n" for n in _patch_notes(report)))
    return out
