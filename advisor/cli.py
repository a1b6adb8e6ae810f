"""Entry point: `xfs-advisor [SUBCOMMAND]`. Never imports Textual (only advisor.tui does).

Each subcommand lives in advisor/commands/<name>.py and exposes `register(subparsers, common)` and
`run(args) -> int`; advisor.commands.parser builds the parser from them. Without a subcommand:
`--json`, `--device` or `--workload` ask for a proposal (advisor.commands.propose); otherwise, in
a terminal, the interactive advisor starts.
"""

from __future__ import annotations

import _thread
import argparse
import gc
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from advisor import SCHEMA_VERSION
from advisor.commands.parser import load, parse
from advisor.errors import EXIT_BUG, EXIT_INTERRUPTED, AdvisorError, BadInput
from advisor.render.inert import terminal
from advisor.signals import ENDING_SIGNALS

#: Metavars of arguments that name a file, a folder or a device (and what each names): an empty
#: one is a mistake (a variable that was not set), never "none" and never the current directory.
NAMING_METAVARS = {"FILE": "file", "DIR": "folder", "REPORT": "report file", "PATH": "path",
                   "DEV": "device", "DEVICE": "device"}


def _refuse_empty_names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """BadInput for `capture ""`, `--workload ''`, `--rules ''` and the like: an empty name was
    taken as "not given" (or as the current directory) without a word."""
    parsers = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and args.command in action.choices:
            parsers.append(action.choices[args.command])
    for p in parsers:
        for action in p._actions:
            if action.metavar in NAMING_METAVARS and getattr(args, action.dest, None) == "":
                name = action.option_strings[0] if action.option_strings else action.metavar
                where = f"{args.command} " if p is not parser else ""
                raise BadInput(f"{where}{name} is empty: name a "
                               f"{NAMING_METAVARS[str(action.metavar)]} (see {p.prog} --help)")


def _report(err: AdvisorError | str, code: int, as_json: bool) -> int:
    message = err.message if isinstance(err, AdvisorError) else err
    if as_json:
        kind = (err.kind if isinstance(err, AdvisorError)
                else "interrupted" if code == EXIT_INTERRUPTED else "internal")
        doc = {"schema_version": SCHEMA_VERSION, "error": {"kind": kind, "message": message,
                                                           "exit_code": code}}
        print(json.dumps(doc), file=sys.stderr)
    else:
        print(f"xfs-advisor: {terminal(message)}", file=sys.stderr)
    return code


def _raise_on_interrupt() -> None:
    """From here on Ctrl-C is a KeyboardInterrupt that main() turns into one line and exit 130
    (advisor.__main__ quits quietly on it while modules are still being imported)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = _resend_lost_interrupt


def _resend_lost_interrupt(unraisable: Any) -> None:
    """A Ctrl-C (or an ending signal raised as advisor.signals.Terminated) that lands
    in code the interpreter calls on its own (a weakref callback, a finalizer) cannot leave it:
    the interpreter prints "Exception ignored in: ..." and drops it, and the run went on to exit
    0 (seen once in 40 Ctrl-C'd proposals). The signal is sent again instead, to be raised where
    main() sees it. (The runner defers signals over a fork, the most frequent such place.)"""
    exc = unraisable.exc_value
    if not isinstance(exc, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)
        return
    name = exc.args[0] if type(exc) is not KeyboardInterrupt and exc.args else "SIGINT"
    signum = getattr(signal.Signals, str(name), signal.SIGINT)
    # From another thread, a moment later: sent from here, its handler would run at once,
    # still inside this hook, and be dropped again. A bare thread (_thread), whose start does
    # not wait: threading's Thread.start waits in Condition.wait, where another Ctrl-C can
    # break a lock (see advisor.system.runner.Process).
    _thread.start_new_thread(_send_later, (signum,))


def _send_later(signum: int) -> None:
    time.sleep(0.005)
    os.kill(os.getpid(), signum)


def _forget_interrupt() -> None:
    """CPython 3.11 notes a KeyboardInterrupt that leaves an eval() of a string (pydantic
    evaluates annotations that way while a model class is built) as unhandled, and at exit kills
    the process with SIGINT however the interrupt was handled: exit -2, not 130. Every eval() of
    a string starts by clearing that note, so one that succeeds leaves it clear."""
    eval("None")  # a constant string: nothing to inject


#: Commands that print what they build from bounded input and end: the cyclic garbage collector
#: stays off for their whole run (a proposal leaves about 500 objects in cycles behind).
QUICK_COMMANDS = frozenset({"devices", "propose", "explain", "rules", "schema", "completion",
                            "manpage"})
#: The interactive advisor (no subcommand, or `tui`): the collector stays off until its first
#: screen is drawn, and advisor.tui.app turns it back on then. Textual's import and the first
#: screen make few cycles, and collecting went over everything built so far again and again (3%
#: of the instructions to the first frame).
INTERACTIVE_COMMANDS = frozenset({None, "tui"})


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (the process's own when `argv` is None: advisor.__main__), its exit code.

    The process's own run changes the cyclic garbage collector, which is process-wide (a caller
    passing `argv`, such as a test, keeps its own). Starting a command builds a few hundred
    thousand objects that live until exit (modules, model classes, their validators) and makes
    almost no garbage cycles; every collection on the way traversed them again, and the
    interpreter's last one at exit traversed everything once more: about 60 M of a proposal's
    850 M instructions (callgrind). So the collector is off while the command starts; what was
    built is then frozen (gc.freeze: never traversed again) and the collector comes back for the
    run of any command not in QUICK_COMMANDS; at the end everything is frozen, so that the exit
    does not traverse it (Python never promised finalizers for objects still alive at exit)."""
    if argv is not None:
        return _main(list(argv), lambda command: None)
    gc.disable()
    try:
        return _main(sys.argv[1:], _started)
    finally:
        gc.freeze()


def _started(command: str | None) -> None:
    """The start of the process's own run is built: frozen, and collected again from here on
    unless the command is quick, or the interactive advisor (from its first screen on)."""
    gc.freeze()
    if command not in QUICK_COMMANDS and command not in INTERACTIVE_COMMANDS:
        gc.enable()


def _main(argv: list[str], started: Callable[[str | None], None]) -> int:
    as_json = "--json" in argv  # until the parser says otherwise: its own errors need it too
    _raise_on_interrupt()
    try:
        parser, args = parse(argv)
        as_json = bool(getattr(args, "json", False))
        _refuse_empty_names(parser, args)
        started(_command(args, as_json))
        return _dispatch(args, as_json)
    except AdvisorError as err:
        return _report(err, err.exit_code, as_json)
    except KeyboardInterrupt:
        _forget_interrupt()
        runner = sys.modules.get("advisor.system.runner")  # loaded only if it ran anything
        if runner is not None:
            runner.stop_children()
        return _report("interrupted", EXIT_INTERRUPTED, as_json)
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error worth a message.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: still one line, unless the developer asked for the traceback
        if os.environ.get("XFS_ADVISOR_DEBUG"):
            raise
        return _report(
            f"internal error: {type(exc).__name__}: {exc} "
            "(set XFS_ADVISOR_DEBUG=1 for a traceback)",
            EXIT_BUG,
            as_json,
        )


class Ended(KeyboardInterrupt):
    """An ending signal (SIGTERM, SIGHUP, SIGQUIT) raised as an interrupt, so that every `with`
    and `finally` runs: a proposal's mkfs.xfs dry-run image (/tmp/xfs-advisor-check-*/, a
    sparse file the size of the device) was left behind by a `kill` or a closed terminal."""


def _end_as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise Ended(signal.Signals(signum).name)


def _ending_signals_interrupt() -> None:
    """SIGTERM, SIGHUP and SIGQUIT end a command the way Ctrl-C does (one line, exit 130, temp
    files removed), unless the process was started ignoring them (nohup)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in ENDING_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _end_as_interrupt)


def _command(args: argparse.Namespace, as_json: bool) -> str | None:
    """The subcommand to run: the one named, else `propose` when the options ask for a
    proposal, else None (the interactive advisor)."""
    if args.command:
        return str(args.command)
    if as_json or args.device is not None or args.workload or args.device_file:
        return "propose"
    return None


def _dispatch(args: argparse.Namespace, as_json: bool) -> int:
    command = _command(args, as_json)
    if command is not None:
        if command != "tui":
            _ending_signals_interrupt()
        return int(load(command).run(args))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput("no terminal for the interactive advisor: use a subcommand or --json "
                       "(see xfs-advisor --help)")
    from advisor.tui.app import run_tui  # the only path that imports Textual

    return int(run_tui(args))
