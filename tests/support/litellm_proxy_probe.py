"""A callback the gateway tests add to a proxy's config after tensorb64's line
(``tests.support.litellm_proxy_probe.probe``), loaded by LiteLLM as a user's own would be:

* as a user's ``CustomLogger``, its success hook (``async_post_call_success_hook``) and its success
  event (``async_log_success_event``) read the whole response, every row's values, and append a
  digest of what they saw to ``$PROBE_FILE`` (one JSON line per event), so that two proxies'
  callbacks can be compared;
* it counts the bodies tensorb64 wrote (``$PROBE_FILE.written``: one line per body), by wrapping
  ``tensorb64._hosts.litellm_proxy._rendered`` where the config loaded tensorb64's line; with ``PROBE_FAULT=1`` the wrapper raises instead (a
  failure of tensorb64's own path, injected), which must give the proxy's own body.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys

from litellm.integrations.custom_logger import CustomLogger

FILE = os.environ.get("PROBE_FILE", os.devnull)


def digest(response) -> dict:
    """What a callback sees of an embeddings response: its type, model, usage and every row's
    values (floats by their bits, strings as they are)."""
    rows = hashlib.sha256()
    data = getattr(response, "data", None) or []
    for entry in data:
        row = entry["embedding"] if isinstance(entry, dict) else entry.embedding
        if isinstance(row, str):
            rows.update(row.encode())
        else:
            rows.update(b"".join(struct.pack("<d", v) if type(v) is float else repr(v).encode() for v in row))
    usage = getattr(response, "usage", None)
    return {"type": type(response).__name__, "model": getattr(response, "model", None), "rows": len(data),
            "usage": usage.model_dump() if hasattr(usage, "model_dump") else usage, "digest": rows.hexdigest()}


def _append(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")


class Probe(CustomLogger):
    async def async_post_call_success_hook(self, data, user_api_key_dict, response):
        _count_writes()
        _append(FILE, json.dumps({"event": "post_call_success_hook", **digest(response)}))

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        _append(FILE, json.dumps({"event": "log_success_event", **digest(response_obj)}))


def _count_writes() -> None:
    """(Where the config loaded tensorb64's line before this one: importing it is enabling it.)"""
    if "tensorb64.litellm_proxy" not in sys.modules:
        return
    from tensorb64._hosts import litellm_proxy

    if hasattr(litellm_proxy._rendered, "probed"):
        return
    rendered = litellm_proxy._rendered

    def counted(response, fastapi_response):
        if os.environ.get("PROBE_FAULT") == "1":
            raise RuntimeError("injected: tensorb64's writer failed")
        answer = rendered(response, fastapi_response)
        if answer is not None:
            _append(FILE + ".written", str(len(answer.body)))
        return answer

    counted.probed = True
    litellm_proxy._rendered = counted


_count_writes()
probe = Probe()
