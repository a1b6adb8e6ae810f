"""A live view of one mounted XFS filesystem, for the TUI: its counters read each time it is
asked, the rates of the last interval and the findings over all the time since the view began.
Counters only: no perf process starts, so none can stay behind when the view closes; what needs
tracepoints (fsyncs, writers, forms) is `xfs-advisor observe`'s."""

from __future__ import annotations

from advisor.errors import BadInput, DeviceProblem
from advisor.models.observe import (
    ObserveDocument,
    RecordedFilesystem,
    RecordedReading,
    Recording,
    Tracing,
)
from advisor.models.units import human_size
from advisor.observe.observation import (
    Target,
    _still_mounted,
    _super_options,
    document_from,
    read_counters,
    resolve,
    xfs_info_text,
)
from advisor.observe.tracepoints import NEEDS_TRACEPOINTS
from advisor.profile.report import printable
from advisor.system.sysroot import SysRoot

#: Rates shown per refresh, at most (the busiest first).
SHOWN_RATES = 14
#: The rates plotted over time: what metadata work and the log are doing.
KEY_RATES = ("transactions", "log_forces", "log_writes", "creates", "removes", "xattr_sets")
#: What the live view's recording says of its tracing.
LIVE_TRACING = "the live view reads the counters only"


class LiveObservation:
    """One filesystem watched from now on: step() reads its counters again."""

    def __init__(self, target: Target, root: SysRoot) -> None:
        self.target, self.root = target, root
        self.xfs_info = xfs_info_text(target)
        self.first = self.last = self._read()
        self.steps = 0
        self.recording_from: RecordedReading | None = None
        """The reading a recording started from (None: not recording)."""

    def _read(self) -> RecordedReading:
        reading = read_counters(self.root, self.target)
        if reading is None or not _still_mounted(self.root, self.target):
            raise DeviceProblem(f"{self.target.mountpoint} is no longer mounted")
        return reading

    def step(self) -> tuple[ObserveDocument, ObserveDocument]:
        """(the last interval, everything since the view began), read now."""
        now = self._read()
        window, total = self._document(self.last, now), self._document(self.first, now)
        self.last = now
        self.steps += 1
        return window, total

    def start_recording(self) -> None:
        """Record from now on: the counters are read now, and again when it stops."""
        self.recording_from = self._read()

    def stop_recording(self) -> Recording:
        """What was recorded since start_recording, read now: the same recording as `observe
        --record FILE` makes (counters only), for `observe --replay FILE`."""
        if self.recording_from is None:
            raise BadInput("the live view is not recording")
        before, self.recording_from = self.recording_from, None
        return self._recording(before, self._read())

    def _recording(self, before: RecordedReading, after: RecordedReading) -> Recording:
        t = self.target
        recorded = RecordedFilesystem(mountpoint=t.mountpoint, device=t.name, maj_min=t.maj_min,
                                      mount_options=_super_options(t.entry),
                                      xfs_info=self.xfs_info, before=before, after=after)
        tracing = Tracing(method="none", reason=LIVE_TRACING,
                          findings_not_made=list(NEEDS_TRACEPOINTS))
        return Recording(seconds=max(after.at - before.at, 0.001), tracing=tracing,
                         filesystems=[recorded])

    def _document(self, before: RecordedReading, after: RecordedReading) -> ObserveDocument:
        return document_from(self._recording(before, after))


def live_observation(mountpoint: str, root: SysRoot | None = None) -> LiveObservation:
    """A live view of the XFS filesystem mounted at `mountpoint` (BadInput when it is not XFS
    or not mounted)."""
    root = root or SysRoot()
    targets = resolve([mountpoint], root)
    if not targets:
        raise BadInput(f"{mountpoint}: no mounted XFS filesystem")
    return LiveObservation(targets[0], root)


def key_rates(window: ObserveDocument) -> dict[str, float]:
    """The KEY_RATES of the last interval, per second, by label (one not read is left out)."""
    (fs,) = window.filesystems
    found = {r.name: r for r in fs.rates}
    return {found[name].label: found[name].per_second for name in KEY_RATES if name in found}


def live_text(window: ObserveDocument, total: ObserveDocument, steps: int) -> str:
    """The view: the last interval's rates, then the findings since the view began."""
    (fs,) = window.filesystems
    (whole,) = total.filesystems
    lines = [f"{printable(fs.mountpoint)} ({printable(fs.device)}): counters only, refreshed "
             f"every second ({steps} so far; xfs-advisor observe also counts tracepoints)",
             "", f"last {fs.seconds:.1f} s, per second:"]
    moving = sorted((r for r in fs.rates if r.evidence.delta), key=lambda r: -r.per_second)
    for r in moving[:SHOWN_RATES]:
        value = (human_size(r.per_second) + "/s" if r.name.endswith("bytes")
                 else f"{r.per_second:,.1f}")
        lines.append(f"  {r.label:<40} {value:>14}   {r.evidence.counter}")
    if not moving:
        lines.append("  (idle: no counter moved)")
    lines += ["", f"findings over the {whole.seconds:.0f} s since the view opened:"]
    lines += [f"  [{printable(f.rule)}] {printable(f.message)}" for f in whole.findings] or [
        "  none"]
    return "\n".join(lines) + "\n"
