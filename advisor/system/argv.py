"""The one place that builds argv lists for the system tools the advisor runs. Nothing here runs
anything: advisor.system.runner does, so that every command can also be printed as a plan."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence


def mkfs_xfs(
    target: str | None,
    options: Sequence[str] = (),
    *,
    dry_run: bool = False,
    force: bool = False,
    no_discard: bool = False,
) -> list[str]:
    """`mkfs.xfs [-N] [-f] [-K] OPTIONS TARGET`. -N prints the geometry and writes nothing;
    -K skips the discard pass (a fresh loop file has nothing to discard and it costs time).
    No target when the options name it (`-d file,name=F,size=S`)."""
    argv = ["mkfs.xfs"]
    if dry_run:
        argv.append("-N")
    if force:
        argv.append("-f")
    if no_discard:
        argv.append("-K")
    return [*argv, *options, *([target] if target is not None else [])]


def mkfs_version() -> list[str]:
    return ["mkfs.xfs", "-V"]


def mount(
    device: str, mountpoint: str, options: Iterable[str] = (), fstype: str = "xfs"
) -> list[str]:
    opts = ",".join(options)
    return ["mount", "-t", fstype, *(["-o", opts] if opts else []), device, mountpoint]


def umount(mountpoint: str, *, lazy: bool = False) -> list[str]:
    return ["umount", *(["-l"] if lazy else []), mountpoint]


def losetup_attach(
    backing_file: str, *, sector_size: int = 512, direct_io: bool = False
) -> list[str]:
    argv = ["losetup", "--find", "--show", "-b", str(sector_size)]
    if direct_io:
        argv.append("--direct-io=on")
    return [*argv, backing_file]


def losetup_detach(device: str) -> list[str]:
    return ["losetup", "-d", device]


def losetup_list() -> list[str]:
    """Every attached loop device with its backing file and that file's device and inode, as
    JSON."""
    return ["losetup", "--list", "--json", "--output", "NAME,BACK-FILE,BACK-INO,BACK-MAJ:MIN"]


def xfs_info(target: str) -> list[str]:
    return ["xfs_info", target]


def xfs_db_info(device: str) -> list[str]:
    """`xfs_db -r -c info DEV`: xfs_info's report of an unmounted filesystem, read-only."""
    return ["xfs_db", "-r", "-c", "info", device]


def xfs_spaceman(mountpoint: str, command: str) -> list[str]:
    return ["xfs_spaceman", "-c", command, mountpoint]


def perf_stat(events: Sequence[str], device_filter: str, seconds: float,
              filtered: Sequence[tuple[str, str]] = ()) -> list[str]:
    """`perf stat` counting tracepoints in the kernel on every CPU, each filtered to one
    filesystem (`dev == 0x...`), for as long as `sleep SECONDS` runs: perf ends on its own
    even if the advisor is killed outright, and the events close with it. CSV on stderr."""
    cmd = ["perf", "stat", "--all-cpus", "--field-separator", ","]
    for event in events:
        cmd += ["--event", event, "--filter", device_filter]
    for event, its_filter in filtered:  # the same event again under a filter of its own
        cmd += ["--event", event, "--filter", its_filter]
    return [*cmd, "--", "sleep", f"{seconds:g}"]


def setpriv_pdeathsig() -> list[str]:
    """The prefix that has the kernel kill a command when the advisor dies (util-linux)."""
    return ["setpriv", "--pdeathsig", "KILL", "--"]


def perf_record(events: str | Sequence[str], device_filter: str, output: str, seconds: float,
                period: int = 1) -> list[str]:
    """`perf record` of one tracepoint on every CPU for as long as `sleep SECONDS` runs, one
    sample every `period` hits on each CPU. perf asks the kernel to record each hit's period by
    default, and the kernel then samples every hit of a tracepoint whatever the period:
    `--no-period` drops that field, and the kernel then keeps one hit in `period`."""
    sampling = ["--no-period", "--count", str(period)] if period > 1 else []
    selected: list[str] = []
    for event in [events] if isinstance(events, str) else events:
        selected += ["--event", event, "--filter", device_filter]
    return ["perf", "record", "--quiet", "--all-cpus", *selected, *sampling, "--output", output,
            "--", "sleep", f"{seconds:g}"]


def perf_script_trace(data: str) -> list[str]:
    """Each sample's tracepoint fields, as the tracepoint prints them, in a perf.data file."""
    return ["perf", "script", "--input", data, "--fields", "trace"]


def perf_script_threads(data: str) -> list[str]:
    """The command name, thread id and time of each sample in a perf.data file."""
    return ["perf", "script", "--input", data, "--fields", "comm,tid,time"]


def fio(jobfile: str, *, output_format: str = "json") -> list[str]:
    return ["fio", f"--output-format={output_format}", jobfile]


def fio_version() -> list[str]:
    return ["fio", "--version"]


def sync() -> list[str]:
    return ["sync"]


def drop_caches() -> list[str]:
    """Drop the page cache, dentries and inodes (after a sync), so each round starts cold."""
    return ["sysctl", "-q", "-w", "vm.drop_caches=3"]


def shell_line(argv: Sequence[str]) -> str:
    """argv as one line a person can paste into a shell."""
    return shlex.join(argv)
