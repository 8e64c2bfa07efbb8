"""llvm-mca's model of an x86-64 kernel's hottest loops on named cores (Intel's among them, where
no Intel machine is at hand): the loops of a function that `perf` samples most while a C++
benchmark runs natively, each handed to llvm-mca alone, with its cycles an iteration and the
micro-ops it puts on port 5.

    python -m benchmarks.x86_mca --program BUILD/number_parser_bench
        [--symbol 'avx512::(anonymous namespace)::parse_short_row<float>'] [--args "64 3072 150"]
        [--cpus icelake-server,sapphirerapids,skylake-avx512] [--loops 2] [--show]

BUILD: a native build of the C++ tests (`cmake -S cpp -B build/cpp -DTENSORB64_BUILD_TESTS=ON
-DCMAKE_BUILD_TYPE=Release`). A loop is a backward branch's range in the function's code; its
instructions are those of its basic blocks that were sampled (the hot path: a block sampled less
than a twentieth as densely as the loop's mean is taken for a cold one that the compiler laid out
inside the range, and left out), branches dropped.
A model, not a measurement: the loop in steady state alone, every load in L1, every branch
predicted. On Intel cores only port 0 and port 5 execute 512-bit vector micro-ops (port 1's vector
unit is fused into port 0's), and the compares into mask registers, every byte permute or shuffle
and every broadcast from a general register go to port 5, so its column is the one an AVX-512
kernel's bound shows in.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

# (LLVM 14 has no AMD core with AVX-512: znver4 came in LLVM 16.)
CPUS = ("icelake-server", "sapphirerapids", "skylake-avx512")


def samples(program: str, symbol: str, work: pathlib.Path, args: list[str]) -> collections.Counter:
    """Sampled places in `symbol`, as offsets from its start (a position-independent program runs
    at an address of the loader's choosing; perf's cpu-clock: no hardware counter needed)."""
    data = work / "perf.data"
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", str(data), "--", program, *args],
                   check=True, stdout=subprocess.DEVNULL)
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,symoff"], check=True, capture_output=True,
                            text=True).stdout
    counts: collections.Counter = collections.Counter()
    for line in script.splitlines():
        m = re.match(r"\s*[0-9a-f]+\s+(.*)\+0x([0-9a-f]+)$", line)
        if m and symbol in m.group(1):
            counts[int(m.group(2), 16)] += 1
    return counts


def disassembly(program: str, symbol: str) -> list[tuple[int, str]]:
    """(address, instruction) of every instruction of the functions whose name holds `symbol`."""
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", program], check=True, capture_output=True,
                          text=True).stdout
    code, inside = [], False
    for line in dump.splitlines():
        header = re.match(r"[0-9a-f]+ <(.*)>:$", line)
        if header:
            inside = symbol in header.group(1)
            continue
        m = re.match(r"\s+([0-9a-f]+):\s+(.*)", line)
        if inside and m:
            code.append((int(m.group(1), 16), m.group(2).strip()))
    return code


def branch_target(text: str) -> int | None:
    m = re.match(r"j\w+\s+([0-9a-f]+)\b", text)
    return int(m.group(1), 16) if m else None


def blocks(code: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """The code split into basic blocks (at branch targets and after branches)."""
    starts = {target for _, text in code if (target := branch_target(text)) is not None}
    result: list[list[tuple[int, str]]] = []
    for address, text in code:
        if not result or address in starts or re.match(r"(j\w+|ret)\b", result[-1][-1][1]):
            result.append([])
        result[-1].append((address, text))
    return result


def hot_loops(code, counts, how_many: int):
    """The hottest innermost loops: (first address, last address, samples, hot instructions)."""
    loops = []
    for address, text in code:
        target = branch_target(text)
        if target is not None and target <= address and target >= code[0][0]:
            loops.append((target, address, sum(n for a, n in counts.items() if target <= a <= address)))
    total = sum(counts.values()) or 1
    chosen = []
    for first, last, n in sorted(loops, key=lambda loop: loop[1] - loop[0]):  # innermost first
        if n < 0.1 * total or any(f <= first and last <= e or first <= f and e <= last for f, e, _, _ in chosen):
            continue
        inside = [b for b in blocks(code) if first <= b[0][0] <= last]
        density = [sum(counts.get(a, 0) for a, _ in b) / len(b) for b in inside]
        mean = n / sum(len(b) for b in inside)
        hot = [insn for b, d in zip(inside, density, strict=True) if d >= mean / 20 for insn in b]
        chosen.append((first, last, n, hot))
    return sorted(chosen, key=lambda loop: -loop[2])[:how_many]


def mca_text(instructions) -> str:
    """The instructions as llvm-mca reads them: branches dropped, objdump's comments and symbols
    removed."""
    lines = []
    for _, text in instructions:
        if re.match(r"(j\w+|ret|call)\b", text):
            continue
        lines.append(re.sub(r"\s*#.*$", "", re.sub(r"<[^>]*>", "", text)).strip())
    return "\n".join(lines) + "\n"


def model(text: str, cpu: str) -> tuple[float, dict]:
    """Cycles an iteration, and each port's micro-ops an iteration (its resource pressure)."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write(text)
    out = subprocess.run(["llvm-mca", "-mtriple=x86_64", f"-mcpu={cpu}", "-iterations=200", f.name], check=True,
                         capture_output=True, text=True).stdout
    os.unlink(f.name)
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / 200
    section = out.split("Resource pressure per iteration:")[1]
    names = re.findall(r"\[(\d+(?:\.\d+)?)\]\s+-\s+(\S+)", out.split("Resources:")[1].split("Resource pressure")[0])
    header, values = section.strip().splitlines()[:2]
    columns = re.findall(r"\[([\d.]+)\]", header)
    pressure = {}
    for column, value in zip(columns, values.split(), strict=False):
        name = dict(names).get(column, column)
        pressure[name] = float(value) if value != "-" else 0.0
    return cycles, pressure


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True, help="number_parser_bench (or another C++ benchmark), a native build")
    parser.add_argument("--symbol", default="avx512::(anonymous namespace)::parse_short_row<float>")
    parser.add_argument("--cpus", default=",".join(CPUS))
    parser.add_argument("--loops", type=int, default=2)
    parser.add_argument("--args", default="64 3072 150", help="the program's arguments")
    parser.add_argument("--show", action="store_true", help="print each loop's instructions")
    args = parser.parse_args(argv)
    for tool in ("perf", "llvm-mca", "objdump"):
        if shutil.which(tool) is None:
            raise SystemExit(f"x86_mca: {tool} not found")
    work = pathlib.Path(tempfile.mkdtemp(prefix="tensorb64-x86-mca-"))
    code = disassembly(args.program, args.symbol)
    counts = samples(args.program, args.symbol, work, args.args.split())
    if code:  # the offsets as addresses in the program's code
        counts = collections.Counter({code[0][0] + offset: n for offset, n in counts.items()})
    if not counts or not code:
        raise SystemExit(f"x86_mca: no samples or no code in {args.symbol}")
    version = subprocess.run(["llvm-mca", "--version"], capture_output=True, text=True).stdout
    llvm = re.search(r"LLVM version ([\d.]+)", version).group(1)
    cpus = args.cpus.split(",")
    print(f"llvm-mca {llvm}: {args.symbol}'s hottest loops in {args.program} {args.args} ({sum(counts.values())} "
          "samples); cycles an iteration and port 5's micro-ops (a model: every load in L1, every branch predicted)\n")
    print("| loop | samples | instructions | " + " | ".join(f"{cpu} cycles (port 5)" for cpu in cpus) + " |")
    print("|---|---:|---:|" + "---:|" * len(cpus))
    for first, last, n, hot in hot_loops(code, counts, args.loops):
        text = mca_text(hot)
        cells = []
        for cpu in cpus:
            cycles, pressure = model(text, cpu)
            port5 = next((v for k, v in pressure.items() if re.search(r"(Port5|P5)$", k)), None)
            cells.append(f"{cycles:.1f} ({port5:.1f})" if port5 is not None else f"{cycles:.1f}")
        print(f"| {first:#x}-{last:#x} | {n / sum(counts.values()):.0%} | {text.count(chr(10))} | " + " | ".join(cells) + " |")
        if args.show:
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
