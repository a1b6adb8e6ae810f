"""Where the benchmark's fio runs: in a cgroup of its own with a larger CPU and IO weight than
the machine's other work, so that the load of others moves its figures less. Three ways, the
first the host allows:

- systemd is PID 1: `systemd-run --scope -p CPUWeight= -p IOWeight=` around each fio run (a
  transient scope systemd makes and collects);
- a cgroup v2 hierarchy whose cgroup above ours already delegates the cpu and io controllers
  (`cgroup.subtree_control`): a folder made for the run, its weights set, each fio moved into
  it, the folder removed at the end;
- otherwise fio runs where the run does, and the report says why.

No setting outside the run's own scope or folder is changed: a controller not delegated already
is not turned on."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from advisor.system import argv as argvs
from advisor.system.runner import which

#: Weights given to the benchmark (systemd's and cgroup v2's default is 100): ten times any
#: other cgroup's share of a contended CPU or device.
CPU_WEIGHT = 1000
IO_WEIGHT = 1000


@dataclass
class Isolation:
    """How fio is run, and the words the report keeps."""

    kind: str
    """`systemd scope`, `cgroup v2 folder` or `none`."""
    summary: str
    folder: str | None = None
    """The cgroup v2 folder this run made (removed by close())."""

    def wrap(self, command: list[str]) -> list[str]:
        """fio's argv, inside this run's scope or folder."""
        if self.kind == "systemd scope":
            return argvs.systemd_scope(command, cpu_weight=CPU_WEIGHT, io_weight=IO_WEIGHT)
        if self.kind == "cgroup v2 folder" and self.folder:
            return argvs.in_cgroup(self.folder, command)
        return list(command)

    def close(self) -> None:
        """Remove the folder this run made (empty once its fio runs have ended)."""
        if self.folder:
            with contextlib.suppress(OSError):
                os.rmdir(self.folder)
            self.folder = None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def v2_mount(mountinfo: str) -> str | None:
    """The cgroup v2 mount point from /proc/self/mountinfo text (None: none mounted)."""
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            return fields[4].replace("\\040", " ")
    return None


def v2_path(proc_cgroup: str) -> str | None:
    """This process's cgroup v2 path from /proc/self/cgroup text (the `0::` line)."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def choose(*, pid1: str, mountinfo: str, proc_cgroup: str,
           read: Callable[[str], str | None] = _read,
           systemd_run: bool = True) -> Isolation:
    """Which way this host allows (pure: the host's texts are given; `read` reads a cgroup
    file). Makes nothing: open_isolation() makes the folder."""
    if pid1.strip() == "systemd" and systemd_run:
        return Isolation("systemd scope", f"fio ran in a systemd scope of its own "
                         f"(CPUWeight={CPU_WEIGHT}, IOWeight={IO_WEIGHT})")
    mount = v2_mount(mountinfo)
    ours = v2_path(proc_cgroup)
    if mount is None or ours is None:
        return Isolation("none", "fio ran without a cgroup of its own: no cgroup v2 hierarchy "
                         "here and systemd is not PID 1")
    here = os.path.normpath(os.path.join(mount, ours.lstrip("/")))
    delegated = (read(os.path.join(here, "cgroup.subtree_control")) or "").split()
    available = (read(os.path.join(mount, "cgroup.controllers")) or "").split()
    missing = [c for c in ("cpu", "io") if c not in delegated]
    if missing:
        have = " ".join(available) or "none"
        return Isolation("none", f"fio ran without a cgroup of its own: systemd is not PID 1 "
                         f"({pid1.strip() or '?'}) and the cgroup v2 hierarchy at {mount} does "
                         f"not delegate {' and '.join(missing)} to {ours} (controllers there: "
                         f"{have}); none is turned on for the benchmark")
    return Isolation("cgroup v2 folder", f"fio ran in a cgroup v2 folder of its own under "
                     f"{here} (cpu.weight {CPU_WEIGHT}, io.weight {IO_WEIGHT})", folder=here)


def open_isolation(name: str) -> Isolation:
    """This host's way, made ready: for a cgroup v2 folder, `name` made under ours with its
    weights (falling back to none, said, if that fails)."""
    chosen = choose(pid1=_read("/proc/1/comm") or "",
                    mountinfo=_read("/proc/self/mountinfo") or "",
                    proc_cgroup=_read("/proc/self/cgroup") or "",
                    systemd_run=which("systemd-run") is not None)
    if chosen.kind != "cgroup v2 folder" or chosen.folder is None:
        return chosen
    folder = os.path.join(chosen.folder, name)
    try:
        os.mkdir(folder)
    except OSError as err:
        return Isolation("none", f"fio ran without a cgroup of its own: making {folder} "
                         f"failed ({err.strerror})")
    try:
        for file, value in (("cpu.weight", CPU_WEIGHT), ("io.weight", IO_WEIGHT)):
            with open(os.path.join(folder, file), "w", encoding="utf-8") as f:
                f.write(f"{value}\n")
    except OSError as err:
        os.rmdir(folder)
        return Isolation("none", f"fio ran without a cgroup of its own: setting the weights of "
                         f"{folder} failed ({err.strerror})")
    return Isolation("cgroup v2 folder", chosen.summary.replace(chosen.folder, folder),
                     folder=folder)
