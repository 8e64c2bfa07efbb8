"""What every section's report shares: the machine it ran on, the header, and the two table layouts
(aligned text for the terminal, Markdown for --table)."""

from __future__ import annotations

import os
import platform

import numpy as np

import tensorb64

EXTRA_HINT = 'install the benchmark dependencies with: pip install "tensorb64[bench]"'


def require(module: str):
    """The module, or a SystemExit naming the extra that provides it."""
    try:
        return __import__(module)
    except ImportError as e:
        raise SystemExit(f"tensorb64 bench needs {module} ({e}); {EXTRA_HINT}") from None


# --------------------------------------------------------------------------- machine


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Model", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_ISA_FLAGS = ("avx2", "f16c", "avx512bw", "avx512vbmi", "avx512_bf16", "avx512_fp16", "asimd", "asimdhp", "sve")


def cpu_features() -> list:
    """The ISA extensions a base64 kernel can use that /proc/cpuinfo lists (x86 flags, arm Features)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [x for x in _ISA_FLAGS if x in have]
    except OSError:
        pass
    return []


def load_average():
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def machine_info(torch, pybase64) -> dict:
    """The machine and the versions in play; torch and pybase64 may be None (not needed by the run)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    pybase64_version = None
    if pybase64 is not None:
        pybase64_version = pybase64.get_version() if hasattr(pybase64, "get_version") else pybase64.__version__
    return {
        "cpu": cpu_model(),
        "cpu_features": cpu_features(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "load_1min": load_average(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "tensorb64": tensorb64.__version__,
        "simd_level": tensorb64.simd_level(),
        "available_simd_levels": tensorb64.available_simd_levels(),
        "TENSORB64_SIMD": os.environ.get("TENSORB64_SIMD"),
        "torch": torch.__version__ if torch is not None else None,
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "numpy": np.__version__,
        "pybase64": pybase64_version,
    }


def machine_line(m: dict) -> str:
    features = f" ({' '.join(m['cpu_features'])})" if m["cpu_features"] else ""
    return f"{m['cpu']}{features}, {m['cores']} cores; tensorb64 {m['tensorb64']} simd_level={m['simd_level']}"


def load_text(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def header_lines(m: dict) -> list:
    return [
        f"machine:   {m['cpu']} ({m['cores']} cores, {m['usable_cores']} usable, load {load_text(m['load_1min'])}), {m['machine']}"
        + (f", {' '.join(m['cpu_features'])}" if m["cpu_features"] else ""),
        f"tensorb64: {m['tensorb64']}  simd_level={m['simd_level']}  available={','.join(m['available_simd_levels'])}"
        + (f"  TENSORB64_SIMD={m['TENSORB64_SIMD']}" if m["TENSORB64_SIMD"] else ""),
        f"versions:  python {m['python']}, torch {m['torch']} (intra-op threads {m['torch_threads']}), numpy {m['numpy']}, pybase64 {m['pybase64']}",
    ]


# --------------------------------------------------------------------------- tables


def fmt_us(us: float) -> str:
    return f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def spread_text(m: dict) -> str:
    """The interquartile range over the median of a measure() entry."""
    return f"±{(m['p75'] - m['p25']) / m['us'] * 100:.0f}%"


def text_table(columns, rows, right, group: int = 4) -> str:
    """Aligned columns (those in `right` right-aligned), a blank line wherever the first `group`
    cells change (one case ends, the next begins)."""
    rows = [tuple(columns)] + [tuple(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns))]
    out, prev = [], None
    for k, r in enumerate(rows):
        if k > 1 and r[:group] != prev:
            out.append("")
        prev = r[:group]
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
        if k == 0:
            out.append("-" * len(out[-1]))
    return "\n".join(out)


def markdown_table(columns, rows, right) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if i in right else "---" for i in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
