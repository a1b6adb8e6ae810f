"""The package as users install it: an sdist and a wheel built from this checkout (the wheel from
the sdist, so the sdist is proven complete too), installed into a fresh virtual environment made
from Debian's /usr/bin/python3, away from the checkout, must be the whole tool: the rule book,
the schemas, the example workload and the TUI's stylesheet inside, the TUI started in a terminal
(tmux) showing the device list, every other command run, and the same proposal as the checkout
makes.

The new environment gets no package index: its dependencies are this test environment's
site-packages, through a .pth file (which adds the folder only: the editable install's own .pth
hooks there are not run, so `advisor` can only come from the wheel).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conftest import REPO, loop_device, mounted, require_root_tools, sh
from tests.tui.test_terminal import _wait_for
from tests.tui.test_terminal import tmux as tmux  # a fixture

#: The interpreter Debian 12's users have (the venv of a wheel user is made from it).
DEBIAN_PYTHON = Path("/usr/bin/python3")
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

    def run(self, *argv: str,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        return subprocess.run([str(self.venv / "bin" / argv[0]), *argv[1:]], capture_output=True,
                              text=True, cwd=self.away, env={**environ, **(env or {})},
                              timeout=600, check=False)


def _step(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _source_copy(dest: Path) -> Path:
    """The checkout's files as a fresh clone has them (tracked and new, less what git ignores):
    an *.egg-info or build/ left by an earlier build lists files that setuptools then ships
    whatever pyproject.toml says, hiding package data the configuration leaves out."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("needs the git checkout (to build from its files only)")
    for rel in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("package")
    dist = tmp / "dist"
    # No isolation: the build backend comes from this environment (the test extra), not an index.
    build_log = _step([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                       str(_source_copy(tmp / "source"))], tmp)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    venv = tmp / "venv"
    python = DEBIAN_PYTHON if DEBIAN_PYTHON.exists() else Path(sys._base_executable)
    _step([str(python), "-m", "venv", "--without-pip", str(venv)], tmp)
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
    # Every file the package reads that is not Python (the TUI's stylesheet among them).
    data = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "advisor").rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc"))
    assert "advisor/tui/app.tcss" in data
    assert not [f for f in data if f not in names], "package data missing from the wheel"
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
    # An address is real or absent: a placeholder domain is a link to nowhere on the index page.
    assert not [u for u in meta.get_all("Project-URL") or [] if ".invalid" in u]
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


def test_installed_code_never_sends_a_user_to_the_checkout(installed: Installed) -> None:
    """A wheel user has no ./bootstrap: no message of the installed package names it."""
    site = installed.run("python", "-c", "import advisor, os; "
                         "print(os.path.dirname(advisor.__file__))").stdout.strip()
    named = [str(p.relative_to(site)) for p in Path(site).rglob("*.py")
             if "bootstrap" in p.read_text()]
    assert not named, named


@pytest.mark.root
def test_installed_tui_shows_the_device_list_in_a_terminal(
        installed: Installed, shared_dumps: dict[str, Path], tmux: Callable[..., str],
        tmp_path: Path) -> None:
    """The TUI from the wheel, in tmux: its stylesheet is there and the device list shows."""
    sysroot = shared_dumps["simple-nvme"]
    marker = tmp_path / "exit-code"
    # Textual draws on stderr: both stay on the terminal, where a start-up error shows too.
    command = (f"cd {installed.away} && {installed.venv}/bin/xfs-advisor --sysroot {sysroot}; "
               f"echo $? > {marker}; sleep 60")
    tmux("new-session", "-d", "-s", "wheel", "-x", "160", "-y", "45",
         "env", "-u", "COLUMNS", "-u", "LINES", "TERM=xterm-256color", "sh", "-c", command)

    def screen() -> str:
        shown = tmux("capture-pane", "-p", "-t", "wheel")
        if marker.exists():  # it ended before the device list: what it said is the failure
            raise AssertionError(f"the TUI exited ({marker.read_text().strip()}):\n{shown}")
        return shown

    shown = _wait_for(screen, lambda s: "nvme0n1p1" in s and "STATE" in s, "the device list",
                      timeout=60)
    assert "mounted /home" in shown
    tmux("send-keys", "-t", "wheel", "q")
    _wait_for(lambda: marker.read_text() if marker.exists() else "", lambda s: s.strip() == "0",
              "the TUI to quit with 0")
    assert "Error" not in tmux("capture-pane", "-p", "-t", "wheel")


@pytest.mark.root
def test_every_command_runs_from_the_wheel(installed: Installed, shared_dumps: dict[str, Path],
                                           tmp_path: Path) -> None:
    """Each subcommand the parser has, run from the installed wheel away from the checkout.
    validate is started up to its check of the tools, with fio hidden: a whole run takes
    minutes (6 pairs on a 1 GiB loop device: 11 minutes on this shared machine), and the
    checkout's validate tests run that same code."""
    from tests.fleet_hosts import collect

    commands = set(installed.run("python", "-c",
                                 "from advisor.commands.parser import build_parser; "
                                 "import argparse; p = build_parser(); print(*next(a.choices "
                                 "for a in p._actions if isinstance(a, "
                                 "argparse._SubParsersAction)))").stdout.split())
    sysroot = str(shared_dumps["simple-nvme"])
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"x" * 5000)
    env = {"XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    runs = {
        "devices": ["--sysroot", sysroot, "devices", "--json"],
        "capture": ["capture", "--json", str(tmp_path / "capture")],
        "propose": ["--sysroot", sysroot, "propose", "--device", "nvme0n1p1", "--json"],
        "rules": ["rules", "--json"],
        "explain": ["explain", "ag-concurrency"],
        "schema": ["schema", "fleet"],
        "profile": ["profile", str(tree), "--json"],
        "audit": ["audit", "--json"],
        "completion": ["completion", "zsh"],
        "manpage": ["manpage"],
    }
    # The TUI has its own test above; fleet reads what the role's collect.sh made with the wheel;
    # observe watches a filesystem of its own (below).
    assert commands - {"tui", "fleet", "validate", "observe"} == set(runs), \
        "a command not run here"
    for name, argv in runs.items():
        proc = installed.run("xfs-advisor", *argv, env=env)
        # audit: 6 is "findings at or above --fail-on", on whatever this machine mounts.
        assert proc.returncode in ((0, 6) if name == "audit" else (0,)), (name, proc.stderr)
        assert proc.stdout, name
        if "--json" in argv:
            json.loads(proc.stdout)
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "fs.img", 512 << 20) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            proc = installed.run("xfs-advisor", "observe", "--json", "--counters-only", "--for",
                                 "1s", str(mnt), env=env)
    assert proc.returncode == 0, proc.stderr
    [watched] = json.loads(proc.stdout)["filesystems"]
    assert watched["mountpoint"] == str(tmp_path / "mnt"), watched
    bin_dir = tmp_path / "bin"  # the system's tools but fio
    bin_dir.mkdir()
    for tool in ("mkfs.xfs", "mount", "umount", "losetup", "xfs_info", "sysctl"):
        found = shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")
        if found:
            (bin_dir / tool).symlink_to(found)
    proc = installed.run("xfs-advisor", "validate", "--loop-dir", str(tmp_path / "loop"),
                         env={**env, "PATH": str(bin_dir)})
    assert (proc.returncode, proc.stderr) == (4, "xfs-advisor: fio not found: install it "
                                                 "(Debian: apt-get install fio)\n")
    assert not (tmp_path / "loop").exists()
    results = tmp_path / "results"
    collect(results, "host1", shared_dumps["simple-lvm"], ["sda"], {"concurrent_writers": 8},
            tool=installed.venv / "bin" / "xfs-advisor")
    proc = installed.run("xfs-advisor", "fleet", "--json", str(results))
    assert proc.returncode == 0, proc.stderr
    [host] = json.loads(proc.stdout)["hosts"]
    assert host["status"] == "ok", host
    assert host["tool_version"] == version("xfs-advisor")
