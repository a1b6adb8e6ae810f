"""`xfs-advisor observe [MOUNTPOINT ...]`: watch live XFS filesystems read-only for a while and
relate what the kernel counts to their geometry and to the guide's rules."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from advisor.errors import EXIT_OK, BadInput

if TYPE_CHECKING:
    from advisor.models.observe import Recording

#: Longest observation accepted (a day): perf's sleep and the report stay sane.
MAX_SECONDS = 86_400.0
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """`10`, `10s`, `500ms`, `2m`, `1h` -> seconds."""
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a duration such as 10s, 2m or 500ms, got "
                                         f"{text[:40]!r}")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not 0.1 <= seconds <= MAX_SECONDS:
        raise argparse.ArgumentTypeError("must be between 100ms and 24h")
    return seconds


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "observe", parents=[common],
        help="watch mounted XFS filesystems for a while: rates, writers, findings, answers",
        description="Read the per-mount XFS statistics and the block device's statistics at "
        "both ends of DURATION, count xfs tracepoints in the kernel with perf stat meanwhile "
        "(fsyncs, log space waits, metadata writers, directory and attribute forms), and report "
        "rates with the counters behind them and findings relating them to the filesystem's "
        "geometry and to the guide's rules. Read-only: it changes no setting. Without perf it "
        "uses the counters alone and says what it cannot tell.")
    _hide(p, "--sysroot")  # refused (_check_args): it watches the live system
    p.add_argument("paths", nargs="*", metavar="MOUNTPOINT",
                   help="a path on each XFS filesystem to watch (default: every mounted XFS)")
    p.add_argument("--for", dest="seconds", type=duration, default=10.0, metavar="DURATION",
                   help="how long to watch: 10s (default), 500ms, 2m, 1h")
    p.add_argument("--counters-only", action="store_true",
                   help="do not run perf: read the counters only (no tracepoint overhead)")
    p.add_argument("--ag-locks", action="store_true",
                   help="also count the locks taken on the AGs' headers and those that found "
                   "one held (ag-concurrency); costs metadata-heavy writers about 5%% more CPU")
    p.add_argument("--record", metavar="FILE", default=None,
                   help="also save the raw readings to FILE (JSON), for --replay anywhere")
    p.add_argument("--replay", metavar="FILE", default=None,
                   help="report a recording made with --record instead of watching")
    p.add_argument("--write-workload", metavar="FILE", default=None,
                   help="merge the measured answers (fsyncs per second, concurrent writers, "
                   "writer activity, attribute bytes per file, the largest value, a lower "
                   "bound on the largest directory) into FILE (TOML or JSON; created if "
                   "missing)")


def _hide(parser: argparse.ArgumentParser, option: str) -> None:
    """Leave `option` out of this parser's help and usage (it is still parsed, to be refused in
    one line). The shared parent's action is replaced by a copy: the other subcommands that
    take the option keep showing it."""
    import copy

    for i, action in enumerate(parser._actions):
        if option not in action.option_strings:
            continue
        hidden = copy.copy(action)
        hidden.help = argparse.SUPPRESS
        parser._actions[i] = hidden
        for name in action.option_strings:
            parser._option_string_actions[name] = hidden
        for group in parser._action_groups:
            group._group_actions[:] = [hidden if a is action else a
                                       for a in group._group_actions]


def _check_args(args: argparse.Namespace) -> None:
    """Refusals before anything is watched: --sysroot, a replay with watch options, and output
    files that could never be written (a FIFO, a device, a folder)."""
    from advisor.system.files import write_target

    if getattr(args, "sysroot", None):
        raise BadInput("observe watches the live system and does not read --sysroot (record "
                       "with --record FILE, replay with --replay FILE)")
    if args.replay and (args.paths or args.record or args.counters_only or args.ag_locks):
        raise BadInput("--replay reports a recording: it takes no MOUNTPOINT, --record, "
                       "--counters-only or --ag-locks")
    if args.ag_locks and args.counters_only:
        raise BadInput("--ag-locks counts tracepoints: it cannot go with --counters-only")
    for path, what in ((args.write_workload, "workload file"), (args.record, "recording")):
        if path:
            write_target(path, what)


def load_recording(path: str) -> Recording:
    """A recording file, checked: BadInput in one line for anything else."""
    import json

    from pydantic import ValidationError

    from advisor.models.observe import Recording
    from advisor.system.files import read_text

    text = read_text(path, "recording")
    try:
        return Recording.model_validate(json.loads(text))
    except (ValueError, ValidationError) as err:
        first = str(err).splitlines()
        detail = (f"{err.errors()[0]['loc']}: {err.errors()[0]['msg']}"
                  if isinstance(err, ValidationError) and err.errors() else first[0] if first
                  else "")
        raise BadInput(f"{path} is not an observe recording ({detail[:120]})") from None


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from advisor.console import notice, out
    from advisor.observe.observation import Observer, document_from, recording_text, resolve
    from advisor.observe.report import render_text
    from advisor.system.files import write_text_atomically
    from advisor.system.sysroot import SysRoot

    _check_args(args)
    if args.replay:
        recording = load_recording(args.replay)
    else:
        root = SysRoot()
        targets = resolve(args.paths, root)

        def begun() -> None:
            how = ("counters and tracepoints" if observer.tracing.method == "perf-stat"
                   else "counters only")
            notice(f"observing {len(targets)} XFS filesystem(s) for {args.seconds:g} s ({how})",
                   args.json)

        observer = Observer(targets, args.seconds, tracing=not args.counters_only, root=root,
                            started=begun, ag_locks=args.ag_locks)
        try:
            recording = observer.run()
        finally:
            observer.stop()
        if args.record:
            write_text_atomically(args.record, recording_text(recording), "recording")
    doc = document_from(recording)
    # Command names, mount points and a replayed file's text are untrusted: out() shows every
    # control, escape or bidi character escaped, in the page and in the JSON alike.
    if args.json:
        out(json.dumps(doc.model_dump(mode="json"), indent=2) + "\n", as_json=True)
    else:
        out(render_text(doc))
    sys.stdout.flush()
    if args.record:
        notice(f"recorded the readings to {args.record}", args.json)
    if args.write_workload:
        from advisor.profile.workload_file import write_measured_answers

        if not doc.answers.model_dump(exclude_none=True):
            raise BadInput(f"nothing measured to write to {args.write_workload}: the "
                           "filesystems were idle")
        from advisor.observe.observation import ANSWER_NOTES

        _, kept = write_measured_answers(args.write_workload, doc.answers, tool="observe",
                                         notes=ANSWER_NOTES)
        note = "" if kept else " (rewritten from the answers: its comments could not be kept)"
        notice(f"wrote the measured answers to {args.write_workload}{note}", args.json)
    return EXIT_OK
