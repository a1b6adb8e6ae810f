"""fio in a cgroup of its own where the host allows it: the choice from the host's texts (each
way, on written trees), this machine's own answer checked against what it shows, and the
cgroup v2 wrapper run for real on a folder standing in for a cgroup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from advisor.system import cgroup

MOUNTINFO = ("24 30 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
             "25 30 0:23 / /proc rw - proc proc rw\n")


def _reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda path: files.get(path)


def test_systemd_as_pid_1_gives_a_scope_with_weights() -> None:
    way = cgroup.choose(pid1="systemd\n", mountinfo=MOUNTINFO, proc_cgroup="0::/user.slice\n")
    assert way.kind == "systemd scope"
    wrapped = way.wrap(["fio", "--output-format=json", "changes.fio"])
    assert wrapped[:2] == ["systemd-run", "--scope"]
    assert "CPUWeight=1000" in wrapped and "IOWeight=1000" in wrapped
    assert wrapped[-4:] == ["--", "fio", "--output-format=json", "changes.fio"]
    # systemd without systemd-run installed: the next way
    assert cgroup.choose(pid1="systemd", mountinfo="", proc_cgroup="",
                         systemd_run=False).kind == "none"


def test_a_delegating_cgroup_v2_gives_a_folder_and_nothing_else_changes() -> None:
    files = {"/sys/fs/cgroup/cgroup.subtree_control": "cpu io memory\n",
             "/sys/fs/cgroup/cgroup.controllers": "cpu io memory pids\n"}
    way = cgroup.choose(pid1="init", mountinfo=MOUNTINFO, proc_cgroup="0::/\n",
                        read=_reader(files))
    assert way.kind == "cgroup v2 folder" and way.folder == "/sys/fs/cgroup"
    # Not delegated (a controller would have to be turned on): without, and why.
    files["/sys/fs/cgroup/cgroup.subtree_control"] = "memory\n"
    way = cgroup.choose(pid1="init", mountinfo=MOUNTINFO, proc_cgroup="0::/\n",
                        read=_reader(files))
    assert way.kind == "none" and "does not delegate cpu and io" in way.summary
    assert way.wrap(["fio", "x.fio"]) == ["fio", "x.fio"]
    assert cgroup.choose(pid1="init", mountinfo="", proc_cgroup="").kind == "none"


def test_this_machine_gets_what_it_shows() -> None:
    """Checked against /proc/1/comm and the cgroup files read here, independently."""
    way = cgroup.open_isolation(f"xfs-advisor-test-{os.getpid()}")
    try:
        pid1 = Path("/proc/1/comm").read_text().strip()
        if pid1 == "systemd" and cgroup.which("systemd-run"):
            assert way.kind == "systemd scope"
        elif way.kind == "cgroup v2 folder":
            assert way.folder and Path(way.folder, "cgroup.procs").exists()
            assert Path(way.folder, "cpu.weight").read_text().strip() == "1000"
        else:
            assert way.kind == "none" and "without a cgroup of its own" in way.summary
            mount = cgroup.v2_mount(Path("/proc/self/mountinfo").read_text())
            if mount is not None:
                ours = cgroup.v2_path(Path("/proc/self/cgroup").read_text()) or "/"
                here = Path(mount, ours.lstrip("/"), "cgroup.subtree_control")
                delegated = here.read_text().split() if here.exists() else []
                assert not {"cpu", "io"} <= set(delegated)
    finally:
        way.close()
    assert way.folder is None


def test_the_cgroup_v2_wrapper_moves_the_command_then_becomes_it(tmp_path: Path) -> None:
    """A folder standing in for the cgroup (cgroup.procs a plain file here): the shell writes its
    pid there and then execs the command, which keeps that pid; a folder name with shell
    characters stays a word."""
    folder = tmp_path / "a b;$(touch x)"
    folder.mkdir()
    way = cgroup.Isolation("cgroup v2 folder", "test", folder=str(folder))
    argv = way.wrap(["sh", "-c", "echo $$"])
    proc = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert proc.stdout.strip() == (folder / "cgroup.procs").read_text().strip()
    assert not (tmp_path / "x").exists()
    (folder / "cgroup.procs").unlink()
    way.close()
    assert not folder.exists()
