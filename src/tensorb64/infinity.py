"""Infinity's ``/embeddings`` bodies written by the core: ``tensorb64.infinity.patch()``.

Infinity (``infinity-emb`` 0.0.78) has no plugin mechanism, so this is a call in the server's
start-up, or Infinity's own command line run through this module::

    python -m tensorb64.infinity v2 --model-id BAAI/bge-small-en-v1.5   # = infinity_emb v2 ..., patched

    import tensorb64.infinity
    tensorb64.infinity.patch()   # before or after infinity_emb is imported; unpatch() undoes it

What it replaces, and nothing else: the staticmethod
``infinity_emb.fastapi_schemas.pymodels.OpenAIEmbeddingResult.to_embeddings_response`` (recognised
by its parameters; another release's keeps its own, with one log line). Infinity's routes
(``/embeddings`` and its image and audio ones) return its dict, which FastAPI validates into
``OpenAIEmbeddingResult`` and renders (orjson through ``ORJSONResponse``, or pydantic's own JSON in
FastAPI releases that serialise a response model directly; the two write the same text for these
bodies). The replacement answers with the very bytes of that route instead, written by the core in
one pass: each entry's keys and the envelope's fields in Infinity's order (the core's
``"infinity"`` layout), float rows as those serialisers write the doubles of ``row.tolist()``
(``float_format="orjson"`` over the rows as float64), base64 rows as
``base64.b64encode(row.astype(float32))`` writes them (native byte order), the envelope's values
from Infinity's own models, ``id`` and ``created`` from their own default factories. What it does
not write goes to Infinity's own code, untouched: rows that are not equally long 1-D float
arrays (int8 and binary embeddings, multi-vector outputs), NaN or infinity in a float body, an
envelope its two serialisers would write differently.

``TENSORB64_INFINITY=0`` makes ``patch()`` do nothing.
"""

from __future__ import annotations

import sys

from ._hosts.infinity import INFINITY
from ._hosts.patching import install, is_installed, uninstall


def patch() -> None:
    """Route Infinity's embeddings bodies through the core: at once where its schemas module is
    imported, else right after it is. Calling it again changes nothing."""
    install(INFINITY)


def unpatch() -> None:
    """Give Infinity its own ``to_embeddings_response`` back (the same object), and leave a schemas
    module imported later alone."""
    uninstall(INFINITY)


def is_patched() -> bool:
    """Whether Infinity's imported schemas answer through the core (False before they are imported)."""
    return is_installed(INFINITY)



def main(argv=None) -> None:
    """Infinity's command line (``infinity_emb ...``), patched: ``python -m tensorb64.infinity ...``."""
    patch()
    from infinity_emb.cli import cli

    sys.argv = ["infinity_emb", *(sys.argv[1:] if argv is None else argv)]
    cli()


if __name__ == "__main__":
    from tensorb64 import infinity  # (the package's module, not this __main__ copy)

    infinity.main()
