"""An upstream body's rows kept as the one array the core read them into, while a host's own steps
run, for a host that asks (LiteLLM's proxy: ``litellm_proxy``): the readers of the openai client
and of LiteLLM's ``hosted_vllm`` give each entry a stand-in (``KeptRow``) in place of its list of
Python floats, the host's steps pass the stand-ins along (a pydantic dump in Python mode keeps an
object it does not know as it is), and the host writes its body from the array. The Python rows
are built only when something asks for them (``KeptRows.python_rows``), once, equal to those the
host's own parse makes; where building them from the array fails, they are that parse's reading of
each row's text.

Who asks is the host's: it says, per request, whether rows are kept at all (``keeping``, a context
the readers look up: ``stand_ins``), and builds the Python rows wherever a step of its may read
them. A stand-in read by a step the host did not foresee still gives the row's values (as a
sequence), and the host hears of it (``Keeper.report``).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import json
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np


class Keeper:
    """What a host that keeps rows gives the readers for one request (a context: ``keeping``)."""

    def keeps(self) -> bool:
        """Whether this request's float rows are to be kept as the array (asked at each body read)."""
        raise NotImplementedError

    def report(self, what: str) -> None:
        """A stand-in was read by a step the host did not foresee (``what``: how)."""
        raise NotImplementedError

    def failed(self) -> None:
        """Building the Python rows from the array failed (the exception being handled); the rows were
        then built by the host's own reading of the rows' text."""
        raise NotImplementedError


_keeper: contextvars.ContextVar[Keeper | None] = contextvars.ContextVar("tensorb64_kept_rows", default=None)


@contextlib.contextmanager
def keeping(keeper: Keeper) -> Iterator[None]:
    """The readers keep the float rows they read, inside this context, where ``keeper`` says so."""
    token = _keeper.set(keeper)
    try:
        yield
    finally:
        _keeper.reset(token)


# How a host's own parse reads a row's text, as KeptRows and the readers name it.
JSON = "json"  # json.loads: an integer text an int, every NaN its one float object (LiteLLM's hosted_vllm)
FLOATS = "floats"  # json.loads, every value then a float (the openai client's List[float] rows)
BASE64 = "base64"  # float32 little-endian bytes in base64, each a float (the openai client's decoding)
READINGS = (JSON, FLOATS, BASE64)


class KeptRows:
    """The rows of one body: ``array`` ([B, D] float64, each value the double the host's own parse
    makes of it: ``json.loads``'s for float text, the float32 value for base64), and the Python rows
    that parse makes (``reading``: ``READINGS``), built on the first ask. ``native[i]``: row
    ``i``'s Python values are exactly ``array[i]``'s floats, all finite (so a writer of doubles
    writes them as the host would); the other rows are read from their own text when asked."""

    __slots__ = ("array", "native", "_body", "_spans", "_reading", "_keeper", "_python", "_lock")

    def __init__(self, array: np.ndarray, body: bytes, spans: list, reading: str, keeper: Keeper) -> None:
        self.array = array
        self._body = body
        self._spans = spans
        self._reading = reading
        self._keeper = keeper
        self.native = native_rows(array, body, spans, reading)
        self._python: list[list] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.array)

    def python_rows(self) -> list[list]:
        """Every row as the host's own parse gives it, built once (the same lists on every ask)."""
        with self._lock:
            if self._python is None:
                try:
                    self._python = self._from_array()
                except Exception:  # a failure of ours: the host's own reading of each row's text
                    self._keeper.failed()
                    self._python = [self.row_from_text(i) for i in range(len(self.array))]
            return self._python

    def _from_array(self) -> list[list]:
        return python_rows(self.array, self._body, self._spans, self._reading, self.native)

    def row_from_text(self, i: int) -> list:
        """Row ``i`` read from its text as the host's own parse reads it."""
        return row_from_text(self._body, self._spans[i], self._reading)

    def stand_ins(self) -> list[KeptRow]:
        return [KeptRow(self, i) for i in range(len(self.array))]


def native_rows(array: np.ndarray, body: bytes, spans: list, reading: str) -> np.ndarray:
    """Which rows' Python values (as ``reading`` makes them) are exactly the array's floats, all
    finite: every finite row where every value becomes a float; with ``JSON``, those where no
    integral value is written as an integer (json.loads keeps "1" an int, "1.0" and "1e0" floats)."""
    native = np.isfinite(array).all(axis=1)
    if reading == JSON:
        integral = array == np.trunc(array)
        for i in np.flatnonzero(native & integral.any(axis=1)).tolist():
            start, end = spans[i]
            texts = body[start + 1 : end - 1].split(b",")  # (a row of numbers: one text a value)
            native[i] = all(any(mark in texts[j] for mark in b".eE") for j in np.flatnonzero(integral[i]).tolist())
    return native


def python_rows(array: np.ndarray, body: bytes, spans: list, reading: str,
                native: np.ndarray | None = None) -> list[list]:
    """The rows as ``reading`` makes them: the array's floats, and the other rows read from their own
    text (``native``: ``native_rows``, where known)."""
    rows = array.tolist()
    if native is None:
        native = native_rows(array, body, spans, reading)
    for i in np.flatnonzero(~native).tolist():
        rows[i] = row_from_text(body, spans[i], reading)
    return rows


def row_from_text(body: bytes, span: Any, reading: str) -> list:
    """The row whose text is ``body[start:end]`` (a JSON array, or a base64 string) as ``reading``
    reads it."""
    start, end = span
    if reading == BASE64:
        return np.frombuffer(base64.b64decode(json.loads(body[start:end])), "<f4").tolist()
    values = json.loads(body[start:end])
    return [float(v) for v in values] if reading == FLOATS else values


def stand_ins(body: bytes, rows: np.ndarray, offsets: np.ndarray, reading: str) -> list[KeptRow] | None:
    """Stand-ins for the rows of ``body`` (``rows`` and ``offsets`` as the core read them:
    ``rows_and_offsets``, float rows as float64, base64 ones as float32), which ``reading`` reads to
    Python rows, where the request being answered keeps them, else None (the reader then makes its
    Python rows as it would)."""
    keeper = _keeper.get()
    if keeper is None or not keeper.keeps():
        return None
    array = rows.astype(np.float64) if rows.dtype == np.float32 else rows  # (float32 values are doubles exactly)
    return KeptRows(array, body, offsets.tolist(), reading, keeper).stand_ins()


# What a kept row's str() and repr() give: what a dump turned into text by its str() shows (the
# openai provider's RAW RESPONSE text, json.dumps(..., default=str)), which the host reads only
# where rows are kept for a request nothing else reads them in.
STAND_IN_TEXT = "(an embedding row kept natively by tensorb64)"


class KeptRow:
    """One row's stand-in in the host's response while the rows are kept. Hosts' dumps keep it as it
    is; anything else that reads it gets the row's Python values (a sequence), and the host hears
    of it once."""

    __slots__ = ("rows", "position")

    def __init__(self, rows: KeptRows, position: int) -> None:
        self.rows = rows
        self.position = position

    def values(self) -> list:
        """The row as the host's own parse gives it (the rows built, once)."""
        return self.rows.python_rows()[self.position]

    def _read(self, how: str) -> list:
        self.rows._keeper.report(how)
        return self.values()

    def __str__(self) -> str:
        return STAND_IN_TEXT

    __repr__ = __str__

    def __copy__(self) -> KeptRow:  # (a stand-in never changes: a copy of a dump holding it holds it)
        return self

    def __deepcopy__(self, memo: Any) -> KeptRow:
        return self

    __hash__ = None  # type: ignore[assignment]  # (as a list's)

    # A step the host did not foresee: the row's values, as a sequence.
    def __len__(self) -> int:
        return len(self._read("len"))

    def __iter__(self) -> Iterator:
        return iter(self._read("iter"))

    def __reversed__(self) -> Iterator:
        return reversed(self._read("reversed"))

    def __getitem__(self, key: Any) -> Any:
        return self._read("getitem")[key]

    def __contains__(self, value: Any) -> bool:
        return value in self._read("contains")

    def __eq__(self, other: Any) -> bool:
        other = other.values() if isinstance(other, KeptRow) else other
        return self._read("eq") == other

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __bool__(self) -> bool:
        return bool(self._read("bool"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._read("array"), dtype=dtype)

    def __reduce__(self) -> Any:  # (pickled: the Python row)
        return (list, (self._read("pickle"),))
