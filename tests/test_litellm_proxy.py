"""tensorb64.litellm_proxy and its host (tensorb64._hosts.litellm_proxy) without LiteLLM: its host
recognised on stand-in modules shaped like LiteLLM 1.110's ``litellm.proxy.common_request_processing``
and ``litellm.proxy.utils`` (all or nothing, idempotent, undone to the very objects); the
replacement's promises on a call (the proxy's own answer where ours declines or fails, with any kept
rows built first and one log line; the proxy's own errors untouched; other routes left alone); which
configured callbacks and settings keep the rows (``rows_unread``); and the response a hook gets while
the rows are kept, on a pydantic model shaped like LiteLLM's ``EmbeddingResponse``: its rows built on
first access, by reading ``data``, dumping, copying, comparing or pickling it, and not by reading its
usage. The real proxy, with and without the line, is tested in tests/test_litellm_proxy_server.py
(marker `gateway`).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import pickle
import subprocess
import sys
import types

import pytest

from tensorb64._hosts import kept_rows, litellm_proxy, patching
from tensorb64._hosts.kept_rows import KeptRow
from tensorb64._hosts.litellm_proxy import HOOK_PARAMETERS, PROCESS_PARAMETERS, PROCESSING_MODULE, PROXY, UTILS_MODULE

# LiteLLM's responses are pydantic models: where pydantic is not installed (the wheels' own suites,
# ci/test_wheels.sh, which install no LiteLLM dependency) there is no LiteLLM to patch.
pydantic = pytest.importorskip("pydantic", reason="pydantic (LiteLLM's own dependency, in the test extra) is not installed")


class EmbeddingResponse(pydantic.BaseModel):
    """LiteLLM's EmbeddingResponse as far as what is tested here reads it."""

    model: str | None = None
    data: list
    object: str = "list"
    usage: dict | None = None


class CustomLogger:
    """LiteLLM's CustomLogger as far as rows_unread reads it: its hooks' names."""

    def __init__(self): pass
    def log_pre_api_call(self, model, messages, kwargs): pass
    def log_success_event(self, kwargs, response_obj, start_time, end_time): pass
    def log_failure_event(self, kwargs, response_obj, start_time, end_time): pass
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time): pass
    async def async_log_failure_event(self, kwargs, response_obj, start_time, end_time): pass
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type): pass
    async def async_post_call_success_hook(self, data, user_api_key_dict, response): pass
    async def async_post_call_failure_hook(self, request_data, original_exception, user_api_key_dict): pass
    async def async_post_call_response_headers_hook(self, data, user_api_key_dict, response, request_headers): pass
    async def async_logging_hook(self, kwargs, result, call_type): pass


@pytest.fixture
def litellm(monkeypatch):
    """Stand-ins for the LiteLLM modules the host imports (no LiteLLM is installed here), and its
    release as the host reads it."""
    package = types.ModuleType("litellm")
    package.__path__ = []
    package.callbacks, package.success_callback, package._async_success_callback = [], [], []
    package.input_callback, package.service_callback, package.cache, package.set_verbose = [], [], None, False
    utils = types.ModuleType("litellm.types.utils")
    utils.EmbeddingResponse, utils.Embedding = EmbeddingResponse, type("Embedding", (pydantic.BaseModel,), {})
    custom_logger = types.ModuleType("litellm.integrations.custom_logger")
    custom_logger.CustomLogger = CustomLogger
    for name, module in {"litellm": package, "litellm.types": types.ModuleType("litellm.types"),
                         "litellm.types.utils": utils, "litellm.integrations": types.ModuleType("litellm.integrations"),
                         "litellm.integrations.custom_logger": custom_logger}.items():
        monkeypatch.setitem(sys.modules, name, module)
    version = ["1.110.2"]
    monkeypatch.setattr(patching, "_distribution_version", lambda distribution: version[0])
    monkeypatch.setattr(litellm_proxy, "_blind_class", litellm_proxy._blind_class.__wrapped__)  # (no cache across tests)
    package.version = version
    yield package
    patching.uninstall(PROXY)


def method(parameters, body):
    """An async function of these parameters that awaits ``body(**its arguments but self)``."""
    namespace = {"body": body}
    exec(f"async def f({', '.join(parameters)}):\n    return await body(**{{k: v for k, v in locals().items() if k != 'self'}})",
         namespace)
    return namespace["f"]


def processing_module(parameters=PROCESS_PARAMETERS, answer="the proxy's response", error=None):
    """A module with a ProxyBaseLLMRequestProcessing whose base_process_llm_request takes
    ``parameters`` and returns ``answer`` (a callable: called, in the call) or raises ``error``."""
    module = types.ModuleType(PROCESSING_MODULE)
    module.calls = []

    async def body(**kwargs):
        module.calls.append(kwargs)
        if error is not None:
            raise error
        return answer() if callable(answer) else answer

    module.ProxyBaseLLMRequestProcessing = type("ProxyBaseLLMRequestProcessing", (),
                                                {"base_process_llm_request": method(parameters, body)})
    return module


def utils_module(hooks=()):
    """A module with a ProxyLogging whose hooks hand the response to each of ``hooks`` in turn."""
    module = types.ModuleType(UTILS_MODULE)

    async def post_call_success_hook(data, response, user_api_key_dict):
        for hook in hooks:
            await hook.async_post_call_success_hook(data=data, user_api_key_dict=user_api_key_dict, response=response)
        return response

    async def post_call_response_headers_hook(data, user_api_key_dict, response, request_headers):
        return {}

    module.ProxyLogging = type("ProxyLogging", (), {
        "post_call_success_hook": method(HOOK_PARAMETERS["post_call_success_hook"], post_call_success_hook),
        "post_call_response_headers_hook": method(HOOK_PARAMETERS["post_call_response_headers_hook"],
                                                  post_call_response_headers_hook)})
    return module


def install(module, name=PROCESSING_MODULE) -> bool:
    return patching.install_module(PROXY, name, module)


def call(module, route_type="aembedding"):
    processing = module.ProxyBaseLLMRequestProcessing()
    kwargs = {name: None for name in PROCESS_PARAMETERS[1:]}
    kwargs.update(route_type=route_type, fastapi_response=object())
    return asyncio.run(processing.base_process_llm_request(**kwargs))


class Keeper(kept_rows.Keeper):
    def __init__(self):
        self.reports = []

    def keeps(self):
        return True

    def report(self, what):
        self.reports.append(what)

    def failed(self):
        pass


BODY = b'{"object":"list","data":[{"index":0,"object":"embedding","embedding":[0.5,1]},' \
       b'{"index":1,"object":"embedding","embedding":[0.25,-2.5]}],"model":"m"}'


def kept_response(keeper=None) -> EmbeddingResponse:
    """An EmbeddingResponse whose rows are kept (as LiteLLM's hosted_vllm reader gives them)."""
    from tensorb64._hosts.litellm import loads_embeddings

    with kept_rows.keeping(keeper or Keeper()):
        parsed = loads_embeddings(BODY)
    response = EmbeddingResponse(model="m", data=[], usage={"total_tokens": 2})
    response.data = parsed["data"]
    return response


def rows_of(response) -> list:
    return [entry["embedding"] for entry in response.__dict__["data"]]


def test_installed_once_and_undone_to_the_very_objects(litellm, caplog):
    processing, utils = processing_module(), utils_module()
    originals = [processing.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"],
                 *(utils.ProxyLogging.__dict__[name] for name in HOOK_PARAMETERS)]

    def current():
        return [processing.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"],
                *(utils.ProxyLogging.__dict__[name] for name in HOOK_PARAMETERS)]

    with caplog.at_level(logging.INFO, logger="tensorb64"):
        assert install(processing) and install(utils, UTILS_MODULE)
        replaced = current()
        assert all(r is not o and patching.is_replacement(r) for r, o in zip(replaced, originals, strict=True))
        assert install(processing) and install(utils, UTILS_MODULE)  # again: nothing, silently
    assert current() == replaced and litellm_proxy._windows_in_place() is False  # (not the imported module)
    assert [r.getMessage() for r in caplog.records] == [
        "tensorb64: LiteLLM's proxy 1.110.2's /v1/embeddings bodies are read and written by tensorb64"] * 2
    patching.uninstall(PROXY)
    assert current() == originals


@pytest.mark.parametrize("version, parameters, hooks, reason", [
    ("1.110.2", PROCESS_PARAMETERS[:-1], HOOK_PARAMETERS, "takes"),
    ("1.110.2", PROCESS_PARAMETERS, {**HOOK_PARAMETERS, "post_call_success_hook": ("self", "data", "response")}, "takes"),
    ("1.111.0", PROCESS_PARAMETERS, HOOK_PARAMETERS, "outside the accepted 1.110 to before 1.111"),
    ("1.109.9", PROCESS_PARAMETERS, HOOK_PARAMETERS, "outside the accepted"),
], ids=["other-parameters", "other-hook-parameters", "a-later-release", "an-earlier-release"])
def test_a_shape_or_release_not_known_is_left_as_it_is(litellm, caplog, version, parameters, hooks, reason, monkeypatch):
    litellm.version[0] = version
    monkeypatch.setattr(litellm_proxy, "HOOK_PARAMETERS", hooks)
    processing, utils = processing_module(parameters), utils_module()
    original = processing.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"]
    with caplog.at_level(logging.INFO, logger="tensorb64"):
        installed = [install(processing), install(utils, UTILS_MODULE)]
    assert not all(installed)
    if not installed[0]:
        assert processing.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"] is original
    lines = [r.getMessage() for r in caplog.records if "is not one tensorb64 knows" in r.getMessage()]
    assert lines and all(reason in line and "LiteLLM's own is kept" in line for line in lines)


def test_a_failure_of_ours_gives_the_proxys_answer_with_its_rows_built_and_one_line(litellm, monkeypatch, caplog):
    responses = []
    processing = processing_module(answer=lambda: responses.append(kept_response()) or responses[-1])
    install(processing)

    def broken(response, fastapi_response):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(litellm_proxy, "_rendered", broken)
    monkeypatch.setattr(patching, "_logged", set())
    with caplog.at_level(logging.INFO, logger="tensorb64"):
        assert call(processing) is responses[0] and call(processing) is responses[1]
    assert all(rows_of(r) == [[0.5, 1], [0.25, -2.5]] for r in responses)  # (built: FastAPI's render reads them)
    assert type(rows_of(responses[0])[0][1]) is int
    lines = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in lines] == [
        "tensorb64: answering /v1/embeddings natively failed; LiteLLM's own answered (logged once)"]
    assert "a bug of ours" in str(lines[0].exc_info[1])


def test_what_ours_answers_and_what_it_declines(litellm, monkeypatch):
    processing = processing_module()
    install(processing)
    seen = []

    def rendered(response, fastapi_response):
        seen.append(response)
        return None if isinstance(response, EmbeddingResponse) else "written by tensorb64"

    monkeypatch.setattr(litellm_proxy, "_rendered", rendered)
    assert call(processing) == "written by tensorb64"
    assert call(processing, route_type="acompletion") == "the proxy's response"  # another route: never looked at
    assert seen == ["the proxy's response"]
    response = kept_response()
    declining = processing_module(answer=response)
    install(declining)
    assert call(declining) is response and rows_of(response) == [[0.5, 1], [0.25, -2.5]]  # declined: rows built
    assert len(processing.calls) == 2 and len(declining.calls) == 1  # the proxy's own ran once a call


def test_the_proxys_own_error_stays_its_own(litellm, monkeypatch):
    error = ValueError("the proxy's own")
    processing = processing_module(error=error)
    install(processing)
    monkeypatch.setattr(litellm_proxy, "_rendered", lambda *a: pytest.fail("ours ran after the proxy raised"))
    with pytest.raises(ValueError) as raised:
        call(processing)
    assert raised.value is error and raised.value.__context__ is None


# ---- which configured callbacks and settings keep the rows -------------------------------------


class UsageOnly(CustomLogger):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type): pass
    async def async_post_call_success_hook(self, data, user_api_key_dict, response): pass
    async def async_post_call_failure_hook(self, request_data, original_exception, user_api_key_dict): pass

    def helper(self): pass  # (not a hook: not looked at)


class Events(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time): pass


class FailureEvents(CustomLogger):
    def log_failure_event(self, kwargs, response_obj, start_time, end_time): pass


class LoggingHook(UsageOnly):
    async def async_logging_hook(self, kwargs, result, call_type): pass


class Details:
    """A logging object as rows_unread reads it."""

    logger_fn = None
    litellm_request_debug = False
    dynamic_input_callbacks = dynamic_success_callbacks = dynamic_async_success_callbacks = None


@pytest.mark.parametrize("configure, keeps", [
    (lambda litellm, details: None, True),
    (lambda litellm, details: litellm.callbacks.extend([CustomLogger(), UsageOnly()]), True),
    (lambda litellm, details: litellm.callbacks.append(Events()), False),
    (lambda litellm, details: litellm.callbacks.append(FailureEvents()), False),
    (lambda litellm, details: litellm.callbacks.append(LoggingHook()), False),
    (lambda litellm, details: litellm.success_callback.append("langfuse"), False),
    (lambda litellm, details: litellm._async_success_callback.append(lambda *a: None), False),
    (lambda litellm, details: litellm.input_callback.append(UsageOnly), False),  # (a class, not a callback)
    (lambda litellm, details: setattr(details, "dynamic_async_success_callbacks", [Events()]), False),
    (lambda litellm, details: setattr(details, "dynamic_success_callbacks", [UsageOnly()]), True),
    (lambda litellm, details: setattr(litellm, "cache", object()), False),
    (lambda litellm, details: setattr(litellm, "set_verbose", True), False),
    (lambda litellm, details: setattr(details, "logger_fn", print), False),
    (lambda litellm, details: setattr(details, "litellm_request_debug", True), False),
    (lambda litellm, details: logging.getLogger("LiteLLM Proxy").setLevel(logging.DEBUG), False),
    (lambda litellm, details: os.environ.__setitem__("LITELLM_PRINT_STANDARD_LOGGING_PAYLOAD", "1"), False),
], ids=["nothing", "blind-callbacks", "a-success-event", "a-failure-event", "a-logging-hook", "a-string-callback",
        "a-function", "a-class", "a-dynamic-event", "a-dynamic-blind-callback", "a-cache", "set-verbose", "logger-fn",
        "request-debug", "debug-logging", "payload-printed"])
def test_what_keeps_the_rows(litellm, monkeypatch, configure, keeps):
    monkeypatch.delenv("LITELLM_PRINT_STANDARD_LOGGING_PAYLOAD", raising=False)
    level = logging.getLogger("LiteLLM Proxy").level
    details = Details()
    try:
        configure(litellm, details)
        assert litellm_proxy.rows_unread(details) is keeps
    finally:
        logging.getLogger("LiteLLM Proxy").setLevel(level)
        os.environ.pop("LITELLM_PRINT_STANDARD_LOGGING_PAYLOAD", None)
    assert litellm_proxy.rows_unread(None) is False  # (no logging object yet: nothing known)


def test_litellms_own_callbacks_by_their_names(litellm):
    name = sorted(litellm_proxy.LITELLM_CALLBACKS)[0]
    module, qualname = name.rsplit(".", 1)
    own = type(qualname, (CustomLogger,), {"async_log_success_event": Events.async_log_success_event,
                                           "__module__": module})
    litellm.callbacks.append(own())
    assert litellm_proxy.rows_unread(Details())
    litellm.callbacks.append(type(qualname, (own,), {"__module__": "users.own"})())  # (a subclass of it: its hooks)
    assert not litellm_proxy.rows_unread(Details())


def test_kept_only_where_the_hooks_get_a_lazy_response(litellm, monkeypatch):
    processing = types.SimpleNamespace(data={"litellm_logging_obj": Details()})
    assert not litellm_proxy._Request(processing).keeps()  # (ProxyLogging's hooks not replaced)
    utils = utils_module()
    monkeypatch.setitem(sys.modules, UTILS_MODULE, utils)
    install(utils, UTILS_MODULE)
    assert litellm_proxy._Request(processing).keeps()
    assert not litellm_proxy._Request(types.SimpleNamespace(data={})).keeps()


# ---- the response a hook gets while the rows are kept ------------------------------------------


READS = {
    "data": lambda r: r.data,
    "model_dump": lambda r: r.model_dump(),
    "model_dump_json": lambda r: r.model_dump_json(),
    "iter": lambda r: dict(r),
    "repr": repr,
    "str": str,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "model_copy": lambda r: r.model_copy(),
    "eq": lambda r: r == EmbeddingResponse(model="m", data=[], usage={"total_tokens": 2}),
    "pickle": pickle.dumps,
    "set-data": lambda r: setattr(r, "data", r.data[:1]),
}


@pytest.mark.parametrize("read", list(READS))
def test_a_lazy_response_builds_its_rows_on_first_access(litellm, read):
    keeper = Keeper()
    response = kept_response(keeper)
    expected = copy.deepcopy([{k: v for k, v in e.items() if k != "embedding"} for e in response.__dict__["data"]])
    with litellm_proxy._lazy_while(response, EmbeddingResponse):
        lazy = type(response)
        assert lazy is not EmbeddingResponse and issubclass(lazy, EmbeddingResponse)
        assert lazy.__name__ == "EmbeddingResponse" and isinstance(response, EmbeddingResponse)
        assert response.usage == {"total_tokens": 2} and response.model == "m"  # (the usage alone: nothing built)
        assert all(isinstance(row, KeptRow) for row in rows_of(response)) and type(response) is lazy
        result = READS[read](response)
        assert type(response) is EmbeddingResponse  # (built: the model LiteLLM made, from then on)
    rows = rows_of(response)
    assert rows == ([[0.5, 1]] if read == "set-data" else [[0.5, 1], [0.25, -2.5]]) and keeper.reports == []
    assert [{k: v for k, v in e.items() if k != "embedding"} for e in response.__dict__["data"]] == expected[:len(rows)]
    if read in ("model_dump", "iter"):
        assert (result["data"] if read == "model_dump" else result["data"])[0]["embedding"] == [0.5, 1]
    if read == "pickle":
        assert type(pickle.loads(result)) is EmbeddingResponse


def test_a_lazy_response_left_unread_keeps_its_rows(litellm):
    response = kept_response()
    with litellm_proxy._lazy_while(response, EmbeddingResponse):
        assert response.usage["total_tokens"] == 2
    assert type(response) is EmbeddingResponse and all(isinstance(row, KeptRow) for row in rows_of(response))


def test_the_proxys_hooks_get_the_lazy_response(litellm, monkeypatch):
    seen = []

    class ReadsRows(CustomLogger):
        async def async_post_call_success_hook(self, data, user_api_key_dict, response):
            seen.append([type(response).__name__, [e["embedding"] for e in response.data]])

    class ReadsUsage(CustomLogger):
        async def async_post_call_success_hook(self, data, user_api_key_dict, response):
            seen.append(response.usage)

    for hooks, rows in (([ReadsUsage()], None), ([ReadsUsage(), ReadsRows()], [[0.5, 1], [0.25, -2.5]])):
        utils = utils_module(hooks)
        patching.uninstall(PROXY)
        install(utils, UTILS_MODULE)
        response = kept_response()
        proxy_logging = utils.ProxyLogging()
        assert asyncio.run(proxy_logging.post_call_success_hook(data={}, response=response, user_api_key_dict=None)) \
            is response
        assert asyncio.run(proxy_logging.post_call_success_hook({}, response, None)) is response  # (by position)
        assert type(response) is EmbeddingResponse
        built = not isinstance(rows_of(response)[0], KeptRow)
        assert built == (rows is not None)
        if rows is not None:
            assert seen[-1] == ["EmbeddingResponse", rows]


SWITCH_CHECK = """
import tensorb64.litellm_proxy as proxy
from tensorb64._hosts import patching
from tensorb64._hosts.litellm_proxy import PROCESSING_MODULE, PROXY, UTILS_MODULE

def waiting():
    return {m for h, m in patching._waiting if h is PROXY}

assert not waiting()  # importing the module changes nothing
assert proxy.handler is None  # looking the handler up, as LiteLLM's config loader does (no LiteLLM here)
assert (waiting() == {PROCESSING_MODULE, UTILS_MODULE}) == %s, waiting()
assert proxy.handler is None and "handler" in vars(proxy)  # made once
print("ok")
"""


@pytest.mark.parametrize("switch, waiting", [(None, True), ("0", False), ("off", False)])
def test_the_handler_enables_it_unless_switched_off(switch, waiting):
    env = {k: v for k, v in os.environ.items() if k != "TENSORB64_LITELLM"}
    if switch is not None:
        env["TENSORB64_LITELLM"] = switch
    result = subprocess.run([sys.executable, "-c", SWITCH_CHECK % waiting], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr
    assert "tensorb64" not in result.stderr  # nothing logged at warning or above
