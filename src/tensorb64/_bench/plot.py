"""`--plot`: the base64 section's throughput against batch size, the body section's bars.
Imported only when --plot is given (matplotlib is loaded then, never by `import tensorb64`)."""

from __future__ import annotations

import os
import sys

import matplotlib

from .report import machine_line

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def draw(report: dict, path: str) -> None:
    """The base64 section's plot at `path`, the body section's beside it as *_body.png (at `path`
    itself when the base64 section did not run)."""
    cases, body_cases = report.get("cases"), report.get("body_cases")
    if not cases and not body_cases:
        print(f"note: --plot draws the base64 and body sections, which did not run: no {path} written", file=sys.stderr)
    if cases:
        plot_rows(cases, report["machine"], path)
    if body_cases:
        root, ext = os.path.splitext(path)
        plot_body(body_cases, report["machine"], root + "_body" + (ext or ".png") if cases else path)


def plot_rows(cases, machine, path):
    sweep = [c for c in cases if c["output"] == "float32" and not c.get("threads")]
    inputs = [d for d in ("float32", "bfloat16") if any(c["input"] == d for c in sweep)]
    Ds = sorted({c["D"] for c in sweep})
    if not inputs or not Ds:
        return
    fig, axes = plt.subplots(len(inputs), len(Ds), figsize=(4.2 * len(Ds), 3.8 * len(inputs)), squeeze=False, sharey=True)
    styles = {
        "struct": ("tab:gray", "v"),
        "numpy": ("tab:orange", "s"),
        "pybase64": ("tab:blue", "^"),
        "pybase64 per-row .to()": ("tab:green", "^"),
        "pybase64 batch": ("tab:cyan", "^"),
        "tensorb64 rows": ("tab:red", "o"),
        "tensorb64 batch": ("tab:purple", "o"),
        "memcpy of output size": ("black", ""),
    }
    for i, ind in enumerate(inputs):
        for j, D in enumerate(Ds):
            ax = axes[i][j]
            sel = sorted((c for c in sweep if c["input"] == ind and c["D"] == D), key=lambda c: c["B"])
            for name, (color, marker) in styles.items():
                pts = [(c["B"], r["gbps"]) for c in sel for r in c["results"] if r["path"] == name and "gbps" in r]
                if pts:
                    xs, ys = zip(*pts, strict=True)
                    ax.plot(xs, ys, marker=marker or None, color=color, label=name, linestyle="--" if name.startswith("memcpy") else "-", linewidth=1.4)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{ind} input, D={D}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if i == len(inputs) - 1:
                ax.set_xlabel("batch size B (rows)")
            if j == 0:
                ax.set_ylabel("GB/s of float32 input")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.suptitle(f"base64 of embedding rows, throughput vs batch size (higher is better)\n{machine_line(machine)}", fontsize=11)
    fig.tight_layout(rect=(0, 0.1 if len(inputs) == 1 else 0.07, 1, 0.94))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_body(cases, machine, path):
    """The body section as bars: µs per call of each route, per shape, one panel per allocator
    state and format (log scale; lower is better)."""
    states = list(dict.fromkeys(c["allocator"] for c in cases))
    formats = [f for f in ("base64", "float") if any(c["format"] == f for c in cases)]
    colors = {"starlette": "tab:blue", "vllm": "tab:orange", "encode_rows +": "tab:green", "tolist +": "tab:green",
              "encode_rows alone": "tab:gray", "response_body": "tab:red"}
    fig, axes = plt.subplots(len(states), len(formats), figsize=(6.5 * len(formats), 4.2 * len(states)), squeeze=False)
    for (i, state), (j, fmt) in ((s, f) for s in enumerate(states) for f in enumerate(formats)):
        ax = axes[i][j]
        sel = [c for c in cases if c["allocator"] == state and c["format"] == fmt]
        names = [r["path"] for r in sel[0]["results"]]
        width = 0.8 / len(names)
        for k, name in enumerate(names):
            xs, ys = [], []
            for i, c in enumerate(sel):
                r = next(r for r in c["results"] if r["path"] == name)
                if "us" in r:
                    xs.append(i + k * width)
                    ys.append(r["us"])
            ax.bar(xs, ys, width, label=name, color=next((v for k, v in colors.items() if name.startswith(k)), None))
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sel))])
        ax.set_xticklabels([f"{c['B']}x{c['D']}" for c in sel])
        ax.set_yscale("log")
        ax.set_ylabel("µs per call (lower is better)")
        ax.set_title(f"{fmt} body, allocator {state}", fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"the whole /v1/embeddings body, float32 input, one thread\n{machine_line(machine)}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)

