"""A real ``sglang.launch_server`` of a tiny embedding model on the CPU: the one launcher of the
SGLang server tests (tests/test_sglang_server.py) and the server benchmark
(benchmarks/sglang_server_bench.py), run in the venv ci/sglang_check.sh builds.

* ``make_model(folder, hidden_size)``: a random Qwen3 embedding model (one layer, a word-level
  tokenizer of its own), made from a config with transformers and saved there: nothing is
  downloaded, ever. Its hidden size is the length of the rows the server answers with.
* ``Server``: ``python -m sglang.launch_server`` of such a model on a free localhost port, started
  as SGLang's CPU engine must be started (SERVE_ARGUMENTS, SERVE_ENVIRONMENT), in a process group
  of its own.
* ``write_stand_ins(folder)``: the import-only stand-ins for ``torchvision`` and ``sgl_kernel``
  (PyPI has both only as CUDA builds). SGLang imports them at module level in code a CPU embedding
  server never runs (``sglang/srt/multimodal/internvl_utils.py``,
  ``sglang/kernels/ops/kvcache/cache_move.py``, models it does not load); every name in them is a
  placeholder that raises when it is used, so they satisfy imports and nothing else.

      python -m tests.support.sglang_server stand-ins SITE_PACKAGES
      python -m tests.support.sglang_server model FOLDER HIDDEN_SIZE
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.support.server_process import ServerProcess

# On the CPU engine: the torch attention backend, a KV cache of a few thousand tokens (the
# default share of memory is most of a shared machine's), no warm-up request, float32 rows (what
# an fp32 model gives; bf16 rows would be short decimals, no test of the float text). And rows that
# are a function of the request alone, so that two servers answer one request with the same bytes:
# no prefix cache (else a row depends on the requests before it), and a request's texts tokenized
# together and sent to the scheduler as one batch (else they are sent one by one, the scheduler
# splits them into prefill batches as they arrive, and the model's float32 matmuls round a row
# differently in batches of other sizes: measured, the same 6-text request gave other bits 4 times
# in 5).
SERVE_ARGUMENTS = [
    "--is-embedding", "--device", "cpu", "--attention-backend", "torch_native", "--dtype", "float32",
    "--mem-fraction-static", "0.05", "--max-total-tokens", "4096", "--skip-server-warmup",
    "--disable-radix-cache", "--enable-tokenizer-batch-encode", "--served-model-name", "tiny-embedding",
]  # fmt: skip
# SGLANG_UVICORN_WORKER_HEALTHCHECK_TIMEOUT: the seconds an extra HTTP worker
# (--tokenizer-worker-num > 1) has to answer uvicorn after it is spawned (10 by default; importing
# SGLang takes longer than that on a loaded 2-core machine, and uvicorn then restarts it, forever).
SERVE_ENVIRONMENT = {"SGLANG_USE_CPU_ENGINE": "1", "SGLANG_UVICORN_WORKER_HEALTHCHECK_TIMEOUT": "600"}

WORDS = ("embeddings on the wire measured end to end through an api server of a tiny random model "
         "hello world one two three four five six seven eight nine ten").split()


def make_model(folder, hidden_size: int, seed: int = 0) -> str:
    """A random Qwen3 model of hidden size `hidden_size` (one layer, two heads of 64, a small MLP)
    with a word-level tokenizer of WORDS, saved in `folder` (made if missing); returns its path."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    folder = os.fspath(folder)
    vocabulary = ["<unk>", "<eos>", *WORDS]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocabulary)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>",
                            pad_token="<eos>").save_pretrained(folder)
    config = Qwen3Config(
        vocab_size=128, hidden_size=hidden_size, intermediate_size=256, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=512,
        bos_token_id=1, eos_token_id=1, pad_token_id=1, tie_word_embeddings=True, dtype="float32",
    )  # fmt: skip
    torch.manual_seed(seed)
    Qwen3ForCausalLM(config).save_pretrained(folder)
    return folder


class Server(ServerProcess):
    """``python -m sglang.launch_server`` of the model at `model` with SERVE_ARGUMENTS and
    `arguments` on a free port, in a process group of its own; its output goes to `tmp`/server.log
    and its temporary files to `tmp`, which the caller removes after ``stop()``."""

    what = "sglang"

    def __init__(self, label: str, tmp, model: str, arguments=(), env=None):
        super().__init__(label, tmp)
        self.url = f"http://127.0.0.1:{self.port}/v1/embeddings"
        command = [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--host", "127.0.0.1",
                   "--port", str(self.port), *SERVE_ARGUMENTS, *arguments]
        self.start(command, env={**os.environ, **SERVE_ENVIRONMENT, "TMPDIR": str(tmp), **(env or {})})

    def processes(self) -> dict[int, str]:
        """The server's processes (this one's group: the launcher, SGLang's scheduler and
        detokenizer, the HTTP workers), pid: command line."""
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.getpgid(int(entry)) != self.process.pid:
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    found[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:  # (gone meanwhile)
                continue
        return found

    def stop(self) -> None:
        """SIGINT to the launcher (SGLang then ends its own processes), then SIGKILL to the group
        if anything of it is left after a minute."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        if self.processes():
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=30)
        self.log.close()


# ---- the import-only stand-ins -----------------------------------------------------------------

STAND_IN_NAMES = ("torchvision", "sgl_kernel")

STAND_IN_SOURCE = '''"""An import-only stand-in for NAME, written by tensorb64's tests/support/sglang_server.py.

PyPI has NAME only as CUDA builds; SGLang imports it at module level in code a CPU embedding
server never runs. Every module NAME.* imports, and every name in one is a placeholder that raises
when it is used (called, subclassed): nothing of this package ever runs.
"""

import importlib.abc
import importlib.machinery
import sys

# transformers reads a package's version from it when it has no metadata: version 0, labelled.
__version__ = "0+import.only"


class _ImportOnly:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return _ImportOnly(self._name + "." + attribute)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(self._name + " was used, but NAME is an import-only stand-in here")

    def __mro_entries__(self, bases):
        raise RuntimeError(self._name + " was subclassed, but NAME is an import-only stand-in here")


def _module_getattr(module_name):
    def __getattr__(attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return _ImportOnly(module_name + "." + attribute)

    return __getattr__


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Every NAME.* module, as a stand-in package."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("NAME."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []
        module.__getattr__ = _module_getattr(module.__name__)


__getattr__ = _module_getattr(__name__)
sys.meta_path.append(_Submodules())
'''


def write_stand_ins(site_packages) -> None:
    """Writes the stand-in packages (STAND_IN_NAMES) into `site_packages`."""
    for name in STAND_IN_NAMES:
        package = os.path.join(os.fspath(site_packages), name)
        os.makedirs(package, exist_ok=True)
        with open(os.path.join(package, "__init__.py"), "w") as f:
            f.write(STAND_IN_SOURCE.replace("NAME", name))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "stand-ins":
        write_stand_ins(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "model":
        make_model(sys.argv[2], int(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
