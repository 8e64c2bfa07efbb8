"""Ingestion: a corpus of texts embedded through a local /v1/embeddings server by a batch pipeline,
rows/s and the client's CPU-seconds per 1,000 rows. From the repository root (the server is the
tests' own, tests/support/embeddings_server.py), with Ray Data, Daft and pyarrow installed
(`pip install ".[ingest]"`):

    python -m benchmarks.ingest_bench [--rows N] [--rounds N] [--widths D,D] [--json PATH] [--table PATH]

A section of `python -m tensorb64 bench`'s runner (tensorb64/_bench/runner.py), run by it here.

The server (embeddings_server.Precomputed, in a process of its own on 127.0.0.1) answers each
request with a body joined from row texts written beforehand (OpenAI's layout; float rows in
orjson's shortest digits, as vLLM writes them), so that the server is not what is measured: its
CPU per request is reported. Texts are row numbers; every route's vectors are checked bit for bit
against the table before its figures count. --rows texts (default 20,000) a run, batches of 64,
D in 1024 and 3072, base64 and float bodies; rounds interleaved, medians.

On a local Ray cluster (ray.init(num_cpus=2)), map_batches(..., batch_size=64, concurrency=2,
batch_format="pyarrow"), each route's column a fixed_size_list<float32> (tensorb64.arrow, no copy):
  ray identity         map_batches of a class that returns its batch: Ray Data's own cost, the
                       bound on what any client can gain
  ray http stage       ray.data.llm's HttpRequestProcessorConfig (aiohttp, response.json()), a row
                       per request of 64 texts, its postprocess numpy.array of the rows (float32)
  openai client        a class holding openai.OpenAI: embeddings.create, numpy.array of the rows
  openai patched       the same with tensorb64.openai.patch() in each worker
  EmbeddingClient      tensorb64.ray.EmbeddingClient (one request a batch)
  EmbeddingClient 2x32 the same, each batch sent as two requests of 32 texts at once
                       (request_size=32, max_in_flight=2): whether requests in flight pay
On Daft's native runner (in this process), df.with_column(..., embed_text(col("text"))):
  daft embed_text      daft.functions.embed_text(provider=OpenAIProvider(base_url=...)): always
                       float bodies (its own encoding_format), a float64 array per row
  tensorb64.daft       tensorb64.daft.embed_text, batch_size 64
Ray's rows/s are the steady state, from a run's first batch out to its last (the actors' start,
imports and clients made, left out); its CPU is the whole run's in Ray's worker processes (ray::*
descended from this one, sampled from /proc every 50 ms; the driver's share, the same for every
route, left out), their start included, and beside it that less the identity route's: what the
route adds to Ray Data's own cost. Daft's are the whole run, and this process's CPU (the server
runs in its own).
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import multiprocessing
import os
import statistics
import sys
import threading
import time

import numpy as np

from tensorb64._bench import os_facts, runner
from tensorb64._bench.report import markdown_table, text_table

NAME = "ingest"
REQUIRES = ("ray", "pyarrow", "openai")
WIDTHS = (1024, 3072)
FORMATS = ("base64", "float")
DISTINCT_ROWS = 1024  # the server's table: text i is row i % 1024
BATCH = 64
MODEL = "bench-model"


def unavailable(mods):
    # Ray's workers' CPU is read from /proc (_ray_worker_cpu); psutil is no dependency of the bench.
    if not os_facts.LINUX:
        return f"the ingest section reads Ray's workers' CPU time from /proc: Linux only, not {sys.platform}"
    return None


# --------------------------------------------------------------------------- the server


def _serve(width: int, ready) -> None:
    """The server process: the table of ``width``, served until the parent ends it."""
    from tests.support.embeddings_server import LocalServer, Precomputed

    answer = Precomputed(table(width))
    with LocalServer(answer) as server:
        ready.send(server.base_url)
        while True:
            request = ready.recv()  # "stats" or "stop"
            if request == "stop":
                break
            ready.send((answer.requests, answer.handler_cpu_s, time.process_time()))


def table(width: int) -> np.ndarray:
    return np.random.default_rng(width).normal(0, 0.05, (DISTINCT_ROWS, width)).astype(np.float32)


class Server:
    def __init__(self, width: int):
        context = multiprocessing.get_context("spawn")
        self.pipe, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(width, child), daemon=True)
        self.process.start()
        if not self.pipe.poll(120):
            raise RuntimeError("the bench's embeddings server did not start in 120 s")
        self.base_url = self.pipe.recv()

    def stats(self) -> tuple[int, float, float]:
        self.pipe.send("stats")
        return self.pipe.recv()

    def close(self) -> None:
        self.pipe.send("stop")
        self.process.join(10)


# --------------------------------------------------------------------------- client CPU


def _ray_worker_cpu() -> dict[int, float]:
    """CPU seconds of each live ray::* process (Ray's workers and actors) descended from this
    one (the local cluster's: not another Ray on the machine)."""
    tick, parent, cpu, named = os.sysconf("SC_CLK_TCK"), {}, {}, set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read(5).startswith(b"ray::"):
                    named.add(int(pid))
        except OSError:
            continue
        parent[int(pid)] = int(fields[1])
        cpu[int(pid)] = (int(fields[11]) + int(fields[12])) / tick
    me, found = os.getpid(), {}
    for pid in named:
        ancestor = pid
        while ancestor > 1 and ancestor != me:
            ancestor = parent.get(ancestor, 0)
        if ancestor == me:
            found[pid] = cpu[pid]
    return found


class RayWorkerCPU:
    """The CPU the ray::* processes spend in the context, their start included (an actor may
    start after the first batch is out): each process's last reading (sampled every 50 ms, so a
    process that exits loses at most its last 50 ms) less its reading on entry."""

    def __enter__(self):
        self.first = _ray_worker_cpu()
        self.last = dict(self.first)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while not self.done.wait(0.05):
            self.last.update(_ray_worker_cpu())

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.last.update(_ray_worker_cpu())
        self.seconds = sum(v - self.first.get(pid, 0.0) for pid, v in self.last.items())


# --------------------------------------------------------------------------- the Ray routes


def _column(pa, vectors):
    from tensorb64.arrow import embedding_array

    return embedding_array(np.ascontiguousarray(vectors, np.float32))


class Identity:
    def __call__(self, batch):
        return batch


class OpenAIClient:
    """The common pattern: the openai client in each worker, numpy.array of its rows."""

    def __init__(self, base_url: str, encoding_format: str, patched: bool):
        import openai

        if patched:
            import tensorb64.openai

            tensorb64.openai.patch()
        self.client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        self.encoding_format = encoding_format

    def __call__(self, batch):
        import pyarrow as pa

        # base64: openai's default, which it decodes to floats itself (asked for by name, it hands
        # back the strings); float: asked for.
        options = {} if self.encoding_format == "base64" else {"encoding_format": "float"}
        response = self.client.embeddings.create(input=batch.column("text").to_pylist(), model=MODEL, **options)
        vectors = np.array([d.embedding for d in response.data], np.float32)
        return batch.append_column("embedding", _column(pa, vectors))


def _texts(rows: int):
    return [{"id": i, "text": str(i)} for i in range(rows)]


def _check(ids: np.ndarray, vectors: np.ndarray, expected: np.ndarray) -> bool:
    want = expected[ids % DISTINCT_ROWS]
    return vectors.shape == want.shape and np.array_equal(vectors.view(np.uint32), want.view(np.uint32))


def _consume(pa, ds, expected) -> tuple[float, int, bool, int]:
    """Runs the dataset, each batch's vectors checked against the table (``expected`` None: not
    checked): (seconds, rows, all equal, all rows) from the first batch out to the last, so that
    the actors' start (imports, a client made) is not what is timed: the steady state."""
    rows, ok, total, started = 0, True, 0, None
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        ids = batch.column("id").to_numpy()
        if expected is not None:
            column = batch.column("embedding").combine_chunks()
            if isinstance(column, pa.ExtensionArray):
                column = column.storage
            if pa.types.is_fixed_size_list(column.type):
                vectors = column.flatten().to_numpy().reshape(len(column), -1)
            else:
                vectors = np.stack(column.to_numpy(zero_copy_only=False)).astype(np.float32)
            ok &= _check(ids, vectors, expected)
        total += len(ids)
        if started is None:  # the first batch out: the clock starts
            started = time.perf_counter()
        else:
            rows += len(ids)
    return time.perf_counter() - (started or 0.0), rows, ok, total


def ray_route(ray, pa, name: str, base_url: str, encoding_format: str, rows: int, expected):
    """One run of a Ray route: (steady-state s, rows in that time, worker CPU s of the whole run,
    all checked)."""
    import tensorb64.ray

    ds = ray.data.from_items(_texts(rows), override_num_blocks=8).materialize()
    common = {"batch_size": BATCH, "concurrency": 2, "batch_format": "pyarrow"}
    if name == "ray identity":
        out = ds.map_batches(Identity, **common)
    elif name in ("openai client", "openai patched"):
        out = ds.map_batches(OpenAIClient, fn_constructor_kwargs={"base_url": base_url, "encoding_format": encoding_format,
                                                                  "patched": name == "openai patched"}, **common)
    elif name.startswith("EmbeddingClient"):
        split = {"request_size": BATCH // 2, "max_in_flight": 2} if name == IN_FLIGHT else {}
        out = ds.map_batches(tensorb64.ray.EmbeddingClient, fn_constructor_kwargs={
            "base_url": base_url, "model": MODEL, "input_column": "text", "encoding_format": encoding_format, **split},
            **common)
    elif name == "ray http stage":
        out = _http_stage(ray, base_url, encoding_format, rows)
    else:
        raise ValueError(name)
    with RayWorkerCPU() as cpu:
        wall, counted, ok, total = _consume(pa, out, None if name == "ray identity" else expected)
    return wall, counted, cpu.seconds, ok and total == rows


def _http_stage(ray, base_url: str, encoding_format: str, rows: int):
    """Ray Data's own HTTP stage at its fastest for embeddings: a row per request of 64 texts (4
    requests in flight a call), the response's rows made one float32 array in postprocess."""
    from ray.data.llm import HttpRequestProcessorConfig, build_processor

    groups = [{"first": start, "texts": [str(i) for i in range(start, min(start + BATCH, rows))]}
              for start in range(0, rows, BATCH)]
    ds = ray.data.from_items(groups, override_num_blocks=8)
    config = HttpRequestProcessorConfig(url=f"{base_url}/embeddings", batch_size=4, concurrency=2)

    def preprocess(row):
        return {"first": row["first"], "payload": {"model": MODEL, "input": list(row["texts"]),
                                                   "encoding_format": encoding_format}}

    def postprocess(row):
        data = sorted(row["http_response"]["data"], key=lambda e: e["index"])
        if encoding_format == "base64":
            vectors = np.array([np.frombuffer(base64.b64decode(e["embedding"]), "<f4") for e in data], np.float32)
        else:
            vectors = np.array([e["embedding"] for e in data], np.float32)
        return {"first": row["first"], "vectors": vectors}

    def rows_of(batch):  # a row per text again, to be counted and checked as the others are
        import pyarrow as pa

        ids = np.concatenate([np.arange(f, f + len(v)) for f, v in zip(batch["first"], batch["vectors"], strict=True)])
        vectors = np.concatenate(list(batch["vectors"]))
        return pa.table({"id": ids, "embedding": _column(pa, vectors)})

    processor = build_processor(config, preprocess=preprocess, postprocess=postprocess)
    return processor(ds).map_batches(rows_of, batch_format="numpy", batch_size=None)


# --------------------------------------------------------------------------- the Daft routes


def daft_route(daft, pa, name: str, base_url: str, encoding_format: str, rows: int, expected):
    """One run of a Daft route on the native runner, in this process: (s, rows, this process's
    CPU s, all checked); the whole run (Daft's workers start within it)."""
    import tensorb64.daft

    df = daft.from_pydict({"id": list(range(rows)), "text": [str(i) for i in range(rows)]})
    if name == "daft embed_text":
        from daft.ai.openai.provider import OpenAIProvider
        from daft.functions import embed_text

        provider = OpenAIProvider(base_url=base_url, api_key="unused")
        # No dimensions=: Daft 0.7.26 looks a model's dtype up in its table of OpenAI's models when
        # dimensions is given (a KeyError for any other name); without, it asks the server.
        expr = embed_text(daft.col("text"), provider=provider, model=MODEL)
    else:
        expr = tensorb64.daft.embed_text(daft.col("text"), base_url=base_url, model=MODEL,
                                         encoding_format=encoding_format, dimensions=expected.shape[1])
    df = df.with_column("embedding", expr)
    cpu_before, started = time.process_time(), time.perf_counter()
    table = df.to_arrow()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    column = table.column("embedding").combine_chunks()
    if isinstance(column, pa.ExtensionArray):
        column = column.storage
    vectors = column.flatten().to_numpy().reshape(len(column), -1).astype(np.float32)
    ok = _check(table.column("id").to_numpy(), vectors, expected) and len(table) == rows
    return wall, len(table), cpu, ok


# --------------------------------------------------------------------------- the run


IN_FLIGHT = "EmbeddingClient 2x32"  # each batch as two requests of 32, both in flight: does it pay?
RAY_ROUTES = ("ray identity", "ray http stage", "openai client", "openai patched", "EmbeddingClient", IN_FLIGHT)
DAFT_ROUTES = ("daft embed_text", "tensorb64.daft")


def run(mods, cfg, log) -> dict:
    ray, pa = mods["ray"], mods["pyarrow"]
    try:
        import daft
    except ImportError:
        daft = None
    rows = cfg.get("ingest_rows") or (640 if cfg["mode"] == "smoke" else 20_000)
    rounds = 1 if cfg["mode"] == "smoke" else cfg.get("ingest_rounds", 3)
    try:
        import ray.data.llm  # noqa: F401  (aiohttp: ray[llm]'s and ray[default]'s, not ray[data]'s)

        ray_routes = RAY_ROUTES
    except ImportError as error:
        log(f"ingest: Ray's HTTP stage left out: {error}")
        ray_routes = tuple(r for r in RAY_ROUTES if r != "ray http stage")
    ray.init(num_cpus=2, object_store_memory=1 << 30, include_dashboard=False, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    cases, errors = [], []
    if daft is not None:
        daft.set_runner_native()  # named: with Ray initialised Daft would pick its Ray runner
    try:
        for width in cfg.get("ingest_widths", WIDTHS):
            expected = table(width)
            server = Server(width)
            try:
                for name in DAFT_ROUTES if daft is not None else ():  # Daft's first query in a process plans slowly
                    daft_route(daft, pa, name, server.base_url, "float", BATCH, expected)
                for encoding_format in FORMATS:
                    runs: dict[str, list] = {}
                    for r in range(rounds):
                        for name in ray_routes:
                            log(f"ingest: D={width} {encoding_format} {name} (round {r + 1}/{rounds})")
                            runs.setdefault(name, []).append(ray_route(ray, pa, name, server.base_url, encoding_format,
                                                                       rows, expected))
                        for name in DAFT_ROUTES if daft is not None else ():
                            if name == "daft embed_text" and encoding_format == "base64":
                                continue  # Daft's embed_text asks for float bodies only
                            log(f"ingest: D={width} {encoding_format} {name} (round {r + 1}/{rounds})")
                            runs.setdefault(name, []).append(daft_route(daft, pa, name, server.base_url, encoding_format,
                                                                        rows, expected))
                    requests, handler_cpu_s, _ = server.stats()
                    for name, results in runs.items():
                        if not all(ok for *_, ok in results):
                            errors.append(f"ingest: D={width} {encoding_format} {name}: vectors differ from the table")
                            continue
                        cases.append({"width": width, "encoding_format": encoding_format, "route": name, "rows": rows,
                                      "rows_per_s": statistics.median(n / wall for wall, n, _, _ in results),
                                      "cpu_s_per_1000": statistics.median(1000 * cpu / rows for _, _, cpu, _ in results),
                                      "engine": "daft" if name in DAFT_ROUTES else "ray"})
                    cases.append({"width": width, "encoding_format": encoding_format, "route": "server",
                                  "server_us_per_request": 1e6 * handler_cpu_s / max(requests, 1), "requests": requests})
            finally:
                server.close()
    finally:
        ray.shutdown()
    return {"ingest": {"cases": cases, "rows": rows, "rounds": rounds, "errors": errors}}


# --------------------------------------------------------------------------- the report


def errors(report: dict) -> list:
    return report["ingest"]["errors"]


def summary(report: dict) -> str:
    return f"ingest: {sum(c['route'] != 'server' for c in report['ingest']['cases'])} routes measured"


def _find(cases, width, fmt, route):
    return next((c for c in cases if c["width"] == width and c["encoding_format"] == fmt and c["route"] == route), None)


def rows_of(report: dict) -> list:
    cases, out = report["ingest"]["cases"], []
    for c in cases:
        if c["route"] == "server":
            continue
        ref = _find(cases, c["width"], c["encoding_format"], "EmbeddingClient" if c["engine"] == "ray" else "tensorb64.daft")
        ratio = ref["rows_per_s"] / c["rows_per_s"] if ref and c["rows_per_s"] else float("nan")
        identity = _find(cases, c["width"], c["encoding_format"], "ray identity") if c["engine"] == "ray" else None
        over = f"{c['cpu_s_per_1000'] - identity['cpu_s_per_1000']:+.3f}" if identity and c is not identity else ""
        out.append([f"{c['width']}", c["encoding_format"], c["route"], f"{c['rows_per_s']:,.0f}",
                    f"{c['cpu_s_per_1000']:.3f}", over, f"{ratio:.2f}x"])
    return out


def target_lines(report: dict) -> list:
    cases, lines = report["ingest"]["cases"], []

    def ratio(fmt, ours, theirs, width=3072):
        a, b = _find(cases, width, fmt, ours), _find(cases, width, fmt, theirs)
        return a["rows_per_s"] / b["rows_per_s"] if a and b and b["rows_per_s"] else None

    for fmt, theirs, ours, goal in (("base64", "openai client", "EmbeddingClient", 1.5),
                                    ("float", "openai client", "EmbeddingClient", 10),
                                    ("float", "ray http stage", "EmbeddingClient", 10),
                                    ("float", "daft embed_text", "tensorb64.daft", 10)):
        got = ratio(fmt, ours, theirs)
        if got is not None:
            bound = _find(cases, 3072, fmt, "ray identity" if ours == "EmbeddingClient" else ours)
            floor = f"; Ray Data's identity map_batches: {bound['rows_per_s']:,.0f} rows/s" if ours == "EmbeddingClient" and bound else ""
            lines.append(f"target D=3072 {fmt}: {ours} / {theirs} = {got:.2f}x (goal >= {goal}x: "
                         f"{'met' if got >= goal else 'MISSED'}){floor}")
    for c in cases:
        if c["route"] == "server":
            lines.append(f"server D={c['width']} {c['encoding_format']}: {c['server_us_per_request']:.0f} µs CPU a request "
                         f"(the join of precomputed rows; {c['requests']} requests)")
    return lines


COLUMNS = ["D", "body", "route", "rows/s", "client CPU-s / 1,000 rows", "over identity", "ours ×"]


def text(report: dict) -> list:
    r = report["ingest"]
    return [f"\ningest: {r['rows']:,} texts a run, batches of {BATCH}, median of {r['rounds']} interleaved rounds "
            "(ours ×: EmbeddingClient's rows/s, or tensorb64.daft's for the Daft rows, over the route's)",
            text_table(COLUMNS, rows_of(report), right=[0, 3, 4, 5, 6], group=100), *target_lines(report)]


def markdown(report: dict) -> str:
    return ("\n### Ingestion (`python -m benchmarks.ingest_bench`)\n\n" + markdown_table(COLUMNS, rows_of(report), right=[0, 3, 4, 5, 6])
            + "\n" + "\n".join(f"* {line}" for line in target_lines(report)) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ingest_bench", description=__doc__.split("\n\n")[0])
    runner.common_arguments(parser)
    parser.add_argument("--rows", type=int, metavar="N", help="texts a run (default 20000; fewer to fit a slow machine)")
    parser.add_argument("--rounds", type=int, metavar="N", help="interleaved rounds of each route (default 3)")
    parser.add_argument("--widths", metavar="D,D", help="embedding sizes (default 1024,3072)")
    args = parser.parse_args(argv)
    missing = [name for name in REQUIRES if importlib.util.find_spec(name) is None]
    if missing:
        print(f"the ingestion bench needs {', '.join(missing)}: pip install \".[ingest]\" openai", file=sys.stderr)
        return 2
    args.command = "python -m benchmarks.ingest_bench"
    settings = {"ingest_rows": args.rows, "ingest_rounds": args.rounds,
                "ingest_widths": args.widths and tuple(int(w) for w in args.widths.split(","))}
    return runner.run([sys.modules[__name__]], args, argv, {k: v for k, v in settings.items() if v})


if __name__ == "__main__":
    sys.exit(main())
