"""The one patch mechanism (tensorb64._hosts.patching) and what it promises every host: a host's import
never fails because of tensorb64, a shape it does not know is left as it is (all or nothing, one
log line), an install is undone to the very objects replaced, a failure of tensorb64's own inside
a patched call is answered by the host's own code, and installs race calls from other threads
safely. The host-specific faults (frozen openai models, strict validation, mock responses in
LiteLLM, a route of another response class in SGLang) are in this file's second half and in each
integration's own tests.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import types
import uuid

import pytest

from tensorb64._hosts import patching
from tensorb64._hosts.patching import (
    Host,
    Replacement,
    Unknown,
    fail_open,
    install,
    install_module,
    is_installed,
    uninstall,
)

LOGGER = logging.getLogger("tensorb64.tests.patching")


@pytest.fixture(autouse=True)
def fresh_log_lines(monkeypatch):
    """Each test sees the one line a process logs per outcome afresh."""
    monkeypatch.setattr(patching, "_logged", set())


@pytest.fixture
def module_named(tmp_path, monkeypatch):
    """make(source) -> the name of a new module (not imported) of that source, forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names = []

    def make(source: str) -> str:
        name = f"patching_probe_{uuid.uuid4().hex}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        names.append(name)
        return name

    yield make
    for name in names:
        sys.modules.pop(name, None)


HOST_SOURCE = """
class Server:
    def answer(self, x):
        return ("own", x)

def helper(x):
    return ("own helper", x)
"""


def ours_for(original):
    return fail_open(TEST_HOST, original, lambda self, x: ("ours", x) if x >= 0 else None)


def recognise(module):
    cls = patching.attribute(module, "Server")
    patching.expect_parameters(patching.attribute(cls, "answer"), ("self", "x"), "Server.answer")
    return [Replacement(cls, "answer", ours_for),
            Replacement(module, "helper", lambda original: fail_open(TEST_HOST, original, lambda x: ("ours helper", x)))]


TEST_HOST = Host(name="TestHost", logger=LOGGER, what="answers are tensorb64's", work="answering", modules={},
                 switch="TENSORB64_TEST_HOST")


def host_for(name: str, recognise=recognise) -> Host:
    return Host(name="TestHost", logger=LOGGER, what="answers are tensorb64's", work="answering",
                modules={name: recognise}, switch="TENSORB64_TEST_HOST")


def lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == LOGGER.name]


def test_installed_on_import_once_and_undone_to_the_very_objects(module_named, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER.name)
    name = module_named(HOST_SOURCE)
    host = host_for(name)
    for _ in range(3):
        install(host)  # before the import: one callback however many calls
    assert not is_installed(host)
    module = importlib.import_module(name)
    replaced = module.Server.__dict__["answer"]
    own_answer, own_helper = replaced.__tensorb64_replaces__, module.helper.__tensorb64_replaces__
    assert own_answer.__qualname__ == "Server.answer" and own_answer(None, 1) == ("own", 1)
    assert module.Server().answer(2) == ("ours", 2) and module.helper(1) == ("ours helper", 1)
    assert module.Server().answer(-1) == ("own", -1)  # declined: the host's own
    assert is_installed(host) and lines(caplog) == ["tensorb64: TestHost's answers are tensorb64's"]
    install(host)
    assert install_module(host, name, module)  # installed already: nothing replaced twice
    assert module.Server.__dict__["answer"] is replaced and len(lines(caplog)) == 1
    uninstall(host)
    assert module.Server.__dict__["answer"] is own_answer and module.helper is own_helper
    assert not is_installed(host)
    install(host)  # imported already: at once
    assert module.Server().answer(2) == ("ours", 2)
    uninstall(host)
    uninstall(host)  # nothing installed: nothing to do


def test_the_switch_turns_a_host_off(module_named, monkeypatch):
    monkeypatch.setenv("TENSORB64_TEST_HOST", " Off ")
    name = module_named(HOST_SOURCE)
    host = host_for(name)
    install(host)
    module = importlib.import_module(name)
    assert module.Server().answer(2) == ("own", 2) and not is_installed(host)


def test_all_or_nothing_and_one_line_per_outcome(module_named, caplog):
    name = module_named(HOST_SOURCE)
    module = importlib.import_module(name)
    own = module.Server.__dict__["answer"]

    def second_fails(module):
        return [Replacement(module.Server, "answer", ours_for), Replacement(module, "helper", lambda original: 1 / 0)]

    host = host_for(name, second_fails)
    for _ in range(2):
        assert not install_module(host, name, module)
    assert module.Server.__dict__["answer"] is own  # the first was made but not set
    assert lines(caplog) == [f"tensorb64: TestHost: patching {name} failed; TestHost's own is kept"]
    assert caplog.records[0].exc_info is not None  # with the traceback of ours


def test_a_release_not_known_is_left_as_it_is(module_named, caplog):
    name = module_named(HOST_SOURCE.replace("def answer(self, x)", "def answer(self, x, y=0)"))
    module = importlib.import_module(name)
    host = host_for(name)
    own = module.Server.__dict__["answer"]
    assert not install_module(host, name, module) and not install_module(host, name, module)
    assert module.Server.__dict__["answer"] is own
    assert lines(caplog) == [f"tensorb64: TestHost: {name} is not one tensorb64 knows (Server.answer takes "
                             "('self', 'x', 'y'), not ('self', 'x')); TestHost's own is kept"]


def test_the_accepted_releases_and_the_version_read():
    host = Host(name="H", logger=LOGGER, what="", work="", modules={}, package="json", accepted=((1, 17), (4,)))
    for version in ("1.17.0", "2.54.0", "3.57.0", "3.99.1.dev3+g1"):
        host.check_release(version)
    for version in ("1.16.9", "4.0.0", "unknown", ""):
        with pytest.raises(Unknown, match="outside the accepted 1.17 to before 4"):
            host.check_release(version)
    assert host.version() == json.__version__  # the imported package's own
    assert Host(name="H", logger=LOGGER, what="", work="", modules={}, distribution="no-such-dist").version() == "unknown"


def test_a_distribution_version_is_read_once(monkeypatch):
    # Reading a distribution's metadata costs about 0.7 ms: a patch() after an unpatch() (which
    # logs the host's label) must not pay it each time.
    reads = []
    monkeypatch.setattr(importlib.metadata, "version", lambda name: reads.append(name) or "1.2.3")
    host = Host(name="H", logger=LOGGER, what="", work="", modules={}, distribution="tensorb64-test-dist")
    try:
        assert [host.version(), host.version(), host.label()] == ["1.2.3", "1.2.3", "H 1.2.3"]
        assert reads == ["tensorb64-test-dist"]
    finally:
        patching._distribution_version.cache_clear()


def test_the_code_fingerprint():
    def known(floats):
        import base64
        import struct

        return base64.b64encode(struct.pack(f"<{len(floats)}f", *floats)).decode("ascii")

    def changed(floats):
        import base64
        import struct

        return base64.b64encode(struct.pack(f">{len(floats)}f", *floats)).decode("ascii").upper()

    patching.expect_names(known, ("b64encode", "base64", "decode", "len", "pack", "struct"), "known")
    with pytest.raises(Unknown, match="code is not the known release's"):
        patching.expect_names(changed, ("b64encode", "base64", "decode", "len", "pack", "struct"), "changed")
    # a replacement already in place is recognised by its original's shape
    replacement = fail_open(TEST_HOST, known, lambda floats: None)
    patching.expect_names(replacement, ("b64encode", "base64", "decode", "len", "pack", "struct"), "replaced")


# ---- a patched call: tensorb64's failure is answered by the host's own code ----------------------


def test_a_failure_of_ours_gives_the_hosts_answer_and_one_line(caplog):
    def own(x):
        return ("own", x)

    def ours(x):
        raise RuntimeError("a bug of ours")

    replacement = fail_open(TEST_HOST, own, ours)
    assert replacement(1) == ("own", 1) and replacement(2) == ("own", 2)
    assert lines(caplog) == ["tensorb64: answering failed; TestHost's own answered (logged once)"]


def test_the_hosts_own_error_stays_the_hosts():
    class HostError(Exception):
        pass

    def own(x):
        raise HostError(f"the host's own refusal of {x}")

    def ours(x):
        raise RuntimeError("ours")

    for attempt in (lambda x: None, ours):
        with pytest.raises(HostError, match="the host's own refusal of 3") as raised:
            fail_open(TEST_HOST, own, attempt)(3)
        assert raised.value.__context__ is None and raised.value.__cause__ is None  # nothing of ours chained


def test_the_fingerprint_of_several_releases_says_which():
    def older(x):
        return len(x)

    def newer(x):
        return sum(x)

    def other(x):
        return max(x)

    assert patching.expect_names(older, ("len",), "f", ("sum",)) == 0
    assert patching.expect_names(newer, ("len",), "f", ("sum",)) == 1
    with pytest.raises(Unknown, match="code is not any known release's"):
        patching.expect_names(other, ("len",), "f", ("sum",))


def test_the_original_called_as_ours_says_inside_its_context():
    """ours may answer that the host's own code answers with other arguments, inside a context
    (entered just around the original); a failure of ours gives the original the call's own."""
    seen = []

    class Marked:
        def __enter__(self):
            seen.append("enter")

        def __exit__(self, *exc):
            seen.append("exit")

    def own(x, y=0):
        seen.append(("own", x, y))
        return x + y

    replacement = fail_open(TEST_HOST, own, lambda x, y=0: patching.Call((x * 10,), {"y": 1}, Marked()))
    assert replacement(2) == 21 and seen == ["enter", ("own", 20, 1), "exit"]
    seen.clear()
    assert fail_open(TEST_HOST, own, lambda x, y=0: 1 / 0)(2, y=3) == 5 and seen == [("own", 2, 3)]


@pytest.mark.parametrize("coroutine", [False, True], ids=["function", "coroutine"])
def test_ours_after_the_hosts_answer(caplog, coroutine):
    """ours may answer that the host's own code answers, and that its answer then goes through
    ``then``: then's answer, or where then declines (None) or raises, the host's own (a failure of
    ours logged once); where the host raises, then never runs."""
    import asyncio

    class HostError(Exception):
        pass

    def own_function(x):
        if x < 0:
            raise HostError("the host's own")
        return ("own", x)

    async def own_coroutine(x):
        return own_function(x)

    def then(answer):
        if answer[1] == 2:
            return None
        if answer[1] == 3:
            raise RuntimeError("a bug of ours after the host's answer")
        return ("ours after", *answer)

    replacement = fail_open(TEST_HOST, own_coroutine if coroutine else own_function,
                            lambda x: patching.Call((x,), then=then))

    def run(x):
        return asyncio.run(replacement(x)) if coroutine else replacement(x)

    assert run(1) == ("ours after", "own", 1)
    assert run(2) == ("own", 2)
    assert run(3) == ("own", 3) and run(3) == ("own", 3)
    assert lines(caplog) == ["tensorb64: answering failed; TestHost's own answered (logged once)"]
    with pytest.raises(HostError) as raised:
        run(-1)
    assert raised.value.__context__ is None


def test_a_coroutine_function_is_replaced_by_one(caplog):
    import asyncio
    import inspect

    class HostError(Exception):
        pass

    async def own(x):
        if x < 0:
            raise HostError("the host's own")
        return ("own", x)

    def ours(x):
        if x == 1:
            raise RuntimeError("a bug of ours")
        return patching.Call((x + 100,)) if x == 0 else None  # (0: with another argument; others: declined)

    replacement = fail_open(TEST_HOST, own, ours)
    assert inspect.iscoroutinefunction(replacement) and replacement.__wrapped__ is own
    assert asyncio.run(replacement(0)) == ("own", 100)
    assert asyncio.run(replacement(5)) == ("own", 5)
    assert asyncio.run(replacement(1)) == ("own", 1)
    with pytest.raises(HostError):
        asyncio.run(replacement(-1))
    assert lines(caplog) == ["tensorb64: answering failed; TestHost's own answered (logged once)"]


def test_every_host_is_what_it_is_its_state_the_registrys():
    """A Host holds no state that changes (install and uninstall record it in the registry)."""
    import dataclasses

    from tensorb64._hosts import (
        dynamo_sglang,
        dynamo_vllm,
        infinity,
        litellm,
        openai_client,
        sglang,
        vllm,
        vllm_cohere,
    )

    hosts = [vllm.VLLM, vllm_cohere.VLLM_COHERE, dynamo_vllm.DYNAMO_VLLM, sglang.SGLANG, dynamo_sglang.DYNAMO_SGLANG,
             infinity.INFINITY, openai_client.OPENAI, litellm.LITELLM]
    for host in hosts:
        for f in dataclasses.fields(host):
            value = getattr(host, f.name)
            assert not isinstance(value, (list, set, dict)), (host.name, f.name)
        with pytest.raises(TypeError):
            host.modules["another.module"] = host.modules[next(iter(host.modules))]


def test_installs_race_calls_from_other_threads(module_named):
    """Calls from 4 threads while another installs and uninstalls 200 times: every call answers
    (ours or the host's own, never an error), and the end state is the host's own objects."""
    name = module_named(HOST_SOURCE)
    module = importlib.import_module(name)
    own = module.Server.__dict__["answer"]
    host = host_for(name)
    stop = threading.Event()
    answers, errors = [], []

    def call():
        server = module.Server()
        while not stop.is_set():
            try:
                answers.append(server.answer(5)[0])
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(200):
            install(host)
            uninstall(host)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert errors == [] and set(answers) <= {"ours", "own"} and answers
    assert module.Server.__dict__["answer"] is own and not is_installed(host)


# ---- a host module whose attribute lookup raises: its import never fails because of tensorb64 ----

# Each host module tensorb64 acts on, and how the package is told to act on it. Each runs in a
# fresh interpreter with a stand-in module of that name first on the path, whose attribute lookup
# raises (a lazy module of a later release whose lazy import failed).
REGISTER = {
    "vllm": "from tensorb64 import vllm_plugin; vllm_plugin.register()",
    "sglang": "from tensorb64 import sglang_plugin; sglang_plugin.register()",
    "infinity": "import tensorb64.infinity; tensorb64.infinity.patch()",
    "openai patch": "import tensorb64.openai; tensorb64.openai.patch()",
    "litellm proxy": "import tensorb64.litellm_proxy; tensorb64.litellm_proxy.handler",
    "torch": "import tensorb64",
}
HOST_MODULES = [
    ("vllm", "vllm.entrypoints.pooling.embed.serving"),
    ("vllm", "vllm.frontend.entrypoints.pooling.embed.serving"),
    ("vllm", "dynamo.vllm.handlers"),
    ("vllm", "dynamo.vllm.pooling_handlers"),
    ("sglang", "sglang.srt.entrypoints.openai.serving_embedding"),
    ("sglang", "dynamo.sglang.request_handlers.embedding.embedding_handler"),
    ("infinity", "infinity_emb.fastapi_schemas.pymodels"),
    ("openai patch", "litellm.llms.hosted_vllm.embedding.transformation"),
    ("openai patch", "litellm.litellm_core_utils.litellm_logging"),
    ("litellm proxy", "litellm.proxy.common_request_processing"),
    ("torch", "torch"),
]
RAISING_MODULE = """
own_code_ran = True

def __getattr__(name):
    raise RuntimeError(f"lazy import of {name} failed")
"""
IMPORT_CHECK = """
import importlib, logging, sys
records = []
handler = logging.Handler()
handler.emit = records.append
logging.getLogger().addHandler(handler)
logging.getLogger().setLevel(logging.INFO)
seen = []
{register}
from tensorb64._hosts.import_hooks import after_import
after_import({name!r}, seen.append)  # another callback for the same module, registered after ours
module = importlib.import_module({name!r})
assert module.own_code_ran and seen == [module], seen
ours = [r for r in records if r.getMessage().startswith("tensorb64")]
assert len(ours) == 1, [r.getMessage() for r in ours]
print("logged:", ours[0].getMessage(), "| exception:", ours[0].exc_info and ours[0].exc_info[1])
"""


@pytest.mark.parametrize("how, name", HOST_MODULES, ids=[name for _, name in HOST_MODULES])
def test_a_host_module_whose_attribute_lookup_raises_still_imports(tmp_path, how, name):
    path = tmp_path.joinpath(*name.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    for package in path.relative_to(tmp_path).parents:
        if package.parts:
            (tmp_path / package / "__init__.py").touch()
    path.write_text(RAISING_MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    for variable in ("TENSORB64_VLLM", "TENSORB64_SGLANG", "TENSORB64_INFINITY"):
        env.pop(variable, None)
    script = IMPORT_CHECK.format(register=REGISTER[how], name=name)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    if how == "torch":  # (the plugins read a host's own attributes without its lookup: the shape is not known)
        assert "a callback after importing torch failed" in result.stdout and "lazy import of Tensor failed" in result.stdout
    else:
        assert "is not one tensorb64 knows" in result.stdout


# ---- LiteLLM: a response of the host's interface that is not httpx's (a test's mock) ------------


def litellm_module():
    """A module shaped like LiteLLM 1.110's hosted_vllm transformation (the method as written there)."""
    module = types.ModuleType("litellm.llms.hosted_vllm.embedding.transformation")
    source = textwrap.dedent('''
        def convert_to_model_response_object(response_object, model_response_object, response_type):
            return ("converted", response_object)

        class HostedVLLMEmbeddingConfig:
            def transform_embedding_response(self, model, raw_response, model_response, logging_obj, api_key,
                                             request_data, optional_params, litellm_params):
                logging_obj.post_call(original_response=raw_response.text)
                response_json = raw_response.json()
                return convert_to_model_response_object(
                    response_object=response_json, model_response_object=model_response, response_type="embedding")
    ''')
    exec(compile(source, module.__name__, "exec"), module.__dict__)
    return module


def test_litellm_reads_a_mock_response_with_the_mocks_own_json_and_leaves_it_unchanged():
    from unittest import mock

    from tensorb64._hosts import litellm as litellm_host

    module = litellm_module()
    assert install_module(litellm_host.LITELLM, litellm_host.HOSTED_VLLM_MODULE, module)
    config = module.HostedVLLMEmbeddingConfig()
    answer = {"object": "list", "data": [{"index": 0, "embedding": [0.5]}], "model": "m"}
    response = mock.MagicMock()
    response.json.return_value = answer
    before = dict(vars(response))
    logging_obj = mock.MagicMock()
    result = config.transform_embedding_response("m", response, None, logging_obj, None, {}, {}, {})
    assert result == ("converted", answer)
    assert vars(response) == before and response.json.call_count == 1  # its own json(), nothing set or deleted
    # a real body is read by the core, into exactly json.loads's dict, the response untouched
    body = json.dumps(answer).encode()
    real = types.SimpleNamespace(content=body, text=body.decode(), json=lambda: pytest.fail("read natively"))
    fields = dict(vars(real))
    assert config.transform_embedding_response("m", real, None, logging_obj, None, {}, {}, {}) == ("converted", answer)
    assert vars(real) == fields
