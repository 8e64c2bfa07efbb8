"""The client side of the server benches (sglang_server_bench.py, vllm_server_bench.py, litellm_proxy_bench.py): concurrent
POSTs on localhost with aiohttp, bodies read but not parsed, and the latency percentiles."""

from __future__ import annotations

import asyncio
import time

HEADERS = {"content-type": "application/json"}


async def load(url, payload: bytes, requests: int, clients: int, headers: dict | None = None):
    """`requests` POSTs from `clients` concurrent connections, after one on a warm connection:
    (seconds, latencies, body bytes); ``headers`` are sent besides the content type."""
    import aiohttp

    headers = {**HEADERS, **(headers or {})}

    latencies = []
    size = 0
    remaining = requests

    async def client(session):
        nonlocal remaining, size
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            async with session.post(url, data=payload, headers=headers) as response:
                body = await response.read()
                if response.status != 200:
                    raise SystemExit(f"HTTP {response.status}: {body[:300]!r}")
            latencies.append(time.perf_counter() - start)
            size = len(body)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(url, data=payload, headers=headers) as response:
            await response.read()  # a warm connection and a warm path
        start = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        return time.perf_counter() - start, latencies, size


async def body_of(url, payload: bytes) -> bytes:
    """One POST's body."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.post(url, data=payload, headers=HEADERS) as response:
            return await response.read()


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
