"""Whether a process that left something behind is still alive: its pid and its start time
(field 22 of /proc/PID/stat), so that a reused pid is not taken for the process that made it."""

from __future__ import annotations

from advisor.system.sysroot import SysRoot


def process_stat(proc: SysRoot, pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state first), or None."""
    text = proc.read(f"proc/{pid}/stat")
    return text.rsplit(")", 1)[-1].split() if text else None


def process_start(proc: SysRoot, pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in ticks): tells a live process from a reused pid."""
    fields = process_stat(proc, pid)
    return fields[19] if fields and len(fields) > 19 else None


def alive(proc: SysRoot, pid: int, started: str | None) -> bool:
    """True while the process lives: same start time, and not a zombie (a dead process its
    parent has not reaped yet)."""
    fields = process_stat(proc, pid)
    if not fields or len(fields) <= 19 or fields[19] != started:
        return False
    return fields[0] not in ("Z", "X", "x")
