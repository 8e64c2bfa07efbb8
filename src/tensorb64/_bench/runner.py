"""`python -m tensorb64 bench`: the one runner every section plugs into.

A section is a module of this package with
  NAME, REQUIRES                   its name for --section, the modules it needs
  run(mods, cfg, log) -> dict      measures; the dict's keys go into the JSON report
  text(report), markdown(report)   its lines for the terminal, its part of --table
  errors(report), summary(report)  the output checks that failed, a count for the last line
  unavailable(mods) (optional)     why it cannot run on this machine, or None
and is imported only when selected, so a run loads only what its sections need; plotting
(plot.py) is imported only for --plot.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

from .report import header_lines, load_average, load_text, machine_info, require

# The sections: --section NAME -> (module, what it measures). "all" runs ALL, in this order; cuda
# (a GPU) runs only when named. The usage lines (`python -m tensorb64`) and the package's
# docstring read this table.
SECTIONS = {
    "base64": ("base64_rows", "embedding rows to base64 strings, and one request's small calls"),
    "body": ("body", "the whole /v1/embeddings body, and float rows as JSON text"),
    "client": ("client", "a response body back to one array, as clients read it today, and the patched clients"),
    "cuda": ("cuda", "CUDA tensors (staged copies, GPU narrowing) against the same paths (needs a GPU; also --device cuda)"),
}
ALL = ("base64", "body", "client")
ALIASES = {"rows": "base64"}  # the base64 section's name before the client and cuda sections joined


def section_lines() -> list:
    """One line per section, for a usage text."""
    return [f"{name:<8}{what}" for name, (_, what) in SECTIONS.items()]

CONFIGS = {
    "smoke": {"rounds": 3, "sample_s": 0.0005, "budget_s": 0.01, "small_call_rounds": 3},
    "quick": {"rounds": 21, "sample_s": 0.003, "budget_s": 1.0, "small_call_rounds": 21},
    "full": {"rounds": 31, "sample_s": 0.005, "budget_s": 2.5, "small_call_rounds": 41},
}


def common_arguments(parser) -> None:
    """The options of every run of sections (this runner's, and a repository bench's that plugs a
    section of its own into ``run``)."""
    parser.add_argument("--full", action="store_true", help="the full sweep: B in 1,15,64,256,1024 x D in 384,1024,3072,4096, plus threads=2")
    parser.add_argument(
        "--torch-threads", type=int, default=1, metavar="N",
        help="torch intra-op threads for the competing paths' conversions (default 1, like tensorb64's threads=1; "
        "0 keeps torch's own default). On a shared machine torch's thread pool turns other load into large outliers.",
    )
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # tiny run for the CLI test
    parser.add_argument("--json", metavar="PATH", help="write every measurement and the machine as JSON")
    parser.add_argument("--plot", metavar="PATH", help="draw throughput against batch size as a PNG (needs matplotlib); "
                        "the body section's bars go to PATH itself with --section body, else beside it as *_body.png")
    parser.add_argument("--table", metavar="PATH", help="write the table as Markdown")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tensorb64 bench", description="tensorb64 against the paths servers and clients use today (ratios, interleaved, medians)")
    common_arguments(parser)
    parser.add_argument("--section", choices=("all", *SECTIONS, *ALIASES), default="all",
                        help="; ".join(f"{name}: {what}" for name, (_, what) in SECTIONS.items()) + f"; all: {', '.join(ALL)}")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: the same as --section cuda (CUDA tensors against the pybase64 and numpy paths and the "
                        "plain copy)")
    return parser.parse_args(argv)


def selected(args) -> list:
    if args.device == "cuda":
        return ["cuda"]
    name = ALIASES.get(args.section, args.section)
    return list(ALL) if name == "all" else [name]


def load_modules(sections, want_plot: bool) -> dict:
    """The modules the sections need, each imported once (a SystemExit naming the extra if absent);
    pybase64 also where it is optional, for the header."""
    names = list(dict.fromkeys(m for s in sections for m in s.REQUIRES))
    mods = {name: require(name) for name in names}
    if "pybase64" not in mods:
        try:
            import pybase64
        except ImportError:
            pybase64 = None
        mods["pybase64"] = pybase64
    if want_plot:
        require("matplotlib")
    return mods


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None) -> int:
    args = parse_args(argv)
    sections = [importlib.import_module(f".{SECTIONS[name][0]}", __package__) for name in selected(args)]
    return run(sections, args, argv)


def run(sections: list, args, argv=None, cfg_extra: dict | None = None) -> int:
    """Runs the section modules (the protocol above) with the options ``common_arguments`` parsed,
    and prints and writes their report; ``cfg_extra``: settings of a section's own."""
    mods = load_modules(sections, bool(args.plot))
    for section in sections:
        why = getattr(section, "unavailable", lambda mods: None)(mods)
        if why:
            print(why, file=sys.stderr)
            return 2
    torch = mods.get("torch")
    if torch is not None and args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    mode = "smoke" if args.smoke else "full" if args.full else "quick"
    cfg = {"mode": mode, **CONFIGS[mode], **(cfg_extra or {})}
    machine = machine_info(torch, mods["pybase64"])
    for line in header_lines(machine):
        print(line)
    if machine["load_1min"] is not None and machine["load_1min"] > 0.5 * (machine["usable_cores"] or 1):
        print(f"warning: load average {machine['load_1min']:.2f} on {machine['usable_cores']} cores: other processes compete for the CPU; "
              "the interleaved ratios stay comparable, absolute times and threads=2 do not")
    print(f"mode: {mode}; µs/call = median of interleaved rounds; spread = IQR/median; GB/s = float32 input bytes (B*D*4) per second;")
    print("tensorb64 × = path time / time of the tensorb64 call it competes with (per-row paths vs encode_rows, batch vs encode)")
    print(flush=True)

    def log(s):
        print(s, file=sys.stderr, flush=True)

    started = time.perf_counter()
    report = {"machine": machine, "mode": mode, "config": cfg, "sections": [s.NAME for s in sections]}
    for section in sections:
        report.update(section.run(mods, cfg, log))
    report["elapsed_s"] = elapsed = time.perf_counter() - started
    machine["load_1min_after"] = load_average()
    report["errors"] = errors = [e for s in sections for e in s.errors(report)]

    for section in sections:
        print("\n".join(section.text(report)))
    print(f"\n{', '.join(s.summary(report) for s in sections)} in {elapsed:.1f} s; "
          f"load average before {load_text(machine['load_1min'])}, after {load_text(machine['load_1min_after'])}")
    if args.json:
        _write(args.json, json.dumps(report, indent=1))
    if args.table:
        command = " ".join([getattr(args, "command", "python -m tensorb64 bench"), *(sys.argv[1:] if argv is None else argv)])
        _write(args.table, f"Command: `{command}` (µs/call: median of interleaved rounds; spread: IQR/median; GB/s: float32 input bytes per second; "
               "tensorb64 ×: the path's time over that of the tensorb64 call it competes with)\n\n"
               + "\n".join("    " + line for line in header_lines(machine)) + "\n\n"
               + "".join(s.markdown(report) for s in sections))
    if args.plot:
        from . import plot

        plot.draw(report, args.plot)
    if errors:
        print(f"\n{len(errors)} path(s) failed their output check: the numbers above omit those cases", file=sys.stderr)
        return 1
    return 0
