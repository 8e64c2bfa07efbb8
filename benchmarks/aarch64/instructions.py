"""AArch64 instructions executed per call, counted under qemu-aarch64: tensorb64's aarch64 wheel at
its neon and scalar levels beside the aarch64 wheels of pybase64, orjson and numpy doing the same
work, in Debian's arm64 CPython. Nothing here runs AArch64 natively: instruction counts are a
proxy for time (they weigh a division like an add, and see no cache, memory or pipeline), said
beside every figure they give.

    python -m benchmarks.aarch64.instructions --wheel dist/tensorb64-...-manylinux2014_aarch64.whl
        [--rows 16] [--dim 1024] [--repeat 5] [--json OUT] [--markdown OUT]

Needs qemu-aarch64 (qemu-user 7.2, whose TCG plugins this uses), a C compiler for the host (the
plugin, insn_count.c, is built from the repository), pip, and Debian's arm64 CPython unpacked by
ci/arm64_sysroot.sh (ARM64_SYSROOT, or --sysroot; made there when missing). The aarch64 wheel:
`ci/build_old_glibc_wheels.sh OUTDIR aarch64` (the wheel users get), or any built for cp311.

Each case (guest.py: the work, and who does it) runs once, checked, then --repeat times between the
plugin's markers; the figure is the count over the calls, less the loop's own (an empty call's),
per call and per value.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
# The competitors' aarch64 wheels, as the issue that asked for these figures measured them.
COMPETITORS = ("numpy==2.4.6", "orjson==3.13.0", "pybase64==1.5.1")
PYTHON_VERSION = "3.11"  # Debian 12's arm64 CPython (ci/arm64_sysroot.sh)
PROXY_NOTE = ("instructions executed under qemu-aarch64 (a TCG plugin's count): a proxy for time on an AArch64 core, "
              "which weighs every instruction alike and sees no cache, memory or pipeline")


def host_cpu() -> str:
    """The host's CPU model, as /proc/cpuinfo names it (what the figures' machine was)."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def build_plugin(work: pathlib.Path) -> pathlib.Path:
    """insn_count.so, from insn_count.c, with the host's C compiler."""
    plugin = work / "insn_count.so"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(plugin), str(HERE / "insn_count.c")], check=True)
    return plugin


def sysroot(path: str | None, work: pathlib.Path) -> pathlib.Path:
    root = pathlib.Path(path or os.environ.get("ARM64_SYSROOT") or work / "arm64-sysroot")
    if not (root / "usr/bin" / f"python{PYTHON_VERSION}").exists():
        subprocess.run([str(REPO / "ci/arm64_sysroot.sh"), str(root), PYTHON_VERSION], check=True)
    return root


def site(wheel: pathlib.Path, work: pathlib.Path) -> pathlib.Path:
    """The wheel and the competitors' aarch64 wheels, installed into a folder for the target."""
    folder = work / f"site-{wheel.stem}"
    if not folder.exists():
        abi = "cp" + PYTHON_VERSION.replace(".", "")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", str(folder),
                        "--only-binary=:all:", "--implementation", "cp", "--python-version", PYTHON_VERSION, "--abi", abi,
                        "--platform", "manylinux2014_aarch64", "--platform", "manylinux_2_28_aarch64",
                        str(wheel), *COMPETITORS], check=True)
    return folder


def run_guest(plugin, root, packages, rows: int, dim: int, repeat: int, work: pathlib.Path) -> list[dict]:
    """guest.py under qemu with the plugin: [{work, who, level, instructions}] per region."""
    log = work / "insn_count.log"
    env = dict(os.environ, QEMU_LD_PREFIX=str(root), PYTHONHOME=str(root / "usr"), PYTHONPATH=str(packages),
               PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
    env.pop("TENSORB64_SIMD", None)
    # qemu writes a plugin's output only with -d plugin: to the file -D names.
    command = ["qemu-aarch64", "-d", "plugin", "-D", str(log), "-plugin", str(plugin),
               str(root / "usr/bin" / f"python{PYTHON_VERSION}"), str(HERE / "guest.py"), str(rows), str(dim), str(repeat)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    order = json.loads(done.stdout.strip().splitlines()[-1])
    counts = [int(m) for m in re.findall(r"insn_count: region \d+: (\d+) instructions", log.read_text())]
    if len(counts) != len(order):
        raise SystemExit(f"instructions: {len(order)} regions run, {len(counts)} counted ({log})")
    return [{"work": w, "who": who, "level": level, "instructions": n} for (w, who, level), n in zip(order, counts, strict=True)]


def per_call(regions: list[dict], repeat: int, values: int) -> list[dict]:
    """Each region's instructions a call, less the loop's own; and a value."""
    loop = regions[0]["instructions"]
    out = []
    for r in regions[1:]:
        calls = (r["instructions"] - loop) / repeat
        out.append(dict(r, per_call=round(calls), per_value=calls / values))
    return out


def table(results: list[dict], meta: dict) -> str:
    """Markdown: per work, tensorb64 at neon and at scalar beside the competitor."""
    works = list(dict.fromkeys(r["work"] for r in results))
    lines = [f"AArch64 under qemu-aarch64, {meta['rows']} rows x {meta['dim']} float32 (instructions a call, and a value; "
             "fewer is better). " + PROXY_NOTE + ".", "",
             "| work | tensorb64 neon | tensorb64 scalar | competitor | competitor / neon | scalar / neon |",
             "|---|---:|---:|---|---:|---:|"]
    for work in works:
        rows = {(r["who"], r["level"]): r for r in results if r["work"] == work}
        neon, scalar = rows.get(("tensorb64", "neon")), rows.get(("tensorb64", "scalar"))
        other = next(r for (who, _), r in rows.items() if who != "tensorb64")

        def cell(r):
            return f"{r['per_call'] / 1e3:,.0f} k ({r['per_value']:.1f})" if r else "-"

        lines.append(f"| {work} | {cell(neon)} | {cell(scalar)} | {other['who']} {cell(other)} | "
                     f"{other['per_call'] / neon['per_call']:.2f}x | {scalar['per_call'] / neon['per_call']:.2f}x |")
    lines += ["", f"tensorb64 {meta['wheel']}; {', '.join(meta['competitors'])}; CPython {meta['python']} (Debian's arm64 build); "
              f"{meta['qemu']}; host {meta['host']}; {meta['repeat']} calls a case after one checked call, less the loop's own."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True, help="tensorb64's aarch64 wheel for CPython 3.11")
    parser.add_argument("--sysroot", help="Debian's arm64 CPython 3.11 (ci/arm64_sysroot.sh; default: ARM64_SYSROOT)")
    parser.add_argument("--work", help="where the plugin, the target's packages and the log go (default: a temporary folder)")
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="write the counts here")
    parser.add_argument("--markdown", help="write the table here")
    args = parser.parse_args(argv)
    for tool in ("qemu-aarch64",):
        if shutil.which(tool) is None:
            raise SystemExit(f"instructions: {tool} not found (apt-get install qemu-user)")
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="tensorb64-aarch64-"))
    work.mkdir(parents=True, exist_ok=True)
    wheel = pathlib.Path(args.wheel).resolve()
    plugin = build_plugin(work)
    root = sysroot(args.sysroot, work)
    packages = site(wheel, work)
    regions = run_guest(plugin, root, packages, args.rows, args.dim, args.repeat, work)
    results = per_call(regions, args.repeat, args.rows * args.dim)
    qemu = subprocess.run(["qemu-aarch64", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    meta = {"rows": args.rows, "dim": args.dim, "repeat": args.repeat, "wheel": wheel.name, "competitors": list(COMPETITORS),
            "python": PYTHON_VERSION, "qemu": qemu, "host": host_cpu(), "note": PROXY_NOTE}
    text = table(results, meta)
    print(text, end="")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
