"""`xfs-advisor profile PATH`: measure an existing tree instead of guessing the workload answers."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from advisor.errors import EXIT_INTERRUPTED, EXIT_OK, BadInput
from advisor.render.inert import terminal

#: Seconds between two progress lines.
PROGRESS_INTERVAL = 0.5


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "profile", parents=[common],
        help="measure an existing tree: file sizes, directory sizes, xattrs -> workload answers",
        description="Walk PATH (never following symlinks) and report files, directories, bytes, "
        "the largest directories, the directory-size and file-size distributions, extended "
        "attributes (sampled), hard links, sparse and special files, and the workload answers "
        "they support. Ctrl-C prints what was seen so far and exits 130.")
    p.add_argument("path", metavar="PATH", help="the tree to measure (a symlink here is followed)")
    p.add_argument("--write-workload", metavar="FILE", default=None,
                   help="merge the measured answers into FILE (TOML or JSON; created if missing), "
                   "keeping its other answers and comments")
    p.add_argument("-x", "--one-file-system", action="store_true",
                   help="do not descend into other filesystems mounted below PATH")
    p.add_argument("--top", type=_positive, default=10, metavar="N",
                   help="how many of the largest directories to list (default 10)")
    p.add_argument("--xattr-sample", type=_positive, default=10_000, metavar="N",
                   help="read extended attributes of at most N files and directories, a uniform "
                   "random sample (default 10000; 0 skips them)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr (default: when stderr is a terminal, without --json; "
                   "with --json, one JSON document per report)")


class ProgressLine:
    """Entries seen and rate on stderr, at most every PROGRESS_INTERVAL seconds. On a terminal the
    line rewrites itself; elsewhere (--progress into a log) each report is its own line; under
    --json each report is a JSON document of its own, so that stderr stays machine-readable."""

    def __init__(self, stream: TextIO, path: str, *, as_json: bool = False) -> None:
        self.stream = stream
        self.path = path
        self.as_json = as_json
        self.tty = stream.isatty() and not as_json
        self.last = 0.0
        self.started = False
        self.shown = False

    def __call__(self, entries: int, elapsed: float) -> None:
        now = time.monotonic()
        if not self.started:  # the walker's first call, once Ctrl-C already yields a report
            if self.as_json:
                self._show(0, 0.0)  # the walk has started (Ctrl-C now yields a report)
            else:
                print(f"profiling {terminal(str(self.path))} ...", file=self.stream, flush=True)
            self.started = True
            self.last = now
            return
        if now - self.last < PROGRESS_INTERVAL:
            return
        self.last = now
        self._show(entries, elapsed)

    def _show(self, entries: int, elapsed: float, end: str = "") -> None:
        rate = entries / elapsed if elapsed > 0 else 0.0
        if self.as_json:
            import json

            from advisor import SCHEMA_VERSION

            doc = {"schema_version": SCHEMA_VERSION, "progress": {
                "done": entries, "unit": "entries seen", "per_second": round(rate, 1),
                "finished": bool(end)}}
            self.stream.write(json.dumps(doc) + "\n")
            self.stream.flush()
            return
        text = f"  {entries:,} entries, {rate:,.0f}/s{end}"
        if self.tty:
            self.stream.write(f"\r{text}\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown = True

    def finish(self, entries: int, elapsed: float) -> None:
        """A log keeps the final count; a terminal gets its line back for the report."""
        if not self.tty:
            self._show(entries, elapsed, end=" (done)")

    def close(self) -> None:
        if self.tty and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _check_args(args: argparse.Namespace) -> None:
    """Refusals before the walk, which can take minutes: a --sysroot that cannot apply, and a
    --write-workload target that could never be written (a FIFO, a device, a folder)."""
    if getattr(args, "sysroot", None):
        raise BadInput("profile measures a live tree and does not read --sysroot: give the "
                       "tree's path (inside the capture, if that is what you mean)")
    if args.write_workload:
        from advisor.system.files import write_target

        write_target(args.write_workload, "workload file")


def run(args: argparse.Namespace) -> int:
    import json

    from advisor.console import notice
    from advisor.profile.report import printable, render_text
    from advisor.profile.walker import Walker, display_path

    _check_args(args)
    show_progress = (args.progress if args.progress is not None
                     else sys.stderr.isatty() and not args.json)
    progress = (ProgressLine(sys.stderr, printable(display_path(args.path)), as_json=args.json)
                if show_progress else None)
    walker = Walker(one_file_system=args.one_file_system, top_directories=args.top,
                    xattr_sample=args.xattr_sample, progress=progress)
    try:
        profile = walker.walk(args.path)
        if progress is not None:
            progress.finish(profile.entries, profile.elapsed_seconds)
    finally:
        if progress is not None:
            progress.close()

    if args.json:
        print(json.dumps(profile.model_dump(mode="json"), indent=2))
    else:
        from advisor.console import out

        out(render_text(profile))
    sys.stdout.flush()

    if profile.partial:
        notice("interrupted: the report covers only what was seen"
               + (", workload file not written" if args.write_workload else ""), args.json)
        return EXIT_INTERRUPTED
    if args.write_workload:
        if not profile.answers.model_dump(exclude_none=True):
            raise BadInput(f"nothing measured in {profile.path} to write to {args.write_workload}")
        # Here, not above: the workload model and the TOML writer cost start-up that a
        # profile which writes no file should not pay.
        from advisor.profile.workload_file import write_measured_answers

        _, kept = write_measured_answers(args.write_workload, profile.answers)
        note = "" if kept else " (rewritten from the answers: its comments could not be kept)"
        notice(f"wrote the measured answers to {args.write_workload}{note}", args.json)
    return EXIT_OK
