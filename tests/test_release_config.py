"""The release configuration agrees with itself and with what .ci/run checks here: the macOS
deployment targets written once in pyproject.toml's [tool.cibuildwheel] are those the Zig builds
of cpp/tests/run_cross.sh target on every change and those docs/wheels.md states; every platform
the configuration builds has a runner in .github/workflows/wheels.yml; the torch the release tests
install is the one the bench extra pins. (The runners themselves cannot be run here.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
yaml = pytest.importorskip("yaml", reason="PyYAML reads the workflow; it is not installed")

pytestmark = pytest.mark.needs_source_tree  # pyproject.toml, cpp/tests/, docs/, .github/

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CIBW = CONFIG["tool"]["cibuildwheel"]


def deployment_targets() -> dict:
    """{arch: MACOSX_DEPLOYMENT_TARGET} from the overrides selecting each macOS architecture."""
    found = {}
    for override in CIBW.get("overrides", []):
        target = override.get("environment", {}).get("MACOSX_DEPLOYMENT_TARGET")
        match = re.fullmatch(r"\*-macosx_(\w+)", override["select"])
        if target and match:
            found[match[1]] = target
    return found


def test_macos_targets_are_those_run_cross_builds_for():
    targets = deployment_targets()
    assert set(targets) == {"arm64", "x86_64"}, targets
    script = (ROOT / "cpp/tests/run_cross.sh").read_text(encoding="utf-8")
    zig = dict(re.findall(r"host=(arm64|x86_64); minimum_macos=([0-9.]+)", script))
    assert zig == targets, (zig, targets)


def test_docs_state_the_macos_targets():
    rows = [line for line in (ROOT / "docs/wheels.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| release: macOS")]
    for arch, target in deployment_targets().items():
        row = next((r for r in rows if arch in r.split("|")[1]), None)
        assert row is not None and f"macOS {target}" in row, (arch, target, rows)


def test_every_platform_built_has_a_runner_of_its_architecture():
    workflow = yaml.safe_load((ROOT / ".github/workflows/wheels.yml").read_text(encoding="utf-8"))
    runners = set(workflow["jobs"]["wheels"]["strategy"]["matrix"]["os"])
    # archs = "native" everywhere: a platform is built only where a runner of its architecture is.
    assert all(CIBW[os_name]["archs"] == ["native"] for os_name in ("linux", "macos", "windows"))
    runner_of = {"manylinux_x86_64": "ubuntu-latest", "manylinux_aarch64": "ubuntu-24.04-arm",
                 "musllinux_x86_64": "ubuntu-latest", "musllinux_aarch64": "ubuntu-24.04-arm",
                 "macosx_arm64": "macos-14", "macosx_x86_64": "macos-15-intel",
                 "win_amd64": "windows-latest", "win_arm64": "windows-11-arm"}
    platforms = {selector.split("-", 1)[1] for selector in CIBW["build"].split()}
    assert platforms == set(runner_of), platforms
    assert {runner_of[p] for p in platforms} == runners, runners


def test_release_tests_install_the_torch_the_bench_pins():
    pinned = [r for r in CONFIG["project"]["optional-dependencies"]["bench"] if r.startswith("torch")]
    installed = {r for o in CIBW.get("overrides", []) for r in o.get("test-requires", []) if r.startswith("torch")}
    assert installed == set(pinned), (installed, pinned)
