"""llvm-mca's cycles for the NEON kernels' inner loops (reading and writing), on named AArch64 cores: the blocks
that executed the most instructions in each kernel's region at the neon level, found by running
cpp/tests/kernel_instructions (built for aarch64) under qemu-aarch64 with the insn_count plugin's
blocks=12, each disassembled and handed to llvm-mca alone, its cycles a pass weighted by the
passes the plugin counted.

    python -m benchmarks.aarch64.mca --program BUILD/kernel_instructions [--cpus neoverse-v1,...]

BUILD: a cross build of the C++ tests (cpp/tests/run_cross.sh aarch64's configuration, or CMake
with CMAKE_CXX_COMPILER=aarch64-linux-gnu-g++). Cycles a value = the sum over the hot blocks of
llvm-mca's cycles a pass (100 passes in a row, over 100) times the passes, over the values; the
share of the region's instructions those blocks hold is printed beside it. A model, not a
measurement: each block in steady state alone (no overlap between blocks), every load in L1,
every branch predicted. LLVM 14 (Debian 12's llvm-mca) has no
scheduling model of its own for neoverse-n1, -n2 or -v1: it gives them Cortex-A57's, which the
table says; apple-m1 has its own (Cyclone's).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from benchmarks.aarch64.instructions import build_plugin

CPUS = ("neoverse-v1", "neoverse-n2", "apple-m1")


def hot_blocks(program: str, plugin: pathlib.Path, rows: int, dim: int) -> dict:
    """{(kernel, level): (region instructions, [(vaddr, instructions, passes)])} from one run."""
    # (One stream: the program's labels and the plugin's lines in the order they were written.)
    done = subprocess.run(["qemu-aarch64", "-d", "plugin", "-plugin", f"{plugin},blocks=12", program, str(rows), str(dim), "1"],
                          check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    regions, label = {}, None
    for line in done.stdout.splitlines():
        m = re.match(r"region: (.*) \| (.*) \| (\d+) values", line)
        if m:
            label = (m.group(1), m.group(2))
            regions[label] = [0, []]
            continue
        m = re.match(r"insn_count: region \d+: (\d+) instructions", line)
        if m and label:
            regions[label][0] = int(m.group(1))
        m = re.match(r"insn_count: block 0x([0-9a-f]+) (\d+) instructions, (\d+) runs", line)
        if m and label:
            regions[label][1].append((int(m.group(1), 16), int(m.group(2)), int(m.group(3))))
    return regions


def block_text(program: str, address: int, count: int) -> str:
    """A block's instructions as assembly llvm-mca reads (branches and page addresses, which name
    places llvm-mca cannot resolve, left out)."""
    dump = subprocess.run(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", program,
                           f"--start-address={address}", f"--stop-address={address + 4 * count}"],
                          check=True, capture_output=True, text=True).stdout
    lines = []
    for line in dump.splitlines():
        m = re.match(r"\s+[0-9a-f]+:\s+(.*)", line)
        if not m:
            continue
        text = re.sub(r"\s*//.*$", "", re.sub(r"<[^>]*>", "", m.group(1))).strip()
        if not re.match(r"(b(\.\w+)?|cbn?z|tbn?z|bl|ret|adrp)\s", text + " "):
            lines.append(text)
    return "\n".join(lines) + "\n"


def cycles(text: str, cpu: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write(text)
    out = subprocess.run(["llvm-mca", "-mtriple=aarch64", f"-mcpu={cpu}", "-iterations=100", f.name],
                         check=True, capture_output=True, text=True).stdout
    return int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / 100


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True, help="kernel_instructions built for aarch64")
    parser.add_argument("--cpus", default=",".join(CPUS))
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--dim", type=int, default=1024)
    args = parser.parse_args(argv)
    for tool in ("qemu-aarch64", "llvm-mca", "aarch64-linux-gnu-objdump"):
        if shutil.which(tool) is None:
            raise SystemExit(f"mca: {tool} not found")
    work = pathlib.Path(tempfile.mkdtemp(prefix="tensorb64-mca-"))
    plugin = build_plugin(work)
    cpus = args.cpus.split(",")
    version = subprocess.run(["llvm-mca", "--version"], capture_output=True, text=True).stdout
    llvm = re.search(r"LLVM version ([\d.]+)", version).group(1)
    print(f"llvm-mca {llvm}: cycles a value of each NEON kernel's inner loop ({args.rows} x {args.dim} float32, "
          f"N(0, 0.05)); a model (every load in L1, every branch predicted), not a measurement.\n")
    print("| kernel | " + " | ".join(cpus) + " | instructions a value (the hot blocks' share) |")
    print("|---|" + "---:|" * (len(cpus) + 1))
    values = args.rows * args.dim
    for (kernel, level), (total, blocks) in hot_blocks(args.program, plugin, args.rows, args.dim).items():
        if level != "neon" or not blocks:
            continue
        texts = [(block_text(args.program, address, count), passes) for address, count, passes in blocks]
        counts = [sum(cycles(text, cpu) * passes for text, passes in texts if text.strip()) / values for cpu in cpus]
        share = sum(count * passes for _, count, passes in blocks) / total
        print(f"| {kernel} | " + " | ".join(f"{c:.2f}" for c in counts) + f" | {total / values:.1f} ({share:.0%}) |")
    if re.match(r"1[0-5]\.", llvm):
        print("\n(LLVM before 16 has no Neoverse N2 or V1 scheduling model: its figures for them are Cortex-A57's.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
