"""A server under test in a process of its own, as the vLLM, SGLang and Infinity launchers here
start theirs: on a free port of localhost, in a process group of its own (so that stopping it ends
what it started), its output in ``server.log`` in a folder of the caller's, ready once ``/health``
answers 200."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``what`` names the server in messages; ``start`` runs its command once the subclass has
    built it around ``self.port``."""

    what = "server"

    def __init__(self, label: str, tmp) -> None:
        self.port = free_port()
        self.label, self.log_path = label, os.path.join(tmp, "server.log")

    def start(self, command, env, cwd=None) -> None:
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def wait_healthy(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.what} ({self.label}) exited with {self.process.returncode}:\n"
                                   f"{self.output()[-4000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"{self.what} ({self.label}) not healthy after {timeout} s:\n{self.output()[-4000:]}")

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        """SIGINT to the group, then SIGKILL to it if it has not ended after a minute."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self.log.close()
