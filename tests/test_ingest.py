"""Ingestion against the real engines (marked `ingest`: their own venv, ci/ingest_check.sh):
tensorb64.arrow's columns, tensorb64.ray.EmbeddingClient on a local Ray cluster of 2 CPUs,
tensorb64.daft.embed_text on Daft's native runner, and the columns written to Parquet and LanceDB,
against the local server on 127.0.0.1 answering bodies as vLLM, SGLang and OpenAI write them.
Every vector is checked bit for bit against json.loads + numpy float32 of the same body."""

from __future__ import annotations

import functools

import numpy as np
import pytest

# The engines' own deprecation notices (Ray Data's context warns of its own settings) are theirs.
pytestmark = [pytest.mark.ingest, pytest.mark.filterwarnings(r"ignore::DeprecationWarning:(ray|daft|lancedb)(\..*)?")]

pa = pytest.importorskip("pyarrow", reason="the ingest venv (ci/ingest_check.sh) has pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray", reason="the ingest venv (ci/ingest_check.sh) has Ray Data")
daft = pytest.importorskip("daft", reason="the ingest venv (ci/ingest_check.sh) has Daft")
lancedb = pytest.importorskip("lancedb", reason="the ingest venv (ci/ingest_check.sh) has LanceDB")
httpx = pytest.importorskip("httpx", reason="the ingest venv (ci/ingest_check.sh) has httpx")

import tensorb64.daft  # noqa: E402
import tensorb64.ray  # noqa: E402
from tensorb64.arrow import embedding_array, with_embeddings  # noqa: E402
from tensorb64.openai import response_body  # noqa: E402
from tests.support.embeddings_server import LocalServer, Written  # noqa: E402
from tests.support.ingest_server import SHAPES, Failing, expected, reference, same_bits, vectors  # noqa: E402

TABLE = vectors(1000, 64)
ROWS = 300
ORDER = np.random.default_rng(1).permutation(1000)[:ROWS]  # the rows' texts, in a scrambled order
TEXTS = [f"row {i}" for i in ORDER]


def column_values(column) -> np.ndarray:
    """A fixed_size_list<float32> column (or chunked column) as one [B, D] array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.ExtensionArray):  # Daft's embedding type: an extension over fixed_size_list
        column = column.storage
    assert pa.types.is_fixed_size_list(column.type) and column.type.value_type == pa.float32()
    return column.flatten().to_numpy(zero_copy_only=True).reshape(len(column), column.type.list_size)


# -- tensorb64.arrow ---------------------------------------------------------------------------

def test_an_array_becomes_a_column_without_a_copy():
    x = vectors(10, 7)
    column = embedding_array(x)
    assert column.type == pa.list_(pa.float32(), 7) and len(column) == 10
    assert column.values.buffers()[1].address == x.ctypes.data  # the same memory
    assert same_bits(column_values(column), x)
    del x  # the column holds the array's memory
    assert column_values(column).shape == (10, 7)


@pytest.mark.parametrize("encoding_format", ["base64", "float"])
def test_a_body_becomes_a_column(encoding_format):
    body = response_body(TABLE[:20], model="m", encoding_format=encoding_format, float_format="shortest", layout="vllm")
    assert same_bits(column_values(embedding_array(body)), reference(body))


def test_the_table_form():
    texts = pa.table({"id": pa.array(range(5)), "text": pa.array([f"row {i}" for i in range(5)])})
    table = with_embeddings(texts, TABLE[:5])
    assert table.column_names == ["id", "text", "embedding"] and table.column("id").to_pylist() == list(range(5))
    assert same_bits(column_values(table.column("embedding")), TABLE[:5])
    replaced = with_embeddings(table, TABLE[5:10])  # the column of that name, replaced in its place
    assert replaced.column_names == ["id", "text", "embedding"]
    assert same_bits(column_values(replaced.column("embedding")), TABLE[5:10])
    batch = with_embeddings(texts.to_batches()[0], TABLE[:5], name="v")
    assert isinstance(batch, pa.RecordBatch) and batch.column_names == ["id", "text", "v"]


@pytest.mark.parametrize("value,error,message", [
    (np.zeros((2, 3)), ValueError, "float32 array, got float64"),
    (np.zeros(3, np.float32), ValueError, r"\[B, D\] float32 array"),
    (np.zeros((3, 4), np.float32)[:, ::2], ValueError, "C-contiguous"),
    (np.zeros((2, 3), ">f4"), ValueError, "float32 array"),
    ([[1.0]], TypeError, "response body .* or a \\[B, D\\] float32 numpy array, got list"),
    (b'{"data":1}', ValueError, "data"),
])
def test_what_is_refused(value, error, message):
    with pytest.raises(error, match=message):
        embedding_array(value)


def test_the_table_form_refuses():
    with pytest.raises(ValueError, match="2 rows for a table of 3"):
        with_embeddings(pa.table({"a": [1, 2, 3]}), TABLE[:2])
    with pytest.raises(TypeError, match="pyarrow.Table or pyarrow.RecordBatch"):
        with_embeddings({"a": [1]}, TABLE[:1])


# -- Ray Data ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, object_store_memory=200 * 2**20, include_dashboard=False, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the order checked below is the dataset's
    context.enable_progress_bars = False
    yield
    ray.shutdown()


def ray_embed(server, *, batch_format="pyarrow", **options):
    ds = ray.data.from_items([{"id": int(i), "text": t} for i, t in zip(ORDER, TEXTS, strict=True)], override_num_blocks=4)
    kwargs = {"base_url": server.base_url, "model": "m", "input_column": "text", "backoff_s": 0.01, **options}
    out = ds.map_batches(tensorb64.ray.EmbeddingClient, fn_constructor_kwargs=kwargs, batch_size=64, concurrency=2,
                         batch_format=batch_format)
    return pa.concat_tables(ray.get(out.to_arrow_refs()))


@pytest.mark.parametrize("layout,encoding_format,float_format", SHAPES)
def test_ray_map_batches(ray_cluster, layout, encoding_format, float_format):
    with LocalServer(Written(TABLE, layout=layout, float_format=float_format)) as server:
        table = ray_embed(server, encoding_format=encoding_format)
        assert server.requests == 8  # 4 blocks of 75 rows: batches of 64 and 11
    assert table.column_names == ["id", "text", "embedding"]
    assert table.column("embedding").type == pa.list_(pa.float32(), 64)
    assert table.column("id").to_pylist() == ORDER.tolist()  # the input's order, across batches and workers
    want = expected(TABLE, TEXTS, layout=layout, encoding_format=encoding_format, float_format=float_format)
    assert same_bits(column_values(table.column("embedding")), want)


def test_ray_dimensions_and_numpy_batches(ray_cluster):
    with LocalServer(Written(TABLE)) as server:
        table = ray_embed(server, batch_format="numpy", dimensions=24, encoding_format="float")
    assert table.column("id").to_pylist() == ORDER.tolist()
    got = np.stack(table.column("embedding").to_numpy(zero_copy_only=False)) if table.column("embedding").type \
        != pa.list_(pa.float32(), 24) else column_values(table.column("embedding"))
    assert same_bits(got.astype(np.float32), expected(TABLE, TEXTS, layout="vllm", encoding_format="float",
                                                      float_format="shortest", dimensions=24))


def test_ray_retries(ray_cluster):
    answer = Failing(Written(TABLE), failures=5, status=503, headers={"Retry-After": "0"})
    with LocalServer(answer) as server:
        table = ray_embed(server, max_retries=5)
        assert answer.refused == 5 and server.requests == 8 + 5
    assert same_bits(column_values(table.column("embedding")), TABLE[ORDER])


def test_ray_through_a_users_httpx_client(ray_cluster):
    """A factory of the user's client, pickled by Ray to each actor and called there (a partial of
    httpx.Client: the client's own headers arrive), with the same retries and rows."""
    answer = Failing(Written(TABLE), failures=2, status=429, headers={"Retry-After": "0"})
    with LocalServer(answer) as server:
        table = ray_embed(server, http_client=functools.partial(httpx.Client, headers={"X-Tenant": "ray"}))
        assert answer.refused == 2 and server.requests == 8 + 2 and server.last_headers["X-Tenant"] == "ray"
    assert table.column("id").to_pylist() == ORDER.tolist()
    assert same_bits(column_values(table.column("embedding")), TABLE[ORDER])


def test_ray_a_batch_that_fails_for_good(ray_cluster):
    bad = int(ORDER[100])  # row 100 of the dataset: row 25 of its second block's first batch (rows 75..138)
    answer = Failing(Written(TABLE), status=400, body=b'{"error":{"message":"input too long"}}', always={bad})
    with LocalServer(answer) as server:
        with pytest.raises(Exception) as caught:
            ray_embed(server, max_retries=1)
    text = str(caught.value)
    assert "EmbeddingRequestError" in text and "rows 0..63 of the batch (64 texts)" in text
    assert "400 Bad Request: input too long" in text


def test_ray_an_empty_batch():
    with LocalServer(Written(TABLE)) as server:
        client = tensorb64.ray.EmbeddingClient(server.base_url, "m", dimensions=16)
        out = client(pa.table({"id": pa.array([], pa.int64()), "text": pa.array([], pa.string())}))
        assert server.requests == 0
    assert out.num_rows == 0 and out.column("embedding").type == pa.list_(pa.float32(), 16)


@pytest.mark.filterwarnings("ignore:The minimum number of concurrent actors:UserWarning")  # Ray's: no input, no actor
def test_ray_an_empty_dataset(ray_cluster):
    with LocalServer(Written(TABLE)) as server:
        ds = ray.data.from_items([{"text": "row 1"}]).limit(0)
        out = ds.map_batches(tensorb64.ray.EmbeddingClient, fn_constructor_kwargs={"base_url": server.base_url,
                             "model": "m"}, batch_size=64, concurrency=1, batch_format="pyarrow")
        assert out.count() == 0 and server.requests == 0


def test_ray_batches_refused():
    client = tensorb64.ray.EmbeddingClient("http://127.0.0.1:1/v1", "m")
    with pytest.raises(KeyError, match="no column 'text'"):
        client(pa.table({"body": ["a"]}))
    with pytest.raises(TypeError, match="must hold strings, got int64"):
        client(pa.table({"text": [1]}))
    with pytest.raises(ValueError, match="1 nulls \\(the first at row 1\\)"):
        client(pa.table({"text": ["a", None]}))
    with pytest.raises(TypeError, match="pyarrow.Table .* or a dict of numpy arrays"):
        client([1, 2])


# -- Daft ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def daft_native():
    """Daft's native runner, named: Daft picks its Ray runner by itself where Ray is initialised
    (the Ray tests' cluster), and the runner is chosen once a process (Daft on Ray: below)."""
    daft.set_runner_native()


@pytest.mark.parametrize("layout,encoding_format,float_format", SHAPES[:3])
@pytest.mark.parametrize("dimensions", [None, 24])
def test_daft_embed_text(daft_native, layout, encoding_format, float_format, dimensions):
    with LocalServer(Written(TABLE, layout=layout, float_format=float_format)) as server:
        df = daft.from_pydict({"id": ORDER.tolist(), "text": TEXTS})
        df = df.with_column("embedding", tensorb64.daft.embed_text(
            daft.col("text"), base_url=server.base_url, model="m", encoding_format=encoding_format,
            dimensions=dimensions))
        assert df.schema()["embedding"].dtype == daft.DataType.embedding(daft.DataType.float32(), dimensions or 64)
        table = df.to_arrow()
    assert table.column("id").to_pylist() == ORDER.tolist()
    want = expected(TABLE, TEXTS, layout=layout, encoding_format=encoding_format, float_format=float_format,
                    dimensions=dimensions)
    assert same_bits(column_values(table.column("embedding")), want)


def test_daft_retries_and_failures(daft_native):
    answer = Failing(Written(TABLE), failures=3, status=429)
    with LocalServer(answer) as server:
        df = daft.from_pydict({"text": TEXTS[:100]}).with_column("embedding", tensorb64.daft.embed_text(
            daft.col("text"), base_url=server.base_url, model="m", dimensions=64, backoff_s=0.01))
        table = df.to_arrow()
        assert answer.refused == 3
    assert same_bits(column_values(table.column("embedding")), TABLE[ORDER[:100]])
    bad = Failing(Written(TABLE), status=500, body=b'{"message":"CUDA out of memory"}', always={int(ORDER[70])})
    with LocalServer(bad) as server:
        df = daft.from_pydict({"text": TEXTS[:100]}).with_column("embedding", tensorb64.daft.embed_text(
            daft.col("text"), base_url=server.base_url, model="m", dimensions=64, max_retries=1, backoff_s=0.01))
        with pytest.raises(Exception, match=r"rows 0\.\.\d+ of the batch .*500 Internal Server Error: CUDA out of memory"):
            df.collect()


def test_daft_through_a_users_httpx_client(daft_native):
    answer = Failing(Written(TABLE), failures=2, status=503)
    with LocalServer(answer) as server:
        df = daft.from_pydict({"text": TEXTS[:100]}).with_column("embedding", tensorb64.daft.embed_text(
            daft.col("text"), base_url=server.base_url, model="m", backoff_s=0.01,
            http_client=functools.partial(httpx.Client, headers={"X-Tenant": "daft"})))
        table = df.to_arrow()
        assert answer.refused == 2 and server.last_headers["X-Tenant"] == "daft"
    assert same_bits(column_values(table.column("embedding")), TABLE[ORDER[:100]])


def test_daft_empty_input(daft_native):
    with LocalServer(Written(TABLE)) as server:
        df = daft.from_pydict({"text": pa.array([], pa.string())}).with_column("embedding", tensorb64.daft.embed_text(
            daft.col("text"), base_url=server.base_url, model="m", dimensions=8))
        assert len(df.to_arrow()) == 0 and server.requests == 0


DAFT_ON_RAY = """
import sys, daft, numpy as np, ray, tensorb64.daft
from tests.support.embeddings_server import LocalServer, Written
from tests.support.ingest_server import vectors, same_bits
table = vectors(1000, 64)
ray.init(num_cpus=2, object_store_memory=200 * 2**20, include_dashboard=False, log_to_driver=False)
daft.set_runner_ray()
try:
    with LocalServer(Written(table)) as server:
        order = np.random.default_rng(1).permutation(1000)[:300]
        df = daft.from_pydict({"id": order.tolist(), "text": [f"row {i}" for i in order]}).into_partitions(3)
        df = df.with_column("embedding", tensorb64.daft.embed_text(daft.col("text"), base_url=server.base_url,
                                                                     model="m", encoding_format=sys.argv[1]))
        out = df.to_arrow().sort_by("id")
    got = out.column("embedding").combine_chunks().storage.flatten().to_numpy().reshape(-1, 64)
    assert out.column("id").to_pylist() == sorted(order.tolist())
    assert same_bits(got, table[np.sort(order)]), "vectors differ"
    print("daft on ray:", len(out), "rows")
finally:
    ray.shutdown()
"""


@pytest.mark.parametrize("encoding_format", ["base64", "float"])
def test_daft_on_ray(encoding_format, tmp_path):
    """Daft's Ray runner (in a process of its own: the runner is chosen once a process). Daft on
    Ray does not keep the rows' order across partitions: the rows are compared by their id."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "DAFT_PROGRESS_BAR": "0"}
    done = subprocess.run([sys.executable, "-c", DAFT_ON_RAY, encoding_format], cwd=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0 and "daft on ray: 300 rows" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


def test_daft_refuses():
    with pytest.raises(TypeError, match="daft.Expression"):
        tensorb64.daft.embed_text("text", base_url="http://127.0.0.1:1/v1", model="m")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        tensorb64.daft.embed_text(daft.col("text"), base_url="http://127.0.0.1:1/v1", model="m", batch_size=0)


# -- where the vectors go ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def embedded():
    """The texts with their vectors, as the Ray adapter gives them (one batch of the client)."""
    with LocalServer(Written(TABLE)) as server:
        client = tensorb64.ray.EmbeddingClient(server.base_url, "m", request_size=64, max_in_flight=2)
        return client(pa.table({"id": ORDER, "text": TEXTS}))


def test_parquet(embedded, tmp_path):
    pq.write_table(embedded, tmp_path / "vectors.parquet")
    back = pq.read_table(tmp_path / "vectors.parquet")
    assert back.schema == embedded.schema and back.equals(embedded)
    assert same_bits(column_values(back.column("embedding")), TABLE[ORDER])


def test_lancedb(embedded, tmp_path):
    db = lancedb.connect(tmp_path / "lance")
    table = db.create_table("vectors", data=embedded)
    back = table.to_arrow().sort_by("id")
    want = embedded.sort_by("id")
    assert back.column("id").equals(want.column("id")) and back.column("text").equals(want.column("text"))
    assert same_bits(column_values(back.column("embedding")), column_values(want.column("embedding")))
    nearest = table.search(TABLE[ORDER[7]], vector_column_name="embedding").limit(1).to_arrow()
    assert nearest.column("id").to_pylist() == [int(ORDER[7])]
