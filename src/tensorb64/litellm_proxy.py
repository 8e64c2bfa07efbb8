"""LiteLLM's proxy (``litellm --config ...``) answering ``/v1/embeddings`` through tensorb64: one line
in its config,

.. code-block:: yaml

    litellm_settings:
      callbacks: ["tensorb64.litellm_proxy.handler"]

LiteLLM looks ``handler`` up when it reads its config, and that lookup turns tensorb64 on in the
proxy's process (importing this module alone changes nothing); ``TENSORB64_LITELLM=0`` in its
environment leaves the proxy as it is. Then, on every route type that reaches an
OpenAI-compatible upstream (``openai/``, ``azure/``, ``hosted_vllm/``, and the router's groups of
them):

* the upstream's body is read by the core: ``tensorb64.openai.patch()``'s hooks read the openai
  client's embeddings responses and LiteLLM's ``hosted_vllm`` parse natively, giving the very
  Python objects LiteLLM's own parse gives;
* the proxy's steps are its own (hooks, callbacks, cost and spend tracking, logging, retries and
  fallbacks, ``x-litellm-*`` headers, errors), on its own ``EmbeddingResponse``, equal to today's;
* its float bodies are written without FastAPI's walk over every value, the same bytes
  (``tensorb64._hosts.litellm_proxy``).

``handler`` is a LiteLLM ``CustomLogger`` whose hooks are CustomLogger's own (they do nothing), so
that LiteLLM treats it as any other callback; outside a process with LiteLLM it is None.
"""

from __future__ import annotations

import threading
from typing import Any

from . import openai
from ._hosts.litellm_proxy import PROXY
from ._hosts.patching import enabled, install

_lock = threading.Lock()


def _enable() -> Any:
    """Installs the hooks (unless switched off) and makes the handler: what looking up ``handler``
    does, once."""
    try:
        if enabled(PROXY.switch):
            openai.patch()
            install(PROXY)
        else:
            PROXY.logger.info("tensorb64: %s=0: LiteLLM's proxy is left as it is", PROXY.switch)
    except Exception:  # never the proxy's start-up: it runs as it would without the line
        PROXY.logger.exception("tensorb64: enabling LiteLLM's proxy failed; its own code answers")
    try:
        from litellm.integrations.custom_logger import CustomLogger
    except Exception:  # (no LiteLLM here)
        return None

    class TensorB64(CustomLogger):
        """tensorb64's entry in the proxy's callbacks: what it is for was done when it was
        looked up."""

    return TensorB64()


def __getattr__(name: str) -> Any:
    # ``handler`` is made when first looked up (by LiteLLM, reading its config), once.
    if name != "handler":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        if "handler" not in globals():
            globals()["handler"] = _enable()
    return globals()["handler"]
