"""`xfs-advisor validate`: an A/B benchmark of mkfs.xfs/mount defaults (A) against the proposal or
the given options (B), on a loop device over a temporary file or on a scratch device.

Exit codes: 0 done (B not worse), 5 B is worse on some metric, 2/3/4 as everywhere else."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from advisor.answers import add_workload_flags
from advisor.errors import BadInput

EXIT_WORSE = 5


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "validate", parents=[common],
        help="A/B benchmark: defaults against the proposal (or given options)",
        description="Format a scratch device (default: a loop device over a temporary file) "
        "again and again, A = mkfs.xfs and mount defaults, B = the proposal for the workload or "
        "the options given, in paired ABBA rounds, and say per metric whether B is better, worse, "
        "equivalent or whether the run cannot tell.")
    s = argparse.SUPPRESS
    p.add_argument("--device", metavar="DEV", default=s,
                   help="a scratch device to format (checked by the guard, then confirmed)")
    p.add_argument("--workload", metavar="FILE", default=s, help="workload answers (TOML or JSON)")
    p.add_argument("--loop-size", metavar="SIZE", default="4GiB",
                   help="size of the loop device's backing file (default 4GiB)")
    p.add_argument("--loop-dir", metavar="DIR", default=None,
                   help="folder for the temporary backing file and mountpoint "
                   "(default: $TMPDIR or /var/tmp)")
    p.add_argument("--mkfs-options", metavar="OPTS", default=None,
                   help='side B mkfs.xfs options, e.g. "-n size=64k" (instead of the proposal)')
    p.add_argument("--mount-options", metavar="OPTS", default=None,
                   help='side B mount options, e.g. "logbsize=256k,noatime"')
    p.add_argument("--calibrate", action="store_true",
                   help="A/A run (B = A): measure the noise floor and store it")
    p.add_argument("--rounds", metavar="N", type=int, default=6,
                   help="pairs of rounds, fixed in advance (at least 6; default 6)")
    p.add_argument("--budget", metavar="SECONDS", type=float, default=100.0,
                   help="wall-time budget the workload is scaled to (default 100)")
    p.add_argument("--age", action="store_true",
                   help="fragment free space the same seeded way on both sides before measuring")
    p.add_argument("--no-direct-io", dest="direct_io", action="store_false",
                   help="loop device through the page cache of its backing file")
    p.add_argument("--calibration-file", metavar="FILE", default=None,
                   help="where noise floors are kept (default /var/lib/xfs-advisor/"
                   "calibration.json; env XFS_ADVISOR_CALIBRATION)")
    p.add_argument("--rules", metavar="DIR", default=s,
                   help="extra rules for the proposal (B), as `xfs-advisor --rules DIR` uses")
    p.add_argument("--yes", action="store_true",
                   help="with --device: do not ask to type the device name")
    add_workload_flags(p)
    for action in p._actions:
        if action.dest.startswith("answer:"):
            action.default = s


def _split_mount(text: str | None) -> list[str]:
    """--mount-options checked against what validate may pass (BadInput names the option)."""
    from advisor.bench.options import parse_mount

    return parse_mount(text).as_list()


def _split_mkfs(text: str | None) -> list[str]:
    """--mkfs-options checked against what validate may pass (BadInput names the option)."""
    from advisor.bench.options import parse_mkfs

    return parse_mkfs(text).argv()


def _progress_printer(as_json: bool) -> Any:
    tty = sys.stderr.isatty()

    def show(done: int, total: int, what: str) -> None:
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        if tty:
            end = "\n" if done >= total else ""
            print(f"\r[{bar}] {done}/{total} {what:<28}", end=end, file=sys.stderr, flush=True)
        elif not as_json and done % 2 == 0:
            print(f"[{bar}] {done}/{total} {what}", file=sys.stderr, flush=True)

    return show


def _say(line: str) -> None:
    print(f"xfs-advisor: {line}", file=sys.stderr)


def _confirm(device: str, plan_lines: list[str], *, yes: bool, as_json: bool) -> None:
    print("validate will run, on every round:", file=sys.stderr)
    for line in plan_lines:
        print(f"  {line}", file=sys.stderr)
    if yes:
        return
    print(f"This destroys everything on {device}. Type its name ({device}) to go on: ",
          end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip()
    if answer not in (device, device.removeprefix("/dev/")):
        raise BadInput(f"not confirmed (typed {answer!r}): nothing was done to {device}")


def run(args: argparse.Namespace) -> int:
    from advisor.answers import load_workload, workload_from_args
    from advisor.bench import run as bench
    from advisor.models.bench import SideConfig
    from advisor.models.units import parse_size
    from advisor.session import Session

    as_json = bool(getattr(args, "json", False))
    session = Session(sysroot=getattr(args, "sysroot", None),
                      rules_dir=getattr(args, "rules", None),
                      calibration_file=args.calibration_file)
    session.require_live("validate")  # a captured tree cannot be benchmarked
    if args.rounds < bench.MIN_PAIRS:
        raise BadInput(f"--rounds must be at least {bench.MIN_PAIRS} (pairs are fixed in advance)")
    if args.budget <= 0:
        raise BadInput("--budget must be positive")
    if args.calibrate and (args.mkfs_options or args.mount_options):
        raise BadInput("--calibrate compares defaults with themselves: drop --mkfs-options and "
                       "--mount-options")
    try:
        loop_size = parse_size(args.loop_size)
    except ValueError as err:
        raise BadInput(f"--loop-size: {err}") from None
    if loop_size < bench.MIN_DEVICE_BYTES:
        raise BadInput("--loop-size must be at least 1GiB (mkfs.xfs and the workload need room)")
    workload = workload_from_args(args)
    if not getattr(args, "workload", None) and not workload.answered():
        from importlib.resources import files

        workload = load_workload(str(files("advisor") / "data" / "example-workload.toml"))

    a = SideConfig(label="A")
    b: SideConfig | None
    if args.calibrate:
        b = SideConfig(label="B", source="calibration (B = A)")
    elif args.mkfs_options is not None or args.mount_options is not None:
        b = SideConfig(label="B", mkfs_options=_split_mkfs(args.mkfs_options),
                       mount_options=_split_mount(args.mount_options), source="given options")
    else:
        b = None  # the proposal, once the device is known

    device_arg = getattr(args, "device", None)
    plan = bench.Plan(a=a, b=b or SideConfig(label="B", source="proposal"), workload=workload,
                      pairs=args.rounds, device_bytes=loop_size, direct_io=args.direct_io,
                      age=args.age, calibrate=args.calibrate, budget_seconds=args.budget)
    if args.loop_dir:
        plan.loop_dir = os.path.realpath(args.loop_dir)
    # First, before the guard: a dead run's own mount on --device would make the guard refuse it.
    recovered = session.recover(_say, loop=not device_arg)
    progress = _progress_printer(as_json)
    if device_arg:
        from advisor.bench.guard import check_now
        from advisor.bench.hold import DeviceHold

        device = session.check_scratch(device_arg, recovered.test_filesystems)
        plan.device, plan.device_bytes = device.path, int(device.size_bytes.value or 0)
        if b is None:
            plan.b = session.proposal_side(session.propose(device, workload))
        # Held (O_EXCL) from the check through the prompt to the end of the run: nothing can
        # mount it, assemble it or re-bind it meanwhile; after the answer, check it all again
        # (a killed run's test filesystem, known by its UUID, is the one thing it may hold).
        with DeviceHold(device.path) as hold:
            _confirm(device.path, plan.commands(device.path), yes=args.yes, as_json=as_json)
            hold.verify()
            check_now(device.path, bench.MIN_DEVICE_BYTES,
                      ours=recovered.test_filesystems.get(device.maj_min or ""))
            report = session.run_validation(plan, progress=progress, say=_say, hold=hold,
                                            recovered=recovered)
    else:
        resolve = None if b is not None else session.loop_side(workload)
        report = session.run_validation(plan, progress=progress, resolve_b=resolve, say=_say,
                                        recovered=recovered)
    if report.device_left:
        _say(report.device_left)
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        from advisor.bench.report import render_text

        print(render_text(report))
    return EXIT_WORSE if report.verdict == "worse" and not report.calibrate else 0
