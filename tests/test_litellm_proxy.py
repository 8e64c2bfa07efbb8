"""tensorb64.litellm_proxy and its host (tensorb64._hosts.litellm_proxy) without LiteLLM: its host recognised on a stand-in module shaped like
LiteLLM 1.110's ``litellm.proxy.common_request_processing`` (all or nothing, idempotent, undone to
the very object), and the replacement's promises on a call: the proxy's own answer where ours
declines or fails (one log line), the proxy's own errors untouched, other routes left alone.
The real proxy, with and without the line, is tested in tests/test_litellm_proxy_server.py
(marker `gateway`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import types

import pytest

from tensorb64._hosts import litellm_proxy, patching
from tensorb64._hosts.litellm_proxy import PROCESS_PARAMETERS, PROCESSING_MODULE, PROXY


def stand_in(parameters=PROCESS_PARAMETERS, answer="the proxy's response", error=None):
    """A module with a ProxyBaseLLMRequestProcessing whose base_process_llm_request takes
    ``parameters`` and returns ``answer`` (or raises ``error``)."""
    module = types.ModuleType(PROCESSING_MODULE)
    calls = []

    async def base_process_llm_request(self, *args, **kwargs):
        calls.append(kwargs)
        if error is not None:
            raise error
        return answer

    signature = ", ".join(parameters)
    namespace = {"body": base_process_llm_request}
    exec(f"async def base_process_llm_request({signature}):\n    return await body(self, **{{k: v for k, v in locals().items() if k != 'self'}})",
         namespace)
    module.ProxyBaseLLMRequestProcessing = type("ProxyBaseLLMRequestProcessing", (),
                                                {"base_process_llm_request": namespace["base_process_llm_request"]})
    module.calls = calls
    return module


@pytest.fixture
def release(monkeypatch):
    """LiteLLM's release as the host reads it (no LiteLLM is installed here)."""
    version = ["1.110.2"]
    monkeypatch.setattr(patching, "_distribution_version", lambda distribution: version[0])
    yield version
    patching.uninstall(PROXY)


def call(module, route_type="aembedding"):
    processing = module.ProxyBaseLLMRequestProcessing()
    kwargs = {name: None for name in PROCESS_PARAMETERS[1:]}
    kwargs.update(route_type=route_type, fastapi_response=object())
    return asyncio.run(processing.base_process_llm_request(**kwargs))


def test_installed_once_and_undone_to_the_very_object(release, caplog):
    module = stand_in()
    original = module.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"]
    with caplog.at_level(logging.INFO, logger="tensorb64"):
        assert patching.install_module(PROXY, PROCESSING_MODULE, module)
        replaced = module.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"]
        assert replaced is not original and patching.is_replacement(replaced)
        assert patching.install_module(PROXY, PROCESSING_MODULE, module)  # again: nothing, silently
    assert module.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"] is replaced
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["tensorb64: LiteLLM's proxy 1.110.2's /v1/embeddings bodies are read and written by tensorb64"]
    patching.uninstall(PROXY)
    assert module.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"] is original


@pytest.mark.parametrize("version, parameters, reason", [
    ("1.110.2", PROCESS_PARAMETERS[:-1], "takes"),
    ("1.111.0", PROCESS_PARAMETERS, "outside the accepted 1.110 to before 1.111"),
    ("1.109.9", PROCESS_PARAMETERS, "outside the accepted"),
], ids=["other-parameters", "a-later-release", "an-earlier-release"])
def test_a_shape_or_release_not_known_is_left_as_it_is(release, caplog, version, parameters, reason):
    release[0] = version
    module = stand_in(parameters)
    original = module.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"]
    with caplog.at_level(logging.INFO, logger="tensorb64"):
        assert not patching.install_module(PROXY, PROCESSING_MODULE, module)
    assert module.ProxyBaseLLMRequestProcessing.__dict__["base_process_llm_request"] is original
    [line] = [r.getMessage() for r in caplog.records]
    assert "is not one tensorb64 knows" in line and reason in line and "LiteLLM's own is kept" in line


def test_a_failure_of_ours_gives_the_proxys_answer_and_one_line(release, monkeypatch, caplog):
    module = stand_in()
    patching.install_module(PROXY, PROCESSING_MODULE, module)

    def broken(response, fastapi_response):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(litellm_proxy, "_rendered", broken)
    monkeypatch.setattr(patching, "_logged", set())
    with caplog.at_level(logging.INFO, logger="tensorb64"):
        assert call(module) == "the proxy's response"
        assert call(module) == "the proxy's response"
    lines = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in lines] == [
        "tensorb64: writing an embeddings body failed; LiteLLM's own answered (logged once)"]
    assert "a bug of ours" in str(lines[0].exc_info[1])


def test_what_ours_answers_and_what_it_declines(release, monkeypatch):
    module = stand_in()
    patching.install_module(PROXY, PROCESSING_MODULE, module)
    seen = []

    def rendered(response, fastapi_response):
        seen.append(response)
        return None if response == "declined" else "written by tensorb64"

    monkeypatch.setattr(litellm_proxy, "_rendered", rendered)
    assert call(module) == "written by tensorb64"
    assert call(module, route_type="acompletion") == "the proxy's response"  # another route: never looked at
    assert seen == ["the proxy's response"]
    declining = stand_in(answer="declined")
    patching.install_module(PROXY, PROCESSING_MODULE, declining)
    assert call(declining) == "declined"
    assert len(module.calls) == 2 and len(declining.calls) == 1  # the proxy's own ran once a call


def test_the_proxys_own_error_stays_its_own(release, monkeypatch):
    error = ValueError("the proxy's own")
    module = stand_in(error=error)
    patching.install_module(PROXY, PROCESSING_MODULE, module)
    monkeypatch.setattr(litellm_proxy, "_rendered", lambda *a: pytest.fail("ours ran after the proxy raised"))
    with pytest.raises(ValueError) as raised:
        call(module)
    assert raised.value is error and raised.value.__context__ is None


SWITCH_CHECK = """
import tensorb64.litellm_proxy as proxy
from tensorb64._hosts import patching
from tensorb64._hosts.litellm_proxy import PROCESSING_MODULE, PROXY

def waiting():
    return {m for h, m in patching._waiting if h is PROXY}

assert not waiting()  # importing the module changes nothing
assert proxy.handler is None  # looking the handler up, as LiteLLM's config loader does (no LiteLLM here)
assert (waiting() == {PROCESSING_MODULE}) == %s, waiting()
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
