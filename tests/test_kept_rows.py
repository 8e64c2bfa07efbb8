"""Rows kept as the array the core read them into (tensorb64._hosts.kept_rows, LiteLLM's proxy's):
the Python rows built from it against the host's own parse of the body (json.loads; the openai
client's floats; its base64 decoding), bit for bit, over the texts servers write, special values
and random doubles; the rows the writer of doubles writes from the array against orjson's text of
those Python rows, byte for byte; a failure of ours building the rows (the host's own reading
instead, one report); the stand-ins (passed by dumps, read as sequences with one report); and the
context that asks the readers for them. No LiteLLM: its proxy is tested in the gateway tests."""

from __future__ import annotations

import base64
import copy
import json
import pickle
import struct
import threading

import numpy as np
import pytest

from tensorb64 import json_rows
from tensorb64._codec.body_reader import rows_and_offsets
from tensorb64._hosts import kept_rows
from tensorb64._hosts.kept_rows import BASE64, FLOATS, JSON, KeptRow, KeptRows

orjson = pytest.importorskip("orjson", reason="orjson (in the test extra) is not installed: the wheels' own suites install none")
RNG = np.random.default_rng(47)


class Keeper(kept_rows.Keeper):
    def __init__(self, keeps=True):
        self.keeps_rows, self.reports, self.failures = keeps, [], []

    def keeps(self):
        return self.keeps_rows

    def report(self, what):
        self.reports.append(what)

    def failed(self):
        import sys

        self.failures.append(sys.exc_info()[1])


def body_of(rows_text: list[str]) -> bytes:
    entries = ",".join(f'{{"index":{i},"object":"embedding","embedding":{t}}}' for i, t in enumerate(rows_text))
    return f'{{"object":"list","data":[{entries}],"model":"m","usage":{{"prompt_tokens":1,"total_tokens":1}}}}'.encode()


def kept(body: bytes, reading: str, keeper: Keeper | None = None) -> KeptRows:
    rows, offsets = rows_and_offsets(body)
    with kept_rows.keeping(keeper or Keeper()):
        stand_ins = kept_rows.stand_ins(body, rows, offsets, reading)
    assert stand_ins is not None and [row.position for row in stand_ins] == list(range(len(rows)))
    return stand_ins[0].rows


def own_rows(body: bytes, reading: str) -> list:
    """The rows as the host's own parse makes them."""
    rows = [entry["embedding"] for entry in sorted(json.loads(body)["data"], key=lambda e: e["index"])]
    if reading == BASE64:
        return [np.frombuffer(base64.b64decode(row), "float32").tolist() for row in rows]
    return [[float(v) for v in row] for row in rows] if reading == FLOATS else rows


def same(a: list, b: list) -> bool:
    """The same rows, value for value: each the same type, floats by their bits."""
    def key(v):
        return (type(v), struct.pack("<d", v) if type(v) is float else v)

    return [[key(v) for v in row] for row in a] == [[key(v) for v in row] for row in b]


def orjson_texts(rows: list) -> list[bytes]:
    return [orjson.dumps(row) for row in rows]


def written(kept_: KeptRows) -> list[bytes]:
    """Each row's text as LiteLLM's proxy writes it: the writer of doubles (orjson's layout) for the
    native rows, orjson of the row read from its text for the others."""
    native = np.flatnonzero(kept_.native).tolist()
    texts = dict(zip(native, json_rows(kept_.array[native], float_format="orjson"), strict=True))
    return [texts[i] if i in texts else orjson.dumps(kept_.row_from_text(i)) for i in range(len(kept_))]


EMBEDDINGS = RNG.normal(0, 0.02, (6, 96)).astype(np.float32)
SPECIAL_TEXTS = ["0", "-0", "0.0", "-0.0", "1", "-2", "1.0", "1e0", "1E+2", "2.5e-324", "5e-324", "1e-7", "1e-07",
                 "0.000001", "123456.0", "1.7976931348623157e308", "1e400", "-1e400", "NaN", "Infinity", "0.1",
                 "0.30000000000000004", "3.4028235e38", "1.5e-45", "999999999999999", "1e16", "12345678.5"]


def layouts() -> dict[str, list[str]]:
    """Rows as the upstreams a gateway sits in front of write them."""
    return {
        "vllm (orjson, float32)": [orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY).decode() for row in EMBEDDINGS],
        "openai (float32 shortest, Python's layout)": [json.dumps([float(np.format_float_positional(v, unique=True))
                                                                   for v in row]) for row in EMBEDDINGS],
        "json.dumps of doubles": [json.dumps(row.astype(np.float64).tolist()) for row in EMBEDDINGS * np.pi],
        "random doubles": [json.dumps(row) for row in random_doubles(4, 200).tolist()],
        "specials": ["[" + ", ".join(SPECIAL_TEXTS) + "]", "[" + ",".join(reversed(SPECIAL_TEXTS)) + "]"],
        "integers": ["[1,2,3,-0,4]", "[1.0, 2.0, 3e0, 0.5, 0.25]", "[ 0.5 ,\n  -0.25, 1, 2, 3 ]"],
    }


def random_doubles(rows: int, columns: int) -> np.ndarray:
    """Doubles of every exponent (finite), bit patterns drawn at random."""
    bits = RNG.integers(0, 2**63, size=rows * columns, dtype=np.uint64) | (RNG.integers(0, 2, rows * columns,
                                                                                       dtype=np.uint64) << 63)
    values = bits.view(np.float64)
    return np.where(np.isfinite(values), values, 0.5).reshape(rows, columns)


@pytest.mark.parametrize("reading", [JSON, FLOATS])
@pytest.mark.parametrize("layout", list(layouts()))
def test_the_rows_built_and_written_are_the_hosts(reading, layout):
    body = body_of(layouts()[layout])
    rows = kept(body, reading)
    expected = own_rows(body, reading)
    assert same(rows.python_rows(), expected)
    assert written(rows) == orjson_texts(expected)
    for i in range(len(rows)):
        assert same([rows.row_from_text(i)], [expected[i]])
    if layout.startswith(("vllm", "openai", "json.dumps", "random")):
        assert rows.native.all()  # (no integer text, no NaN: every row written from the array)


def test_which_rows_are_native():
    body = body_of(["[1,2.5]", "[1.0,2.5]", "[1e0, 2.5]", "[ -0 , 0.5 ]", "[0.5,NaN]", "[0.5,0.25]", "[ 1.0 ,\n 3 ]",
                    "[1e400,0.5]"])
    assert kept(body, JSON).native.tolist() == [False, True, True, False, False, True, False, False]
    assert kept(body, FLOATS).native.tolist() == [True, True, True, True, False, True, True, False]


def test_base64_rows_decoded_as_the_openai_client_decodes_them():
    rows32 = np.concatenate([EMBEDDINGS[:, :8], np.float32([[0.0, -0.0, 1.0, 3.4e38, 1e-45, -2.5, 7.0, 0.1]] * 6)], axis=1)
    texts = [json.dumps(base64.b64encode(row.tobytes()).decode()) for row in rows32]
    texts[1] = texts[1].replace("/", "\\/")  # (an escape json.loads reads)
    body = body_of(texts)
    rows = kept(body, BASE64)
    assert rows.array.dtype == np.float64 and rows.native.all()
    expected = own_rows(body, BASE64)
    assert same(rows.python_rows(), expected) and written(rows) == orjson_texts(expected)


def test_built_once_and_the_same_lists_on_every_ask():
    rows = kept(body_of(layouts()["vllm (orjson, float32)"]), JSON)
    results = []
    threads = [threading.Thread(target=lambda: results.append(rows.python_rows())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r is results[0] for r in results)


def test_a_failure_of_ours_building_the_rows_gives_the_hosts_own_reading(monkeypatch):
    body = body_of(layouts()["specials"])
    keeper = Keeper()
    rows = kept(body, JSON, keeper)

    def broken(self):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(KeptRows, "_from_array", broken)
    assert same(rows.python_rows(), own_rows(body, JSON))
    assert [str(e) for e in keeper.failures] == ["a bug of ours"] and keeper.reports == []


def test_the_stand_ins():
    body = body_of(["[0.5, 0.25, 1.5]", "[1, 2, 3]"])
    keeper = Keeper()
    rows = kept(body, JSON, keeper)
    first, second = rows.stand_ins()
    # what the host's dumps do with it: kept as it is, copied as itself, its text a placeholder
    assert copy.copy(first) is first and copy.deepcopy({"e": first})["e"] is first
    assert str(first) == repr(first) == kept_rows.STAND_IN_TEXT
    assert json.dumps({"embedding": first}, default=str) == json.dumps({"embedding": kept_rows.STAND_IN_TEXT})
    assert keeper.reports == []
    # anything else gets the row's values, and the host hears of each way it was read
    assert len(first) == 3 and list(first) == [0.5, 0.25, 1.5] and first[1] == 0.25 and first == [0.5, 0.25, 1.5]
    assert list(reversed(second)) == [3, 2, 1] and 2 in second and bool(second) and first != second
    assert np.asarray(first).tolist() == [0.5, 0.25, 1.5] and pickle.loads(pickle.dumps(second)) == [1, 2, 3]
    assert type(second.values()[0]) is int and second.values() is rows.python_rows()[1]
    assert set(keeper.reports) == {"len", "iter", "getitem", "eq", "reversed", "contains", "bool", "array", "pickle"}
    with pytest.raises(TypeError):
        hash(first)


def test_kept_only_where_the_request_keeps_them():
    body = body_of(["[0.5, 0.25]"])
    rows, offsets = rows_and_offsets(body)
    assert kept_rows.stand_ins(body, rows, offsets, JSON) is None  # no request keeping
    with kept_rows.keeping(Keeper(keeps=False)):
        assert kept_rows.stand_ins(body, rows, offsets, JSON) is None
        with kept_rows.keeping(Keeper()):
            assert kept_rows.stand_ins(body, rows, offsets, JSON) is not None
        assert kept_rows.stand_ins(body, rows, offsets, JSON) is None
    assert kept_rows.stand_ins(body, rows, offsets, JSON) is None


def test_the_readers_give_stand_ins_while_kept(monkeypatch):
    """LiteLLM's hosted_vllm reader (tensorb64._hosts.litellm.loads_embeddings): the same dict, each
    row a stand-in whose Python row is json.loads's."""
    from tensorb64._hosts.litellm import loads_embeddings

    body = body_of(layouts()["specials"])
    plain = loads_embeddings(body)
    assert same([e["embedding"] for e in plain["data"]], own_rows(body, JSON))
    with kept_rows.keeping(Keeper()):
        read = loads_embeddings(body)
    assert all(isinstance(e["embedding"], KeptRow) for e in read["data"])
    assert [{k: v for k, v in e.items() if k != "embedding"} for e in read["data"]] == [
        {k: v for k, v in e.items() if k != "embedding"} for e in plain["data"]]
    assert same([e["embedding"].values() for e in read["data"]], [e["embedding"] for e in plain["data"]])
