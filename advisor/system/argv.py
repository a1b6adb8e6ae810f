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


#: The order of mkfs.xfs flags in a merged option list.
FLAG_ORDER = ("-b", "-c", "-m", "-d", "-i", "-n", "-l", "-s")
#: mkfs.xfs flags that take no argument: after the pairs, so the pairs stay pairs.
BARE_FLAGS = ("-K",)


def merge_options(fragments: Iterable[Sequence[str]]) -> list[str]:
    """Flag/argument pairs merged per flag (`-i size=1024` and `-i sparse=1` become
    `-i size=1024,sparse=1`), flags in FLAG_ORDER, then the bare flags (`-K`). Raises ValueError
    on one sub-option given twice."""
    merged: dict[str, list[str]] = {}
    bare: list[str] = []
    for fragment in fragments:
        if list(fragment) in ([f] for f in BARE_FLAGS):
            bare += [f for f in fragment if f not in bare]
            continue
        if len(fragment) % 2:
            raise ValueError(f"mkfs fragment {list(fragment)} is not flag/argument pairs")
        for flag, arg in zip(fragment[::2], fragment[1::2], strict=True):
            parts = merged.setdefault(flag, [])
            for part in arg.split(","):
                key = part.split("=", 1)[0]
                if any(p.split("=", 1)[0] == key for p in parts):
                    raise ValueError(f"{flag} {key} set twice")
                parts.append(part)
    rank = {flag: i for i, flag in enumerate(FLAG_ORDER)}
    order = sorted(merged, key=lambda f: rank.get(f, len(FLAG_ORDER)))
    out: list[str] = []
    for flag in order:
        out += [flag, ",".join(merged[flag])]
    return out + bare


def pairs_only(options: Sequence[str]) -> list[str]:
    """The flag/argument pairs of merged options, without the bare flags."""
    return [o for o in options if o not in BARE_FLAGS]


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
                period: int = 1, enabled: Sequence[tuple[int, int]] = ()) -> list[str]:
    """`perf record` of one tracepoint on every CPU for as long as `sleep SECONDS` runs, one
    sample every `period` hits on each CPU. perf asks the kernel to record each hit's period by
    default, and the kernel then samples every hit of a tracepoint whatever the period:
    `--no-period` drops that field, and the kernel then keeps one hit in `period`. With
    `enabled` (milliseconds from the start, `(from, to)`), the events are enabled only over
    those ranges (`--delay 0-100,1000-1100`): perf switches them itself. perf ends its
    workload (SIGTERM, and exits 143) once the last range is over: a last millisecond a minute
    after the sleep's end, never reached, has it end with its sleep instead."""
    sampling = ["--no-period", "--count", str(period)] if period > 1 else []
    if enabled:
        after = int(seconds * 1000) + 60_000
        sampling += ["--delay", ",".join(f"{start}-{end}" for start, end in
                                         [*enabled, (after, after + 1)])]
    selected: list[str] = []
    for event in [events] if isinstance(events, str) else events:
        selected += ["--event", event, "--filter", device_filter]
    return ["perf", "record", "--quiet", "--all-cpus", *selected, *sampling, "--output", output,
            "--", "sleep", f"{seconds:g}"]


def perf_record_usage() -> list[str]:
    """perf record's list of options (`-h`: printed at once, exit status 129)."""
    return ["perf", "record", "-h"]


def perf_script_trace(data: str) -> list[str]:
    """Each sample's thread id, time, event and tracepoint fields (as the tracepoint prints
    them) in a perf.data file."""
    return ["perf", "script", "--input", data, "--fields", "tid,time,event,trace"]


def perf_script_with(data: str, script: str) -> list[str]:
    """Each sample of a perf.data file handed to a Python script perf runs (`--script`)."""
    return ["perf", "script", "--input", data, "--script", script]


def perf_script_threads(data: str) -> list[str]:
    """The command name, thread id, time, event and tracepoint fields of each sample in a
    perf.data file."""
    return ["perf", "script", "--input", data, "--fields", "comm,tid,time,event,trace"]


def fio(jobfile: str, *, output_format: str = "json") -> list[str]:
    return ["fio", f"--output-format={output_format}", jobfile]


def systemd_scope(argv: Sequence[str], *, cpu_weight: int, io_weight: int) -> list[str]:
    """`systemd-run --scope` around argv: a transient scope of its own (collected when it ends)
    with these CPU and IO weights; the command runs in the foreground as itself."""
    return ["systemd-run", "--scope", "--quiet", "--collect", "-p", f"CPUWeight={cpu_weight}",
            "-p", f"IOWeight={io_weight}", "--", *argv]


def in_cgroup(folder: str, argv: Sequence[str]) -> list[str]:
    """argv started inside the cgroup v2 folder `folder`: the shell writes its own pid to the
    folder's cgroup.procs, then becomes the command (exec). The folder and the command are
    positional parameters, never part of the script."""
    return ["sh", "-c", 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"', "sh", folder,
            *argv]


def fio_version() -> list[str]:
    return ["fio", "--version"]


def sync() -> list[str]:
    return ["sync"]


def shell_line(argv: Sequence[str]) -> str:
    """argv as one line a person can paste into a shell."""
    return shlex.join(argv)
