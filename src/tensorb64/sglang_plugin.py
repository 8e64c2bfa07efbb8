"""The SGLang plugin: SGLang's ``/v1/embeddings`` bodies written by the core.

Installing tensorb64 registers ``register`` as the ``sglang.srt.plugins`` entry point
``tensorb64``; SGLang's ``load_plugins()`` calls it in the processes it starts (the HTTP server and
tokenizer manager, the scheduler, the detokenizer). ``TENSORB64_SGLANG=0`` turns it off, and so
does an ``SGLANG_PLUGINS`` allowlist that does not name ``tensorb64`` (SGLang's own rule).

What it does, and nothing else: ``OpenAIServingEmbedding._build_embedding_response`` (SGLang
0.5.23, recognised by its parameters; any other release keeps its own, with one log line) answers
an HTTP request whose route renders with ``ORJSONResponse`` (checked per route on its first
request; any other route keeps SGLang's own builder, one log line) with the very bytes that route
sends, written by the core in one pass: the
rows (lists of Python floats, as SGLang's scheduler hands them over) read natively into one
float64 array, each entry's keys and the envelope's fields in SGLang's order (the core's
``"sglang"`` layout), float rows as orjson writes SGLang's Python floats (``float_format="orjson"``
over the doubles), base64 rows as SGLang's ``struct.pack("<nf")`` + ``b64encode`` writes them, the
envelope's values from SGLang's own ``EmbeddingResponse`` and ``UsageInfo`` serialised as its route
serialises them (FastAPI's ``jsonable_encoder``, then orjson). A batch it does not write (rows that
are not equally long lists of floats, a NaN or infinity, a value past float32's range in a base64
request, an envelope of other fields) and any request that did not come over HTTP (SGLang's gRPC
bridge serialises the builder's result itself) go to SGLang's own code, untouched.

Dynamo's SGLang worker (``dynamo.sglang.request_handlers.embedding.embedding_handler``, Dynamo
1.6.1): its per-row ``_encode_floats_to_base64`` is replaced by one that reads the row natively and
encodes it with the core (the same strings; a row it does not take, Dynamo's own).

Both patches are applied when their module is imported (or at once, if it already is),
through the package's one after-import mechanism: a process that never imports them pays for a hook
in ``sys.meta_path`` and nothing more. Loading the plugin twice changes nothing.

SGLang's extra HTTP workers (``--tokenizer-worker-num`` N > 1: N uvicorn or granian worker
processes, spawned, each importing the app that ``SGLANG_HTTP_SERVER_APP_PATH`` names) never call
``load_plugins()``. So the plugin, loaded in the process that starts them, names this module's
``http_worker_app`` there when that setting is SGLang's default: each worker then registers the plugin
and gets SGLang's own app. A value of the user's own is left as it is (its workers answer with
SGLang's builder, said in one log line).
"""

from __future__ import annotations

import os

from ._hosts import dynamo_sglang, sglang
from ._hosts.patching import enabled, install
from ._hosts.sglang import ENABLE_VARIABLE, logger

# The app SGLang's extra HTTP workers import ("module:attribute"): SGLang's setting and its default.
HTTP_APP_VARIABLE = "SGLANG_HTTP_SERVER_APP_PATH"
SGLANG_HTTP_APP = "sglang.srt.entrypoints.http_server:app"
WORKER_HTTP_APP = f"{__name__}:http_worker_app"


def register() -> None:
    """The entry point SGLang calls in each of its processes."""
    if not enabled(ENABLE_VARIABLE):
        return
    install(sglang.SGLANG)
    install(dynamo_sglang.DYNAMO_SGLANG)
    app = os.environ.get(HTTP_APP_VARIABLE, "")
    if app in ("", SGLANG_HTTP_APP):
        os.environ[HTTP_APP_VARIABLE] = WORKER_HTTP_APP  # (read when the workers start, inherited by them)
    elif app != WORKER_HTTP_APP:
        logger.info("tensorb64: %s=%s is set: SGLang's extra HTTP workers (--tokenizer-worker-num > 1), if any, "
                    "keep SGLang's own embeddings builder", HTTP_APP_VARIABLE, app)


def __getattr__(name: str):
    # http_worker_app: what each of SGLang's extra HTTP workers imports (see the module's docstring):
    # the plugin registered in that process, then SGLang's own app.
    if name == "http_worker_app":
        register()
        from sglang.srt.entrypoints.http_server import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
