"""The vLLM plugin: vLLM's ``/v1/embeddings`` and Cohere ``/v2/embed`` bodies written by tensorb64's core.

Installing tensorb64 registers ``register`` as the ``vllm.general_plugins`` entry point
``tensorb64``; vLLM calls it once in every process it starts (the API server, the engine core,
the workers). ``TENSORB64_VLLM=0`` turns it off, and so does a ``VLLM_PLUGINS`` allowlist that does
not name ``tensorb64``.

What it does, and nothing else:

* vLLM's API server: ``ServingEmbedding._openai_json_response`` (``encoding_format`` "float" and
  "base64") is replaced by one that writes the body with ``response_body``, for the releases
  whose method it recognises by its parameters (0.32, 0.33 and 0.34); for any other release it logs
  one line and leaves vLLM as it is. The client gets the very bytes vLLM's own method sends: base64
  text, float text as orjson writes it for vLLM (or json.dumps, for 0.32 without orjson), each
  envelope's fields and each data entry's keys in vLLM's order (the core's ``"vllm"`` layout),
  the envelope's values from vLLM's own ``EmbeddingResponse`` (0.34's leaves out
  ``prompt_tokens_details`` when None, and so does the plugin's). A batch it does not write (rows
  of different shapes, a float request over non-float32 rows, NaN in a float request) goes to
  vLLM's own method, untouched.
* vLLM's Cohere route ``/v2/embed``: ``ServingEmbedding._build_cohere_response_from_ctx``
  (``embedding_types`` float and base64, alone or together) is replaced by one that writes the
  whole body with the core (``cohere_body``), for the releases whose method it recognises by its
  parameters and its code's names (0.32, 0.33 and 0.34): vLLM's own bytes, float rows as orjson
  writes the Python floats ``.tolist()`` gives, base64 rows as ``struct.pack("<f")`` packs them,
  the envelope made by vLLM's own models. Binary and ubinary types, NaN or infinity in float rows,
  and rows it does not read go to vLLM's own method. A separate ``Host`` from the ``/v1/embeddings``
  builder: either is patched where the other's release is not recognised.
* Dynamo's vLLM worker: in ``dynamo.vllm.handlers`` its per-row ``_pooling_output_to_base64``
  is replaced by ``encode_rows`` (the same strings); in ``dynamo.vllm.pooling_handlers`` its
  ``_pooling_output_to_nested`` and ``_encode_pooling_output`` (the /pooling route's float lists,
  and its base64 or bytes data) by the core's (the same lists and strings).

Each is applied when its module is imported (or at once, if it already is): a process that
never imports them (vLLM's engine core and workers) pays for a hook in ``sys.meta_path``
(``_hosts.import_hooks.after_import``) and nothing more. Loading the plugin twice changes nothing.
Each host is a module of ``tensorb64._hosts``: ``vllm``, ``vllm_cohere``, ``dynamo_vllm``.
"""

from __future__ import annotations

from ._hosts import dynamo_vllm, vllm, vllm_cohere
from ._hosts.patching import install


def register() -> None:
    """The entry point vLLM calls in each of its processes."""
    install(vllm.VLLM)
    install(vllm_cohere.VLLM_COHERE)
    install(dynamo_vllm.DYNAMO_VLLM)
