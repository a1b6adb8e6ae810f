"""The signals that end the advisor, named once for the command line, the runner, the benchmark's
clean-up and the TUI (which may import nothing of the system layer, so this sits at the bottom),
and the two ways a validation run handles them: raised as Terminated so that every `finally`
runs, or held while clean-up must not be cut in half."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

#: Signals that end the process the way Ctrl-C does: a `kill`, a closed terminal (an SSH drop),
#: SIGQUIT. Each must let the clean-up run first.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

#: Ctrl-C and the ending signals: what a clean-up holds off and a fork defers.
STOPPING_SIGNALS = (signal.SIGINT, *ENDING_SIGNALS)


class Terminated(KeyboardInterrupt):
    """A signal that ends the process, turned into an exception so that every `finally` runs."""


_held: list[int] | None = None
"""Signals caught while clean-up holds them (None: not holding)."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install_handlers(handler: Callable[[int, FrameType | None], None], *,
                     python_only: bool = False) -> dict[int, Any]:
    """Install `handler` for every stopping signal the process has not chosen to ignore (nohup's
    SIGHUP stays ignored); with `python_only`, only for those a Python handler has now (SIG_DFL
    stays the kernel's). Returns the previous handlers, for restore_handlers. The one place
    handlers are installed: a signal landing half-way, on a handler not yet replaced that
    raises, puts back those already replaced before the exception goes on (they would
    otherwise stay installed for good)."""
    previous: dict[int, Any] = {}
    try:
        for signum in STOPPING_SIGNALS:
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN or (python_only and not callable(current)):
                continue
            previous[signum] = current  # noted first: put back even if the next line is cut
            signal.signal(signum, handler)
    except BaseException:
        restore_handlers(previous)
        raise
    return previous


def restore_handlers(previous: dict[int, Any]) -> None:
    """Put `previous` handlers back (install_handlers' result), every one of them, even when a
    signal lands half-way on a handler already put back that raises (Terminated,
    KeyboardInterrupt): the first such exception is raised once all are back. (Blocking the
    signals meanwhile would not do: a signal sent to the process is taken by any thread that
    does not block it, and Python runs its handler in the main thread all the same.)"""
    remaining = list(previous.items())
    pending: BaseException | None = None
    while remaining:
        try:
            while remaining:
                signum, handler = remaining[0]
                signal.signal(signum, handler if callable(handler) or isinstance(handler, int)
                              else signal.SIG_DFL)
                del remaining[0]
        except KeyboardInterrupt as exc:  # Terminated too
            pending = pending or exc
    if pending is not None:
        raise pending


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM, SIGHUP and SIGQUIT raise Terminated (a
    KeyboardInterrupt) in the main thread, so a closed terminal or a `kill` cleans up too."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    if not _main_thread():  # a worker: the caller handles termination
        yield
        return
    previous = install_handlers(handler)
    try:
        yield
    finally:
        restore_handlers(previous)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Within the block, ending signals are held, not lost: clean-up (or making a resource and
    recording it) cannot be cut in half by a second Ctrl-C. When the block ends, a held signal
    is raised as Terminated, so the exit still says interrupted. Re-entrant."""
    global _held
    if _held is not None or not _main_thread():
        yield
        return

    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = install_handlers(hold)  # cut by a signal: nothing held, nothing left installed
    _held = caught
    try:
        yield
    finally:
        try:
            restore_handlers(previous)
        finally:
            _held = None
        if caught:
            raise Terminated(f"{signal.Signals(caught[0]).name} (held until clean-up ended)")
