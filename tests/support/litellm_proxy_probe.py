"""Callbacks the gateway tests add to a proxy's config after tensorb64's line, loaded by LiteLLM as a
user's own would be:

* ``hook``: a ``CustomLogger`` with a success hook alone (``async_post_call_success_hook``, which
  gets the response while the proxy answers: tensorb64 keeps the rows past it, built on first
  access). What it does is the request's ``metadata.probe``: ``"rows"`` reads every row's values,
  ``"usage"`` reads the usage alone, ``"fault-render"`` makes tensorb64's writer raise for this
  request and ``"fault-rows"`` makes tensorb64's building of the Python rows raise, then reads
  every row (failures of tensorb64's own, injected: each must give the proxy's own answer). Each
  event is a JSON line in ``$PROBE_FILE`` with a digest of what it saw.
* ``event``: a ``CustomLogger`` whose success hook and success event (``async_log_success_event``,
  which gets the logging payload, holding a dump of the rows) read every row: with it configured,
  tensorb64 builds the rows up front;
* ``idle_event``: a success event that does nothing (the gateway bench's, for what a success event
  configured costs).

And what tensorb64 did, per request (``$PROBE_FILE.tensorb64``, one JSON line per event, the
request named by its first input): each body it wrote (``written``) and each time it built an
upstream body's Python rows (``built``), by wrapping ``tensorb64._hosts.litellm_proxy._rendered``
and ``tensorb64._hosts.kept_rows.KeptRows.python_rows`` where the config loaded tensorb64's line.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import struct
import sys

from litellm.integrations.custom_logger import CustomLogger

FILE = os.environ.get("PROBE_FILE", os.devnull)

# The request being answered, as the hook names it (its first input), and what it asked for.
_request: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("probe_request", default=None)


def digest(response, rows: bool = True) -> dict:
    """What a callback sees of an embeddings response: its type, model, usage, hidden cost and, with
    ``rows``, every row's values (floats by their bits, strings as they are)."""
    seen = {"type": type(response).__name__, "model": getattr(response, "model", None)}
    usage = getattr(response, "usage", None)
    seen["usage"] = usage.model_dump() if hasattr(usage, "model_dump") else usage
    seen["cost"] = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if rows:
        hashed = hashlib.sha256()
        data = response.data or []
        for entry in data:
            row = entry["embedding"] if isinstance(entry, dict) else entry.embedding
            if isinstance(row, str):
                hashed.update(row.encode())
            else:
                assert type(row) is list, type(row)
                hashed.update(b"".join(struct.pack("<d", v) if type(v) is float else repr(v).encode() for v in row))
        seen.update(rows=len(data), digest=hashed.hexdigest())
    return seen


def _append(path: str, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def _first_input(data) -> str:
    """The request's first input, from the request (a hook's ``data``) or its logging details (an
    event's ``kwargs``, where ``hosted_vllm`` leaves ``input`` None and ``messages`` holds them)."""
    inputs = data.get("input") or [m.get("content") for m in data.get("messages") or ()]
    return str(inputs[0] if isinstance(inputs, list) and inputs else inputs)


class Hook(CustomLogger):
    async def async_post_call_success_hook(self, data, user_api_key_dict, response):
        _watch_tensorb64()
        asked = (data.get("metadata") or {}).get("probe") or ""
        _request.set((_first_input(data), asked))
        if asked in ("rows", "fault-rows"):
            _append(FILE, {"event": "hook", "request": _first_input(data), **digest(response)})
        elif asked == "usage":
            _append(FILE, {"event": "hook", "request": _first_input(data), **digest(response, rows=False)})


class Event(CustomLogger):
    async def async_post_call_success_hook(self, data, user_api_key_dict, response):
        _append(FILE, {"event": "event-hook", "request": _first_input(data), **digest(response)})

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        payload = kwargs.get("standard_logging_object") or {}
        logged = payload.get("response") or {}
        rows = [entry["embedding"] for entry in logged.get("data") or []]
        assert all(type(row) in (list, str) for row in rows), [type(row) for row in rows]
        _append(FILE, {"event": "success-event", "request": _first_input(kwargs), **digest(response_obj),
                       "logged": hashlib.sha256(json.dumps(rows).encode()).hexdigest(),
                       "logged_cost": payload.get("response_cost"), "logged_tokens": payload.get("total_tokens")})


def _watch_tensorb64() -> None:
    """Wraps tensorb64's writer and its building of rows (where the config loaded tensorb64's line
    before this probe: importing it is enabling it), once: each counted, per request, and each
    made to raise where the request asks."""
    if "tensorb64.litellm_proxy" not in sys.modules or FILE == os.devnull:  # (the bench's: nothing counted)
        return
    from tensorb64._hosts import kept_rows, litellm_proxy

    if hasattr(litellm_proxy._rendered, "probed"):
        return
    rendered, python_rows, from_array = (litellm_proxy._rendered, kept_rows.KeptRows.python_rows,
                                         kept_rows.KeptRows._from_array)

    def record(event: str) -> None:
        request = _request.get()
        _append(FILE + ".tensorb64", {"event": event, "request": request and request[0]})

    def counted_rendered(response, fastapi_response):
        if (_request.get() or ("", ""))[1] == "fault-render":
            raise RuntimeError("injected: tensorb64's writer failed")
        answer = rendered(response, fastapi_response)
        if answer is not None:
            record("written")
        return answer

    def counted_python_rows(self):
        if self._python is None:
            record("built")
        return python_rows(self)

    def failing_from_array(self):
        if (_request.get() or ("", ""))[1] == "fault-rows":
            raise RuntimeError("injected: building the rows from the array failed")
        return from_array(self)

    counted_rendered.probed = True
    litellm_proxy._rendered = counted_rendered
    kept_rows.KeptRows.python_rows = counted_python_rows
    kept_rows.KeptRows._from_array = failing_from_array


class IdleEvent(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        pass


_watch_tensorb64()
hook = Hook()
event = Event()
idle_event = IdleEvent()
