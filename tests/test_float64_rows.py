"""The body reader's float64 mode (float rows as the Python floats a client makes of json.loads's
values: tensorb64.openai.patch() rests on it), against json.loads on every layout a server writes,
and where each row's embedding text lies; at every SIMD level this CPU has."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from tensorb64._codec.body_reader import rows_and_offsets

pytestmark = pytest.mark.usefixtures("each_simd_level")

RNG = np.random.default_rng(27)


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


def float_rows_body(rows_text: list[str], indexes: list[int] | None = None) -> bytes:
    indexes = list(range(len(rows_text))) if indexes is None else indexes
    entries = ",".join(f'{{"object":"embedding","index":{i},"embedding":{t}}}' for i, t in zip(indexes, rows_text, strict=True))
    return f'{{"object":"list","data":[{entries}],"model":"m"}}'.encode()


def assert_reads_as_json_loads(body: bytes) -> None:
    rows, offsets = rows_and_offsets(body)
    assert rows.dtype == np.float64
    entries = json.loads(body)["data"]
    assert rows.shape[0] == len(entries)
    for entry in entries:
        expected = [float(v) for v in entry["embedding"]]
        got = rows[entry["index"]].tolist()
        assert [bits(v) for v in got] == [bits(v) for v in expected], entry["index"]
        start, end = offsets[entry["index"]]
        assert json.loads(body[start:end]) == entry["embedding"] or any(math.isnan(v) for v in expected)


def layouts_of(values: np.ndarray) -> list[list[str]]:
    """The same rows as json.dumps, repr of float32 widened, numpy's shortest float32 and
    scientific text write them."""
    out = [[json.dumps(row.tolist()) for row in values]]
    out.append([json.dumps(row.astype(np.float32).tolist()) for row in values])
    out.append(["[" + ", ".join(np.format_float_positional(v, unique=True, trim="-") for v in row.astype(np.float32)) + "]"
                for row in values])
    out.append(["[" + ",".join(np.format_float_scientific(v, unique=True, trim="-") for v in row.astype(np.float32)) + "]"
                for row in values])
    out.append(["[" + ",".join(f"{v:.17e}".replace("e+0", "E+").replace("e-0", "e-") for v in row) + "]"
                for row in values])
    return out


def test_float64_rows_equal_json_loads_on_every_layout():
    # magnitudes below 1e13: a positional text of an integer of more than 15 digits is refused
    values = RNG.normal(0, 0.05, (5, 64)) * np.exp(RNG.uniform(-40, 30, (5, 64)))
    for layout in layouts_of(values):
        assert_reads_as_json_loads(float_rows_body(layout))


def test_float64_rows_equal_orjson_text():
    orjson = pytest.importorskip("orjson")
    values = RNG.normal(0, 0.05, (3, 128)).astype(np.float32)
    body = orjson.dumps({"object": "list", "data": [{"object": "embedding", "index": i, "embedding": r}
                                                     for i, r in enumerate(values)], "model": "m"},
                        option=orjson.OPT_SERIALIZE_NUMPY)
    assert_reads_as_json_loads(body)


def test_float64_rows_edge_texts():
    texts = [
        "0", "-0", "0.0", "-0.0", "1", "-1", "3", "999999999999999", "-999999999999999",
        "1e0", "1E+2", "1e-2", "2.5e-324", "5e-324", "4.9406564584124654e-324", "2.2250738585072011e-308",
        "2.2250738585072014e-308", "1.7976931348623157e308", "1.7976931348623159e308", "1e400", "-1e400",
        "1e-400", "0.1", "0.30000000000000004", "9007199254740993.0", "9007199254740992.5",
        # halfway between two doubles, and one digit either side of halfway
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "0." + "0" * 30 + "1234567890123456789012345678901234567890",
        "123456789012345678901234567890.0", "NaN", "Infinity", "-Infinity", "1.5e-45", "3.4028235e38",
    ]
    assert_reads_as_json_loads(float_rows_body(["[" + ", ".join(texts) + "]", "[" + ",".join(reversed(texts)) + "]"]))


def test_float64_rows_refuse_integers_a_client_may_keep_as_int():
    for text in ["1000000000000000", "12345678901234567890", "9007199254740993", "10000000000000000000000"]:
        with pytest.raises(ValueError, match="at most 15 digits"):
            rows_and_offsets(float_rows_body([f"[0.5, {text}]"]))


def test_float64_rows_offsets_in_any_order_and_escaped_keys():
    body = (b'{"data":[{"embedding":[1.5,2],"index":1,"x":"]"},{"ind\\u0065x":0,"object":"embedding",'
            b'"embedding":  [ 3 , 4.25 ] }],"model":"m","usage":{"a":[1,2]}}')
    rows, offsets = rows_and_offsets(body)
    assert rows.tolist() == [[3.0, 4.25], [1.5, 2.0]]
    assert [body[s:e] for s, e in offsets] == [b"[ 3 , 4.25 ]", b"[1.5,2]"]
