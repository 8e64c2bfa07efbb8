"""SGLang's server end to end, tensorb64's plugin on and off, with an A/A pair for the noise floor.

    python -m benchmarks.sglang_server_bench [--rounds 5] [--clients 8] [--seconds 1.5] [--out FILE]

Run from the repository root with the Python of a venv holding SGLang and the wheel under test
(ci/sglang_check.sh --prepare builds one: $TENSORB64_CI_CACHE/sglang-venv). For each hidden size D
in {384, 3072} it makes a tiny random Qwen3 embedding model of that size (one layer:
tests/support/sglang_server.py, nothing downloaded) and starts three `sglang.launch_server`s of it
at once (tests/support/sglang_server.py's launcher): the plugin on, off (TENSORB64_SGLANG=0), and
off again (the A/A pair: what two identical servers differ by here). Each case (B texts a request,
B in {1, 64}; float or base64) is loaded from N concurrent clients on localhost (raw HTTP, bodies
read, not parsed) in rounds, the servers' order rotating round by round; the figures are the
median requests/s over rounds and p50/p99 latency over all requests.

The tiny model keeps the engine's share small, so that what differs is the API process's own
cost; the share the body has of a whole request is measured, not assumed: the CPU time each
server's processes spent (the API process, which parses the request, tokenizes and writes the
body; the scheduler, which runs the model; the detokenizer) per request, from /proc, on against
off. The clients run on the same machine, and take their share of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import tempfile

from benchmarks.http_load import body_of, load, percentile
from tests.support.sglang_server import WORDS, Server, make_model

DIMS = (384, 3072)
BATCHES = (1, 64)
FORMATS = ("float", "base64")
# Besides tests/support/sglang_server.py's own: no log line per request or batch (they would be measured too).
SERVE_ARGUMENTS = ["--log-level", "warning"]
LABELS = ("on", "off", "off again")


def texts(batch: int):
    return [" ".join(WORDS[i % len(WORDS) : i % len(WORDS) + 3]) for i in range(batch)]


def cpu_seconds(server) -> dict[str, float]:
    """CPU seconds (user + system) so far of each of the server's processes, by role."""
    tick = os.sysconf("SC_CLK_TCK")
    roles = {}
    for pid, command in server.processes().items():
        role = ("scheduler" if "scheduler" in command else "detokenizer" if "detokenizer" in command
                else "api" if "launch_server" in command else "other")
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        roles[role] = roles.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return roles


def measure(servers, payload, requests, rounds, clients):
    """Rounds of the servers in turn (the order rotating): per server, the median requests/s over
    rounds, p50/p99 latency over all requests, and CPU ms a request by process role."""
    rates = {s.label: [] for s in servers}
    latencies = {s.label: [] for s in servers}
    cpu = {s.label: {} for s in servers}
    sizes = {}
    for r in range(rounds):
        for server in servers[r % len(servers):] + servers[: r % len(servers)]:
            before = cpu_seconds(server)
            seconds, lat, size = asyncio.run(load(server.url, payload, requests, clients))
            after = cpu_seconds(server)
            for role in after:
                cpu[server.label].setdefault(role, []).append((after[role] - before.get(role, 0.0)) / (requests + 1))
            rates[server.label].append(requests / seconds)
            latencies[server.label].extend(lat)
            sizes[server.label] = size
    return {
        label: {
            "requests_per_s": statistics.median(rates[label]),
            "p50_ms": 1e3 * percentile(latencies[label], 50),
            "p99_ms": 1e3 * percentile(latencies[label], 99),
            "cpu_ms": {role: 1e3 * statistics.median(v) for role, v in cpu[label].items()},
            "body_bytes": sizes[label],
        }
        for label in rates
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per case, each server once a round (default 5)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent connections (default 8)")
    parser.add_argument("--seconds", type=float, default=1.5, help="about how long one server's share of a round runs (default 1.5)")
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS), help="the models' hidden sizes (default 384 3072)")
    parser.add_argument("--out", help="write the results as JSON here too")
    args = parser.parse_args()

    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load average at start: "
          f"{os.getloadavg()}; clients: {args.clients}, rounds: {args.rounds}", flush=True)
    root = tempfile.mkdtemp(prefix="sglang-bench-")
    results = []
    try:
        for dim in args.dims:
            model = make_model(os.path.join(root, f"model-{dim}"), dim)
            servers = []
            try:
                for label in LABELS:
                    folder = os.path.join(root, f"{dim}-{label}")
                    os.mkdir(folder)
                    env = {} if label == "on" else {"TENSORB64_SGLANG": "0"}
                    servers.append(Server(label, folder, model, SERVE_ARGUMENTS, env))
                for server in servers:
                    server.wait_healthy(timeout=900)
                print(f"D={dim}: servers up, load average {os.getloadavg()}", flush=True)
                for batch in BATCHES:
                    for fmt in FORMATS:
                        payload = json.dumps({"model": "tiny-embedding", "input": texts(batch), "encoding_format": fmt}).encode()
                        bodies = {s.label: asyncio.run(body_of(s.url, payload)) for s in servers}
                        assert bodies["on"] == bodies["off"] == bodies["off again"], "the plugin's body differs from SGLang's"
                        # A pilot sizes the rounds to about args.seconds a server.
                        pilot, _, _ = asyncio.run(load(servers[1].url, payload, 2 * args.clients, args.clients))
                        requests = max(args.clients, min(4000, int(args.seconds * 2 * args.clients / pilot)))
                        figures = measure(servers, payload, requests, args.rounds, args.clients)
                        on, off, again = (figures[label] for label in LABELS)
                        row = {"batch": batch, "dim": dim, "format": fmt, "requests": requests, "figures": figures,
                               "ratio": on["requests_per_s"] / off["requests_per_s"],
                               "aa": again["requests_per_s"] / off["requests_per_s"], "body_bytes": len(bodies["off"])}
                        results.append(row)
                        cpu_on, cpu_off = on["cpu_ms"], off["cpu_ms"]
                        print(f"{batch:>3} {dim:>5} {fmt:>7} | req/s on {on['requests_per_s']:7.1f} off {off['requests_per_s']:7.1f} "
                              f"off again {again['requests_per_s']:7.1f} | on/off {row['ratio']:5.2f} A/A {row['aa']:4.2f} | "
                              f"p50 {on['p50_ms']:7.2f}/{off['p50_ms']:7.2f} p99 {on['p99_ms']:7.2f}/{off['p99_ms']:7.2f} ms | "
                              f"CPU ms/request api {cpu_on.get('api', 0):.2f}/{cpu_off.get('api', 0):.2f} "
                              f"scheduler {cpu_on.get('scheduler', 0):.2f}/{cpu_off.get('scheduler', 0):.2f} "
                              f"detokenizer {cpu_on.get('detokenizer', 0):.2f}/{cpu_off.get('detokenizer', 0):.2f}", flush=True)
            finally:
                for server in servers:
                    server.stop()
        print(f"load average at end: {os.getloadavg()}", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"clients": args.clients, "rounds": args.rounds, "results": results}, f, indent=1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
