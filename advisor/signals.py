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


def _install(handler: Callable[[int, FrameType | None], None]) -> dict[int, object]:
    """Install `handler` for every ending signal the process has not chosen to ignore (nohup's
    SIGHUP stays ignored). Returns the previous handlers."""
    previous: dict[int, object] = {}
    for signum in STOPPING_SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        previous[signum] = current
        signal.signal(signum, handler)
    return previous


def _restore(previous: dict[int, object]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler if callable(handler) or isinstance(handler, int)
                      else signal.SIG_DFL)


@contextlib.contextmanager
def stopping_signals_blocked() -> Iterator[None]:
    """Within the block, the stopping signals wait in the kernel (pthread_sigmask) and are
    delivered when it ends: handlers are swapped back without one landing half-way (a restored
    handler that raises would leave the others unrestored and the holding state set)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM, SIGHUP and SIGQUIT raise Terminated (a
    KeyboardInterrupt) in the main thread, so a closed terminal or a `kill` cleans up too."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    if not _main_thread():  # a worker: the caller handles termination
        yield
        return
    previous = _install(handler)
    try:
        yield
    finally:
        _restore(previous)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Within the block, ending signals are held, not lost: clean-up (or making a resource and
    recording it) cannot be cut in half by a second Ctrl-C. When the block ends, a held signal
    is raised as Terminated, so the exit still says interrupted. Re-entrant."""
    global _held
    if _held is not None or not _main_thread():
        yield
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        if _held is not None:
            _held.append(signum)

    caught: list[int] = []
    _held = caught
    previous = _install(hold)
    try:
        yield
    finally:
        with stopping_signals_blocked():
            _restore(previous)
            _held = None
        if caught:
            raise Terminated(f"{signal.Signals(caught[0]).name} (held until clean-up ended)")
