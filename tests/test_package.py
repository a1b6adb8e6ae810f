"""The package as users install it: an sdist and a wheel built from this checkout (the wheel from
the sdist, so the sdist is proven complete too), installed into a fresh virtual environment away
from the checkout, must be the whole tool: the rule book, the schemas and the example workload
inside, and the same proposal as the checkout makes.

The new environment gets no package index: its dependencies are this test environment's
site-packages, through a .pth file (which adds the folder only: the editable install's own .pth
hooks there are not run, so `advisor` can only come from the wheel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conftest import REPO

WORKLOAD = REPO / "advisor" / "data" / "example-workload.toml"


@dataclass
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    build_log: str
    install_log: str
    away: Path
    """An empty folder outside the checkout to run the installed tool from."""

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        return subprocess.run([str(self.venv / "bin" / argv[0]), *argv[1:]], capture_output=True,
                              text=True, cwd=self.away, env=env, timeout=120, check=False)


def _step(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("package")
    dist = tmp / "dist"
    # No isolation: the build backend comes from this environment (the test extra), not an index.
    build_log = _step([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                       str(REPO)], tmp)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    venv = tmp / "venv"
    _step([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp)
    install_log = _step([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                         "install", "--no-deps", "--no-index", str(wheel)], tmp)
    purelib = _step([str(venv / "bin" / "python"), "-c",
                     "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp).strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (Path(purelib) / "dependencies-of-the-test.pth").write_text("\n".join(sorted(ours)) + "\n")
    away = tmp / "elsewhere"
    away.mkdir()
    return Installed(wheel, sdist, venv, build_log, install_log, away)


pytestmark = pytest.mark.slow


def test_wheel_and_sdist_carry_the_rule_book_schemas_and_example(installed: Installed) -> None:
    rule_files = sorted(p.relative_to(REPO / "rules").as_posix()
                        for p in (REPO / "rules").rglob("*") if p.is_file())
    assert any(f.endswith(".toml") for f in rule_files)
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = [f for f in rule_files if f"advisor/data/rules/{f}" not in names]
    assert not missing, f"rules missing from the wheel: {missing}"
    schemas = sorted(p.name for p in (REPO / "advisor" / "data" / "schemas").glob("*.json"))
    assert schemas and all(f"advisor/data/schemas/{s}" in names for s in schemas)
    assert "advisor/data/example-workload.toml" in names
    assert "advisor/py.typed" in names
    # The sdist holds rules/ where the repository has it (the wheel above was built from it).
    with tarfile.open(installed.sdist) as tf:
        top = tf.getnames()[0].split("/")[0]
        in_sdist = {n.removeprefix(f"{top}/") for n in tf.getnames()}
    assert {f"rules/{f}" for f in rule_files} <= in_sdist
    assert {"setup.py", "pyproject.toml", "COPYING", "README.md"} <= in_sdist


def test_metadata_has_an_spdx_license_and_no_deprecation_warnings(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = HeaderParser().parsestr(zf.read(meta_name).decode())
        assert f"{meta_name.rsplit('/', 1)[0]}/licenses/COPYING" in zf.namelist()
    assert meta["License-Expression"] == "GPL-2.0-or-later"
    assert meta.get_all("License-File") == ["COPYING"]
    assert float(meta["Metadata-Version"]) >= 2.4
    classifiers = meta.get_all("Classifier") or []
    assert classifiers and not any(c.startswith("License ::") for c in classifiers)
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Version"] == version("xfs-advisor")
    for log in (installed.build_log, installed.install_log):
        assert "deprecat" not in log.lower(), log
        assert "Package would be ignored" not in log, log


def test_installed_tool_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    proc = installed.run("python", "-c", "import advisor.engine.rulebook as r, advisor; "
                         "print(advisor.__file__); print(r.BUILTIN_RULES)")
    assert proc.returncode == 0, proc.stderr
    module, rules = proc.stdout.split()
    assert Path(module).is_relative_to(installed.venv)
    assert Path(rules).is_relative_to(installed.venv) and rules.endswith("advisor/data/rules")


def test_installed_version_and_rules_match_the_checkout(installed: Installed) -> None:
    proc = installed.run("xfs-advisor", "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"xfs-advisor {version('xfs-advisor')}\n"
    here = subprocess.run([sys.executable, "-m", "advisor", "rules", "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    there = installed.run("xfs-advisor", "rules", "--json")
    assert there.returncode == 0, there.stderr
    assert json.loads(there.stdout) == json.loads(here.stdout)
    assert len(json.loads(there.stdout)) == len(list((REPO / "rules").rglob("*.toml")))
    table = installed.run("xfs-advisor", "rules")
    assert table.returncode == 0 and "ag-concurrency" in table.stdout, table.stderr
    completion = installed.run("xfs-advisor", "completion", "bash")
    assert completion.returncode == 0 and "complete " in completion.stdout, completion.stderr
    page = installed.run("xfs-advisor", "manpage")
    assert page.returncode == 0 and page.stdout.startswith(".TH"), page.stderr


def _comparable(doc: dict[str, object], rules_dir: str) -> dict[str, object]:
    """The proposal without what depends on where it ran: the rule book's folder, the stand-in
    file of the dry run, timings."""
    doc = json.loads(json.dumps(doc))
    proposal = doc["proposal"]
    assert isinstance(proposal, dict)
    assert proposal["rules_dirs"] == [rules_dir]
    del proposal["rules_dirs"], proposal["check"]["argv"]
    doc.pop("extra", None)
    return doc


def test_installed_proposal_for_a_captured_host_matches_the_checkout(
        installed: Installed, shared_dumps: dict[str, Path]) -> None:
    root = str(shared_dumps["simple-nvme"])
    args = ["--json", "--sysroot", root, "--device", "nvme0n1"]
    shipped, example = installed.run(
        "python", "-c", "import advisor.engine.rulebook as r; from importlib.resources import "
        "files; print(r.BUILTIN_RULES); print(files('advisor') / 'data' / 'example-workload.toml')"
    ).stdout.split()
    assert Path(example).is_relative_to(installed.venv)
    there = installed.run("xfs-advisor", *args, "--workload", example)
    assert there.returncode == 0, there.stderr
    here = subprocess.run([sys.executable, "-m", "advisor", *args, "--workload", str(WORKLOAD)],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    a = _comparable(json.loads(here.stdout), str(REPO / "rules"))
    b = _comparable(json.loads(there.stdout), shipped)
    assert b == a
    assert b["proposal"]["mkfs_argv"][-1] == "/dev/nvme0n1"  # type: ignore[index]
