"""The ingestion client's transports: one request of 64 texts through the default transport (the
standard library's http.client, a pool of keep-alive connections) against the same request
through a user's httpx.Client (and httpx2.Client, openai 3's fork, where installed), given as
``http_client``, on the same local server. From the repository root, with httpx installed:

    python -m benchmarks.ingest_transport_bench [--widths D,D] [--rounds N] [--json PATH] [--table PATH]

A section of `python -m tensorb64 bench`'s runner (tensorb64/_bench/runner.py), run by it here.

Each route is tensorb64's EmbeddingsEndpoint.embed(texts) (the request's JSON, the POST, the body
read into one float32 array): only the transport differs. The server is the ingestion bench's
(benchmarks/ingest_bench.py: embeddings_server.Precomputed in a process of its own on 127.0.0.1,
bodies joined from row texts written beforehand, OpenAI's layout, float rows in shortest
digits), so it costs the same for every route; each route's array is checked bit for bit against
the table before it is timed. Batches of 64 texts, D in 1024 and 3072, base64 and float bodies,
in glibc's two malloc states (tensorb64._bench.allocator: "fresh", every large body's pages new;
"raised", a long-running worker's, reusing them); --rounds interleaved rounds (default 201: a
request takes milliseconds, and a shared machine's load spreads them widely), medians.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time

from benchmarks.ingest_bench import Server, table
from tensorb64._bench import runner
from tensorb64._bench.allocator import allocator_states
from tensorb64._bench.report import fmt_us, markdown_table, spread_text, text_table
from tensorb64._bench.timing import measure
from tensorb64._ingest.http import EmbeddingsEndpoint

NAME = "ingest_transport"
REQUIRES = ("httpx",)
WIDTHS = (1024, 3072)
FORMATS = ("base64", "float")
BATCH = 64
MODEL = "bench-model"
ROUNDS = 201
POOL = "http.client pool"
CLIENTS = {"httpx.Client": "httpx", "httpx2.Client": "httpx2"}  # the route's name: the module whose Client it is


def _factories() -> dict:
    """{route: http_client}: None for the default pool, a client's class (a factory) for the others."""
    factories: dict = {POOL: None}
    for name, module in CLIENTS.items():
        if importlib.util.find_spec(module) is not None:
            factories[name] = importlib.import_module(module).Client
    return factories


def _cpu_medians(calls: dict, rounds: int) -> dict:
    """{route: the median CPU time of this process a call, in µs}: one call of each route a
    round, in an order that rotates each round. The server runs in a process of its own, so this
    is the client's own work (the JSON, the transport, the read), which other processes' load
    does not add to as it adds to the wall time."""
    names, spent = list(calls), {name: [] for name in calls}
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                started = time.process_time()
                calls[name]()
                spent[name].append(time.process_time() - started)
    finally:
        gc.enable()
    return {name: statistics.median(times) * 1e6 for name, times in spent.items()}


def run(mods, cfg, log) -> dict:
    texts = [str(i) for i in range(BATCH)]  # rows 0..63 of the server's table
    cases, errors = [], []
    for width in cfg.get("transport_widths", WIDTHS):
        expected = table(width)[:BATCH]
        server = Server(width)
        try:
            for encoding_format in FORMATS:
                endpoints = {name: EmbeddingsEndpoint(server.base_url, MODEL, encoding_format=encoding_format,
                                                      http_client=factory) for name, factory in _factories().items()}
                wrong = [name for name, e in endpoints.items() if not (e.embed(texts).view("u4") == expected.view("u4")).all()]
                errors += [f"ingest_transport: D={width} {encoding_format} {name}: vectors differ from the table" for name in wrong]
                calls = {name: (lambda e=e: e.embed(texts)) for name, e in endpoints.items() if name not in wrong}
                for state, _, apply in allocator_states():
                    apply()
                    log(f"ingest_transport: D={width} {encoding_format} ({state} malloc)")
                    rounds = 3 if cfg["mode"] == "smoke" else cfg.get("transport_rounds", ROUNDS)
                    stats = measure(calls, rounds=rounds, sample_s=cfg["sample_s"], budget_s=rounds * 0.05)
                    cpu = _cpu_medians(calls, rounds)
                    for name, m in stats.items():
                        cases.append({"width": width, "encoding_format": encoding_format, "allocator": state,
                                      "route": name, **m, "cpu_us": cpu[name],
                                      "vs_pool": m["us"] / stats[POOL]["us"] if POOL in stats else None,
                                      "cpu_vs_pool": cpu[name] / cpu[POOL] if POOL in cpu else None})
                for e in endpoints.values():
                    e.close()
        finally:
            server.close()
    versions = {module: importlib.import_module(module).__version__ for name, module in CLIENTS.items()
                if name in _factories()}
    return {"ingest_transport": {"cases": cases, "errors": errors, "versions": versions}}


# --------------------------------------------------------------------------- the report


def errors(report: dict) -> list:
    return report["ingest_transport"]["errors"]


def summary(report: dict) -> str:
    return f"ingest_transport: {len(report['ingest_transport']['cases'])} routes measured"


COLUMNS = ["D", "body", "malloc", "transport", "µs/request", "spread", "× pool", "client CPU µs", "CPU × pool"]


def _times(ratio) -> str:
    return "" if ratio is None else f"{ratio:.2f}x"


def rows_of(report: dict) -> list:
    return [[str(c["width"]), c["encoding_format"], c["allocator"], c["route"], fmt_us(c["us"]), spread_text(c),
             _times(c["vs_pool"]), fmt_us(c["cpu_us"]), _times(c["cpu_vs_pool"])]
            for c in report["ingest_transport"]["cases"]]


def _versions(report: dict) -> str:
    return ", ".join(f"{module} {version}" for module, version in report["ingest_transport"]["versions"].items())


def text(report: dict) -> list:
    return [f"\ningest_transport: one request of {BATCH} texts through EmbeddingsEndpoint.embed, by transport "
            "(× pool: the route's time over the http.client pool's, the default; client CPU: this process's CPU "
            f"time a request, the server's left out; {_versions(report)})",
            text_table(COLUMNS, rows_of(report), right=[0, 4, 5, 6, 7, 8], group=3)]


def markdown(report: dict) -> str:
    return ("\n### The ingestion client's transports (`python -m benchmarks.ingest_transport_bench`)\n\n"
            f"{_versions(report)}; client CPU: the client process's CPU time a request (the server runs in its own).\n\n"
            + markdown_table(COLUMNS, rows_of(report), right=[0, 4, 5, 6, 7, 8]) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ingest_transport_bench",
                                     description=__doc__.split("\n\n")[0])
    runner.common_arguments(parser)
    parser.add_argument("--widths", metavar="D,D", help="embedding sizes (default 1024,3072)")
    parser.add_argument("--rounds", type=int, metavar="N", help=f"interleaved rounds of each route (default {ROUNDS})")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("httpx") is None:
        print("the transport bench needs httpx: pip install httpx", file=sys.stderr)
        return 2
    args.command = "python -m benchmarks.ingest_transport_bench"
    settings = {"transport_widths": args.widths and tuple(int(w) for w in args.widths.split(",")),
                "transport_rounds": args.rounds}
    return runner.run([sys.modules[__name__]], args, argv, {k: v for k, v in settings.items() if v})


if __name__ == "__main__":
    sys.exit(main())
