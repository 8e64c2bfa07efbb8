"""tensorb64.openai.embedding_data: the `data` entries of an OpenAI embeddings response."""

import base64
import json

import numpy as np
import pytest

import tensorb64
import tensorb64.openai as tb_openai
from tensorb64 import _native, json_rows
from tensorb64.openai import embedding_data, response_body

torch = pytest.importorskip("torch", reason="torch (the test extra) is not installed")

pytestmark = pytest.mark.usefixtures("each_simd_level")


@pytest.fixture
def batch():
    generator = torch.Generator().manual_seed(5)
    return torch.randn(6, 48, generator=generator)


def _reference_b64(rows: np.ndarray) -> list:
    """base64 of each row's little-endian float32 bytes, by the standard library."""
    return [base64.b64encode(np.ascontiguousarray(row, dtype="<f4").tobytes()).decode() for row in rows]


# ---- shape of the entries ----------------------------------------------------------------------


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_entries_are_numbered_openai_embedding_objects(batch, encoding_format):
    data = embedding_data(batch, encoding_format=encoding_format, start_index=10)
    assert [list(entry) for entry in data] == [["object", "index", "embedding"]] * len(batch)
    assert [entry["object"] for entry in data] == ["embedding"] * len(batch)
    assert [entry["index"] for entry in data] == list(range(10, 10 + len(batch)))


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_vllm_layout_puts_index_first(batch, encoding_format):
    """layout="vllm": the same entries, their keys in vLLM's order (index, object, embedding)."""
    openai_order = embedding_data(batch, encoding_format=encoding_format, start_index=3)
    vllm_order = embedding_data(batch, encoding_format=encoding_format, start_index=3, layout="vllm")
    assert [list(entry) for entry in vllm_order] == [["index", "object", "embedding"]] * len(batch)
    assert vllm_order == openai_order  # (dicts compare without their order)
    assert embedding_data(batch, layout="openai") == embedding_data(batch)


@pytest.mark.parametrize("layout", sorted(_native._response_layouts()))
def test_entries_dump_as_the_body_writes_them_in_every_layout(batch, layout):
    """Every layout of the core's table: the entries json.dumps writes are the body's data, byte for
    byte (their keys in that layout's order), for base64 and float rows."""
    for encoding_format in ("base64", "float"):
        data = embedding_data(batch, encoding_format=encoding_format, float_format="shortest", layout=layout)
        body = tb_openai.response_body(batch, model="m", encoding_format=encoding_format, float_format="shortest",
                                       layout=layout)
        assert json.loads(body)["data"] == data
        assert json.dumps(data, separators=(",", ":")).encode() in body


def test_default_format_is_float(batch):
    assert embedding_data(batch) == embedding_data(batch, encoding_format="float")


def test_empty_batch_gives_no_entries():
    assert embedding_data(torch.empty(0, 384), encoding_format="base64") == []
    assert embedding_data(np.empty((0, 384), np.float32), encoding_format="float") == []


def test_one_dimensional_input_is_one_row():
    row = np.arange(5, dtype=np.float32)
    assert embedding_data(row, encoding_format="base64") == embedding_data(row[None], encoding_format="base64")
    assert [e["index"] for e in embedding_data(row)] == [0]


# ---- base64 entries ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("dimensions", [None, 1, 17, 48])
def test_base64_entries_equal_encode_rows(batch, dtype, dimensions):
    x = batch.to(dtype)
    cut = x if dimensions is None else x[:, :dimensions]
    data = embedding_data(x, encoding_format="base64", dimensions=dimensions)
    assert [entry["embedding"] for entry in data] == tensorb64.encode_rows(cut)
    assert [entry["embedding"] for entry in data] == _reference_b64(cut.to(torch.float32).numpy())


def test_base64_entries_of_numpy_list_and_strided_input(batch):
    a = batch.numpy()
    expected = _reference_b64(a[:, :20])
    assert [e["embedding"] for e in embedding_data(a, encoding_format="base64", dimensions=20)] == expected
    assert [e["embedding"] for e in embedding_data(a.tolist(), encoding_format="base64", dimensions=20)] == expected
    big_endian = a.astype(">f4")
    assert [e["embedding"] for e in embedding_data(big_endian, encoding_format="base64", dimensions=20)] == expected
    transposed = np.asfortranarray(a)  # column-major: rows are strided
    assert [e["embedding"] for e in embedding_data(transposed, encoding_format="base64", dimensions=20)] == expected


def test_base64_decodes_to_the_float_entries(batch):
    """Both formats carry the same numbers: what a client decodes from base64 is the float list."""
    for x in (batch, batch.to(torch.bfloat16), batch.to(torch.float64)):
        strings = [e["embedding"] for e in embedding_data(x, encoding_format="base64", dimensions=30)]
        floats = [e["embedding"] for e in embedding_data(x, encoding_format="float", dimensions=30)]
        assert tensorb64.decode_rows(strings).tolist() == floats


# ---- float entries -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_float_entries_are_python_floats_of_the_float32_values(batch, dtype):
    x = batch.to(dtype)
    data = embedding_data(x, encoding_format="float", dimensions=33)
    expected = x[:, :33].to(torch.float32).tolist()
    assert [entry["embedding"] for entry in data] == expected
    assert all(type(v) is float for entry in data for v in entry["embedding"])
    # Each double is exactly a float32: narrowing it back changes nothing.
    values = np.array([entry["embedding"] for entry in data])
    assert np.array_equal(values.astype(np.float32).astype(np.float64), values)


def test_float_entries_survive_json_bit_for_bit(batch):
    data = embedding_data(batch, encoding_format="float")
    parsed = json.loads(json.dumps(data))
    got = np.array([entry["embedding"] for entry in parsed], dtype=np.float32)
    assert np.array_equal(got.view(np.uint32), batch.numpy().view(np.uint32))


def test_float_entries_of_numpy_input():
    a = np.array([[1e-45, -0.0, 3.5, 1e30], [0.1, 2.0, -1e30, 7.0]])  # float64
    data = embedding_data(a, encoding_format="float")
    assert [e["embedding"] for e in data] == torch.from_numpy(a).to(torch.float32).tolist()
    # Two beyond float32's range: infinite once converted, refused as NaN and infinity are (the
    # entries are float32 values; response_body writes float64 rows as the doubles themselves).
    a[0, 3], a[1, 2] = 1e300, -1e300
    for float_format in ("repr", "shortest", "orjson"):
        with pytest.raises(ValueError, match="row 0, column 3 is NaN or infinite"):
            embedding_data(a, encoding_format="float", float_format=float_format)


@pytest.mark.parametrize("float_format", ["repr", "shortest", "orjson"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_float_entries_refuse_nan_and_infinity_naming_the_row(batch, bad, float_format):
    """As the docstring says and json.dumps(allow_nan=False) (Starlette's JSONResponse) and
    response_body do: before, "repr" (the default) gave NaN and infinity as floats that the
    server's json.dumps then refused without naming where."""
    x = batch.clone()
    x[4, 9] = bad
    for threads in (1, 3):
        with pytest.raises(ValueError, match=r"row 4, column 9 is NaN or infinite: NaN and infinity have no JSON text"):
            embedding_data(x, encoding_format="float", float_format=float_format, threads=threads)
    with pytest.raises(ValueError, match=r"row 4, column 9"):
        response_body(x, model="m", encoding_format="float", float_format=float_format)
    with pytest.raises(ValueError, match=r"row 4, column 9"):
        json_rows(x, float_format=float_format)
    # The cut decides (as response_body's): outside the kept dimensions it is no value of the entries.
    assert embedding_data(x, encoding_format="float", float_format=float_format, dimensions=9) == embedding_data(
        batch, encoding_format="float", float_format=float_format, dimensions=9)
    assert embedding_data(x, encoding_format="base64")[4]["embedding"]  # base64 carries it


def test_requires_grad_tensor(batch):
    x = batch.clone().requires_grad_(True)
    assert embedding_data(x, encoding_format="float") == embedding_data(batch, encoding_format="float")
    assert embedding_data(x, encoding_format="base64") == embedding_data(batch, encoding_format="base64")


# ---- truncation is a view --------------------------------------------------------------------------


def _spy_on_encoder(monkeypatch):
    seen = []

    def spy(rows, **kwargs):
        seen.append(rows)
        return tensorb64.encode_rows(rows, **kwargs)

    monkeypatch.setattr(tb_openai, "encode_rows", spy)
    return seen


def test_dimensions_on_a_tensor_is_a_view(batch, monkeypatch):
    seen = _spy_on_encoder(monkeypatch)
    embedding_data(batch, encoding_format="base64", dimensions=16)
    (rows,) = seen
    assert isinstance(rows, torch.Tensor)
    assert rows.shape == (6, 16)
    assert rows.data_ptr() == batch.data_ptr() and rows.stride() == batch.stride()


def test_dimensions_on_an_array_is_a_view(batch, monkeypatch):
    a = batch.numpy()
    seen = _spy_on_encoder(monkeypatch)
    embedding_data(a, encoding_format="base64", dimensions=16)
    (rows,) = seen
    assert rows.shape == (6, 16)
    assert np.shares_memory(rows, a) and rows.strides == a.strides


def test_bfloat16_rows_reach_the_encoder_unconverted(batch, monkeypatch):
    """No float32 copy of a bf16 batch: the encoder widens inside its one pass."""
    x = batch.to(torch.bfloat16)
    seen = _spy_on_encoder(monkeypatch)
    embedding_data(x, encoding_format="base64", dimensions=8)
    assert seen[0].dtype == torch.bfloat16 and seen[0].data_ptr() == x.data_ptr()


# ---- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dimensions", [0, -1, -48, 49, 1000, 2.0, 16.5, "16", True, False, [16]])
@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_bad_dimensions_name_the_accepted_range(batch, dimensions, encoding_format):
    with pytest.raises(ValueError, match=r"dimensions must be an int from 1 to 48"):
        embedding_data(batch, encoding_format=encoding_format, dimensions=dimensions)


def test_dimensions_accepts_numpy_integers_and_the_full_width(batch):
    assert embedding_data(batch, dimensions=np.int64(48)) == embedding_data(batch)
    assert len(embedding_data(batch, dimensions=np.int32(3))[0]["embedding"]) == 3


def test_dimensions_of_zero_width_rows():
    with pytest.raises(ValueError, match="rows are empty"):
        embedding_data(np.empty((2, 0), np.float32), dimensions=1)


@pytest.mark.parametrize("encoding_format", ["FLOAT", "base-64", "float16", "", None, 0])
def test_unknown_encoding_format(batch, encoding_format):
    with pytest.raises(ValueError, match=r"expected 'float' or 'base64'"):
        embedding_data(batch, encoding_format=encoding_format)


@pytest.mark.parametrize("start_index", [-1, 1.0, "0", None])
def test_bad_start_index(batch, start_index):
    with pytest.raises(ValueError, match="start_index"):
        embedding_data(batch, start_index=start_index)


def test_bad_inputs(batch):
    with pytest.raises(ValueError, match="2-D"):
        embedding_data(batch.reshape(2, 3, 48))
    with pytest.raises(ValueError, match="2-D"):
        embedding_data(torch.tensor(1.0))
    with pytest.raises(TypeError, match="array of numbers"):
        embedding_data("0.5, 0.25")
    with pytest.raises(TypeError, match="complex"):
        embedding_data(torch.zeros(2, 4, dtype=torch.complex64))
    with pytest.raises(TypeError, match="must hold only numbers"):
        embedding_data([["a", "b"]])
    with pytest.raises(TypeError, match="arrays of dtype <U1 are not supported"):
        embedding_data(np.array([["a", "b"]]))
    # Raw bytes are not numbers: refused as encode_rows refuses them, never read byte by byte.
    with pytest.raises(TypeError, match="a buffer must hold floats"):
        embedding_data(memoryview(np.float32([1.0, 2.0]).tobytes()))
    with pytest.raises(ValueError, match="equal length"):
        embedding_data([[1.0, 2.0], [3.0]])


# ---- float_format: the floats of the core's text ------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("layout", ["openai", "vllm"])
def test_float_entries_dump_to_exactly_the_shortest_body(layout, threads):
    """json.dumps of embedding_data's entries (float_format="shortest") is exactly the body
    response_body writes: each float's repr is the shortest text of its float32."""
    g = torch.Generator().manual_seed(11)
    t = torch.cat([torch.randn(5, 64, generator=g) * 0.05, torch.randn(1, 64, generator=g) * 1e30,
                   torch.tensor([[1e-45, -0.0, 0.1, 3.4028235e38] * 16])])
    data = embedding_data(t, encoding_format="float", float_format="shortest", layout=layout, threads=threads)
    usage = {"prompt_tokens": 0, "total_tokens": 0}
    # each layout's envelope order: OpenAI's, and vLLM's (id and created left out when not given)
    body = ({"object": "list", "data": data, "model": "m", "usage": usage} if layout == "openai"
            else {"object": "list", "model": "m", "data": data, "usage": usage})
    text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    assert text == tb_openai.response_body(t, model="m", encoding_format="float", float_format="shortest", layout=layout)
    assert data[-1]["embedding"][:4] == [1e-45, -0.0, 0.1, 3.4028235e38]
    assert [[float(v) for v in np.float32(e["embedding"])] for e in data] == t.tolist()  # the same float32 values


def test_float_entries_in_repr_mode_are_the_tolist_floats(batch):
    for threads in (1, 3):
        data = embedding_data(batch, encoding_format="float", float_format="repr", threads=threads)
        assert [e["embedding"] for e in data] == batch.tolist()
    assert embedding_data(batch, encoding_format="float") == data  # "repr" is the default
    with pytest.raises(ValueError, match="float_format"):
        embedding_data(batch, encoding_format="float", float_format="short")


def test_float_entries_are_written_by_the_core(batch, monkeypatch):
    written = []
    float_lists = tb_openai._native._finite_float_lists

    def spy(rows, **kwargs):
        written.append(kwargs)
        return float_lists(rows, **kwargs)

    monkeypatch.setattr(tb_openai._native, "_finite_float_lists", spy)
    embedding_data(batch, encoding_format="float", float_format="shortest", threads=2)
    assert written == [{"float_format": "shortest", "threads": 2}]
