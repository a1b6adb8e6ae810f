"""`xfs-advisor validate`: an A/B benchmark of mkfs.xfs/mount defaults (A) against the proposal or
the given options (B), on a loop device over a temporary file or on a scratch device.

Exit codes: 0 done (B not worse), 5 B is worse on some metric, 2/3/4 as everywhere else."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from advisor import SCHEMA_VERSION
from advisor.answers import add_workload_flags
from advisor.errors import BadInput
from advisor.models.limits import (
    DEFAULT_BUDGET,
    DEFAULT_LOOP_SIZE,
    DEFAULT_PAIRS,
    MAX_PAIRS,
    MIN_PAIRS,
)

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
    p.add_argument("--loop-size", metavar="SIZE", default=None,
                   help="size of the loop device's backing file (default "
                   f"{DEFAULT_LOOP_SIZE >> 30}GiB)")
    p.add_argument("--loop-dir", metavar="DIR", default=None,
                   help="folder for the temporary backing file and mountpoint "
                   "(default: $TMPDIR or /var/tmp)")
    p.add_argument("--mkfs-options", metavar="OPTS", default=None,
                   help='side B mkfs.xfs options, e.g. "-n size=64k" (instead of the proposal)')
    p.add_argument("--mount-options", metavar="OPTS", default=None,
                   help='side B mount options, e.g. "logbsize=256k,noatime"')
    p.add_argument("--calibrate", action="store_true",
                   help="A/A run (B = A): measure the noise floor and store it")
    p.add_argument("--rounds", metavar="N", type=int, default=DEFAULT_PAIRS,
                   help="pairs of rounds before the first look at the verdicts (at least "
                   f"{MIN_PAIRS}; default {DEFAULT_PAIRS}); then ABBA blocks (two pairs) are "
                   "added until every changed option's primary metric (its mechanism) is "
                   "decided, --max-rounds or the budget. --rounds N --max-rounds N is a fixed "
                   "design of N pairs. Odd numbers are rounded up to whole ABBA blocks")
    p.add_argument("--max-rounds", metavar="N", type=int, default=None,
                   help=f"most pairs the run may have (default {MAX_PAIRS}: the budget decides)")
    p.add_argument("--continue", dest="continue_from", metavar="REPORT", default=None,
                   help="add pairs to the loop-device run whose --json report is REPORT (same "
                   "sides, workload and margins; its pairs are kept and the intervals go on): "
                   "up to --max-rounds pairs in all, default what the report says would "
                   "likely resolve its open metrics")
    p.add_argument("--budget", metavar="SECONDS", type=float, default=None,
                   help="wall-time budget, set-up and clean-up included (default "
                   f"{DEFAULT_BUDGET:.0f}): the workload is scaled so that --rounds pairs take "
                   "about half of it, and no ABBA block is started that would likely overrun it")
    p.add_argument("--age", action="store_true",
                   help="fragment free space the same seeded way on both sides before measuring")
    p.add_argument("--no-direct-io", dest="direct_io", action="store_false",
                   help="loop device through the page cache of its backing file")
    p.add_argument("--calibration-file", metavar="FILE", default=None,
                   help="where noise floors are kept (default /var/lib/xfs-advisor/"
                   "calibration.json; env XFS_ADVISOR_CALIBRATION)")
    p.add_argument("--for", dest="for_device", metavar="DEV", default=None,
                   help="B is the proposal for DEV, as `xfs-advisor --device DEV` shows it, run "
                   "on the scratch device (options it cannot take are named and left out)")
    p.add_argument("--rules", metavar="DIR", default=s,
                   help="extra rules for the proposal (B), as `xfs-advisor --rules DIR` uses")
    p.add_argument("--attribute", action="store_true",
                   help="when B differs from A in several options and a metric or counter "
                   "differs: one more A/B run per option (A against A plus that option alone, "
                   "each with --rounds and --budget) to say which option moved what")
    p.add_argument("--report", metavar="FILE", default=None,
                   help="where the JSON report is saved (default: reports/validate-TIME.json "
                   "next to the calibration file); `--continue FILE` goes on from it")
    p.add_argument("--yes", action="store_true",
                   help="with --device: do not ask to type the device name")
    p.add_argument("--destroy-unrecognized-data", action="store_true",
                   help="with --device: format it even though it is not blank where "
                   "filesystems, partition tables and their backups live, while no signature "
                   "names what is there (a damaged filesystem libblkid and mkfs.xfs do not "
                   "see: it may be someone's data). Recognized data, mounts and users are "
                   "refused all the same")
    add_workload_flags(p, suppress=True)


def _split_mount(text: str | None) -> list[str]:
    """--mount-options checked against what validate may pass (BadInput names the option)."""
    from advisor.bench.options import parse_mount

    return parse_mount(text).as_list()


def _split_mkfs(text: str | None) -> list[str]:
    """--mkfs-options checked against what validate may pass (BadInput names the option)."""
    from advisor.bench.options import parse_mkfs

    return parse_mkfs(text).argv()


def _progress_printer(as_json: bool) -> Any:
    """Benchmark runs done out of the most the plan may have (one run = one side of one pair;
    the total is known from the start and never changes; a run whose metrics are decided
    early stops short of it). In a terminal one line redrawn in place; otherwise a
    line every other run; under --json a JSON document per run, so stderr stays JSON."""
    from advisor.render.inert import terminal

    tty = sys.stderr.isatty()

    def show(done: int, total: int, what: str) -> None:
        if as_json:
            doc = {"schema_version": SCHEMA_VERSION,
                   "progress": {"done": done, "total": total, "unit": "benchmark runs",
                                "step": what}}
            print(json.dumps(doc), file=sys.stderr, flush=True)
            return
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        counted = f"{done}/{total} benchmark runs, at most"
        if tty:
            end = "\n" if done >= total or what == "judging" else ""
            print(f"\r[{bar}] {counted}, {terminal(what):<28}", end=end, file=sys.stderr,
                  flush=True)
        elif done % 2 == 0:
            print(f"[{bar}] {counted}, {terminal(what)}", file=sys.stderr, flush=True)

    return show


def _sayer(as_json: bool) -> Any:
    """Lines for people during the run (what a recovery removed): JSON documents under --json."""
    from advisor.console import notice

    return lambda line: notice(line, as_json)


def _confirm(device: str, plan_lines: list[str], *, yes: bool, as_json: bool) -> None:
    """Show what will run on `device` and, without --yes, ask for its name. Under --json both are
    JSON documents on stderr (`notice` with the commands; the question as a `prompt`)."""
    question = f"This destroys everything on {device}. Type its name ({device}) to go on: "
    if as_json:
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "notice": {
            "message": "validate will run, on every round:", "commands": plan_lines}}
        print(json.dumps(doc), file=sys.stderr, flush=True)
        if not yes:
            doc = {"schema_version": SCHEMA_VERSION,
                   "prompt": {"message": question.strip(), "expects": device}}
            print(json.dumps(doc), file=sys.stderr, flush=True)
    else:
        from advisor.render.inert import terminal

        print("validate will run, on every round:", file=sys.stderr)
        for line in plan_lines:
            print(f"  {terminal(line)}", file=sys.stderr)
        if not yes:
            print(question, end="", file=sys.stderr, flush=True)
    if yes:
        return
    answer = sys.stdin.readline().strip()
    if answer not in (device, device.removeprefix("/dev/")):
        raise BadInput(f"not confirmed (typed {answer!r}): nothing was done to {device}")


def run(args: argparse.Namespace) -> int:
    from advisor.answers import load_workload, workload_from_args
    from advisor.bench.plan import Plan
    from advisor.models.bench import SideConfig
    from advisor.session import Session

    as_json = bool(getattr(args, "json", False))
    loop_size = _check_args(args)
    session = Session(rules_dir=getattr(args, "rules", None),
                      calibration_file=args.calibration_file)
    if args.continue_from is not None:
        return _continue(args, session, as_json)
    workload = workload_from_args(args)
    if not getattr(args, "workload", None) and not workload.answered():
        from importlib.resources import files

        workload = load_workload(str(files("advisor") / "data" / "example-workload.toml"))

    a = SideConfig(label="A")
    b: SideConfig | None
    if args.calibrate:
        b = SideConfig(label="B", source="calibration (B = A)")
    elif args.for_device and (args.mkfs_options is not None or args.mount_options is not None):
        raise BadInput("--for DEV validates the proposal for DEV: drop --mkfs-options and "
                       "--mount-options (or --for)")
    elif args.mkfs_options is not None or args.mount_options is not None:
        b = SideConfig(label="B", mkfs_options=_split_mkfs(args.mkfs_options),
                       mount_options=_split_mount(args.mount_options), source="given options")
    else:
        b = None  # the proposal, once the device is known

    device_arg = getattr(args, "device", None)
    plan = Plan(a=a, b=b or SideConfig(label="B", source="proposal"), workload=workload,
                pairs=args.rounds, max_pairs=args.max_rounds, device_bytes=loop_size,
                direct_io=args.direct_io,
                age=args.age, calibrate=args.calibrate,
                budget_seconds=args.budget or DEFAULT_BUDGET)
    plan.loop_dir = _loop_dir(args)
    say = _sayer(as_json)
    _say_if_unsaved(args, say)
    shown = None
    if args.for_device and not args.calibrate:
        # What `xfs-advisor --device DEV` shows, exactly; fitted to the scratch device below.
        target = session.device(args.for_device)
        shown = session.proposal_side(session.propose(target, workload))
        plan.proposed, plan.proposed_for = shown, target.path
    # First, before the guard: a dead run's own mount on --device would make the guard refuse it.
    recovered = session.recover(say, loop=not device_arg)
    progress = _progress_printer(as_json)
    if device_arg:
        from advisor.bench.hold import DeviceHold

        device = session.check_scratch(device_arg, recovered.test_filesystems,
                                       unrecognized_ok=args.destroy_unrecognized_data)
        plan.destroy_unrecognized = args.destroy_unrecognized_data
        plan.device, plan.device_bytes = device.path, int(device.size_bytes.value or 0)
        if shown is not None:
            plan.b, plan.not_applied = session.fit_to_scratch(shown, device, plan.device_bytes)
        elif b is None:
            plan.b = session.proposal_side(session.propose(device, workload))
            plan.proposed, plan.proposed_for = plan.b, device.path
        # Held (O_EXCL) from the check through the prompt to the end of the run: nothing can
        # mount it, assemble it or re-bind it meanwhile. After the answer, the run's first mkfs
        # checks it all again (as every later one does), before it writes.
        with DeviceHold(device.path) as hold:
            _confirm(device.path, plan.commands(device.path), yes=args.yes, as_json=as_json)
            with hold.lent():  # still held after the run, for --attribute's runs
                report = session.run_validation(plan, progress=progress, say=say, hold=hold,
                                                recovered=recovered)
            if args.attribute:
                _attribute(session, plan, report, progress, say, hold)
    else:
        if shown is not None:
            session.fit_loop(plan, shown, target.size_bytes.value or 0,
                             grow=args.loop_size is None)
            for line in _not_applied_lines(plan):
                say(line)
        resolve = None if b is not None or shown is not None else session.loop_side(workload)
        report = session.run_validation(plan, progress=progress, resolve_b=resolve, say=say,
                                        recovered=recovered)
        if args.attribute:
            _attribute(session, plan, report, progress, say, None)
    report.measured_answers = _measured_answers(getattr(args, "workload", None))
    return _print(report, as_json, say, args)


def _measured_answers(path: str | None) -> dict[str, str]:
    """The answers of the workload file marked as measured (observe, profile); a JSON file
    carries no marks."""
    if not path:
        return {}
    from advisor.profile.workload_file import measured_in
    from advisor.system.files import read_text

    return measured_in(read_text(path, "workload file"))


def report_path(args: argparse.Namespace) -> Any:
    """Where the run's JSON report is saved: --report, else a new file in `reports/` next to the
    calibration store (root: /var/lib/xfs-advisor/reports)."""
    from datetime import UTC, datetime
    from pathlib import Path

    from advisor.bench.calibration import CalibrationStore

    if getattr(args, "report", None):
        return Path(args.report)
    folder = CalibrationStore(_path(args.calibration_file)).path.parent / "reports"
    return folder / f"validate-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"


def _save(report: Any, path: Any, say: Any) -> Path | None:
    """The JSON report written (so that `--continue` works after a text run) and its path said;
    a file that cannot be written is said too, and the report is still printed."""
    from advisor.system.files import write_text_atomically

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        say(f"the report was not saved: cannot make folder {err.filename or path.parent}: "
            f"{err.strerror or err}")
        return None
    try:
        write_text_atomically(path, report.model_dump_json(indent=2) + "\n", "report")
    except (OSError, BadInput) as err:
        say(f"the report was not saved: {err}")
        return None
    say(f"report saved: {path} (`xfs-advisor validate --continue {path}` adds pairs)")
    return Path(path)


def _print(report: Any, as_json: bool, say: Any, args: argparse.Namespace | None = None) -> int:
    if report.device_left:
        say(report.device_left)
    saved = _save(report, report_path(args), say) if args is not None else None
    from advisor.console import out

    if as_json:
        out(report.model_dump_json(indent=2) + "\n", as_json=True)
    else:
        from advisor.render.validation import render_text

        out(render_text(report, saved=str(saved) if saved else None) + "\n")
    return EXIT_WORSE if report.verdict == "worse" and not report.calibrate else 0


def _attribute(session: Any, plan: Any, report: Any, progress: Any, say: Any,
               hold: Any) -> None:
    """--attribute after the combined run: why not, or the estimate, then the option runs."""
    choice = session.attribution_choice(plan, report, held=hold is not None)
    report.attribution_skipped = choice.why_not
    say(choice.announcement())
    if choice.why_not is None:
        report.attribution = session.attribute(plan, report, progress=progress, say=say,
                                               hold=hold)


def _continue(args: argparse.Namespace, session: Any, as_json: bool) -> int:
    """validate --continue REPORT: more pairs for a finished loop run (Session.more_rounds)."""
    from pydantic import ValidationError

    from advisor.models.bench import ValidationReport
    from advisor.system.files import read_text

    given = [flag for flag, value in (("--device", getattr(args, "device", None)),
                                      ("--calibrate", args.calibrate or None),
                                      ("--mkfs-options", args.mkfs_options),
                                      ("--mount-options", args.mount_options),
                                      ("--for", args.for_device)) if value is not None]
    if given:
        raise BadInput(f"--continue goes on with the report's own sides and device: drop "
                       f"{', '.join(given)}")
    text = read_text(args.continue_from, "report")
    try:
        earlier = ValidationReport.model_validate_json(text)
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join(str(p) for p in e["loc"]) or "the document"
        raise BadInput(f"--continue {args.continue_from}: not a `validate --json` report "
                       f"({where}: {e['msg']})") from None
    source = f"--continue {args.continue_from}"
    more = None
    if args.max_rounds is not None:
        more = args.max_rounds - earlier.rounds
        if more < 1:
            raise BadInput(f"--max-rounds {args.max_rounds}: the report already has "
                           f"{earlier.rounds} pairs")
    budget = args.budget
    say = _sayer(as_json)
    # Every refusal (the report's numbers held to the flags' bounds) before anything is made.
    session.continuation_plan(earlier, more, budget_seconds=budget, loop_dir=_loop_dir(args),
                              source=source)
    report = session.more_rounds(earlier, more, budget_seconds=budget, loop_dir=_loop_dir(args),
                                 progress=_progress_printer(as_json), say=say, source=source)
    return _print(report, as_json, say, args)





def _not_applied_lines(plan: Any) -> list[str]:
    return [f"not applied on the {plan.device_bytes >> 30} GiB scratch device: {n.option}: "
            f"{n.reason}" for n in plan.not_applied]


def _loop_dir(args: argparse.Namespace) -> str:
    """Where the work folder (and, for the loop default, the backing file) goes."""
    return str(args.loop_dir or os.environ.get("TMPDIR") or "/var/tmp")


def _check_args(args: argparse.Namespace) -> int:
    """Every refusal that needs no device, before anything is made or measured: the numbers
    (bounded, so that nothing is allocated for absurd ones), names, the calibration file, the
    host, then the folders the run will write to. Returns the loop size in bytes."""
    from advisor.bench import plan as bench
    from advisor.bench.calibration import CalibrationStore
    from advisor.bench.run import check_host
    from advisor.models.units import human_size, parse_size

    if getattr(args, "sysroot", None):
        raise BadInput("validate formats and measures devices of this machine: --sysroot "
                       "cannot apply (drop it)")
    if not MIN_PAIRS <= args.rounds <= MAX_PAIRS:
        raise BadInput(f"--rounds must be {MIN_PAIRS} to {MAX_PAIRS} (pairs before "
                       "the first look)")
    if args.max_rounds is not None and not args.rounds <= args.max_rounds <= MAX_PAIRS:
        raise BadInput(f"--max-rounds must be --rounds ({args.rounds}) to {MAX_PAIRS}")
    if args.budget is not None and not 0 < args.budget <= bench.MAX_BUDGET:  # also refuses nan
        raise BadInput(f"--budget must be more than 0 and at most {bench.MAX_BUDGET:.0f} seconds")
    if args.calibrate and (args.mkfs_options or args.mount_options):
        raise BadInput("--calibrate compares defaults with themselves: drop --mkfs-options and "
                       "--mount-options")
    device = getattr(args, "device", None)
    if device == "":
        raise BadInput("--device is empty: name a scratch device, or leave --device out for the "
                       "loop default")
    if device is not None:
        _check_name("--device", device)
    loop_dir = _loop_dir(args)
    _check_name("--loop-dir (or TMPDIR)", loop_dir)
    try:
        loop_size = parse_size(args.loop_size) if args.loop_size else DEFAULT_LOOP_SIZE
    except ValueError as err:
        raise BadInput(f"--loop-size: {err}") from None
    if loop_size < bench.MIN_DEVICE_BYTES:
        raise BadInput(f"--loop-size must be at least {bench.MIN_DEVICE_BYTES >> 30}GiB (mkfs.xfs "
                       "and the workload need room)")
    _check_report_folder(getattr(args, "report", None))
    CalibrationStore(_path(args.calibration_file)).check(writing=args.calibrate)
    check_host(need_loop=device is None)
    existing = bench.writable_folder("--loop-dir (or TMPDIR)", loop_dir)
    _check_state_folder()
    if device is None:
        free, headroom = bench.free_bytes(existing)
        if free < loop_size + headroom:
            raise BadInput(f"{loop_dir} has {human_size(free)} free: the {human_size(loop_size)} "
                           f"backing file needs that much plus {human_size(headroom)} to spare "
                           "(use a smaller --loop-size or another --loop-dir)")
    return loop_size


def _check_name(what: str, text: str) -> None:
    """A device or folder name the tools and the state file can carry: valid UTF-8 (the state
    file and fio's job file are UTF-8), no control characters."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{what} {text!r} is not valid UTF-8") from None
    if not text.isprintable():
        raise BadInput(f"{what} {text!r} holds control characters")


def _check_report_folder(report: str | None) -> None:
    """A --report FILE whose folder cannot be made or written is found now, not after the run
    (the report of the default place is only said not to be saved: it was not asked for)."""
    from advisor.bench.plan import writable_folder

    if report:
        writable_folder("--report", os.path.dirname(os.path.abspath(report)))


def _say_if_unsaved(args: argparse.Namespace, say: Any) -> None:
    """Before the run: the report's default place (not asked for: --report is refused instead)
    cannot be written, so the run's report will only be printed."""
    from advisor.bench.plan import folder_problem

    if getattr(args, "report", None):
        return
    existing, problem = folder_problem(str(report_path(args).parent))
    if problem is not None:
        say(f"the report will not be saved: {existing} is not a writable folder (give --report "
            "FILE to keep it, as `validate --continue` needs)")


def _check_state_folder() -> None:
    """The run records what it makes in the state folder first: it must be writable (a read-only
    one would fail after the loop device exists)."""
    from advisor.bench.journal import STATE_DIR_ENV, state_dir
    from advisor.bench.plan import existing_folder
    from advisor.errors import ToolProblem

    folder = state_dir()
    existing = existing_folder(str(folder))
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise ToolProblem(f"cannot write the state folder {folder}: {existing} is not a writable "
                          f"directory (set {STATE_DIR_ENV} to another folder)")


def _path(text: str | None) -> Any:
    from pathlib import Path

    return Path(text) if text else None
