"""`xfs-advisor fleet DIR`: one report from the results the Ansible role (ansible/) stored on the
controller, one folder per host (what ansible/roles/xfs_advisor/files/collect.sh packs):

    HOST/capture/          `xfs-advisor capture` of the host (a --sysroot tree)
    HOST/audit.out, .rc    `xfs-advisor audit --json` on the host, and its exit status
    HOST/proposals/DEV.*   the host's own `propose --json` for each device named in its vars
    HOST/devices           those device names, one a line
    HOST/workload.json     the workload answers from the host's vars
    HOST/observe.out, .rc  `xfs-advisor observe --json` on the live host (when asked)
    HOST/*.err, *.rc       each step's stderr and exit status; tool.err: no tool on the host
    HOST/uid, sysroot      who ran it, and the tree it read instead of the live system (if any)
    HOST/collected_at      when the collection started (UTC, ISO 8601)
    HOST/error.txt         alone: the host failed before it could collect (Ansible's error)

Findings are the host's own audit (first-hand xfs_info / xfs_db -r reads). Proposals are made
again here, on a Session over the host's capture, with this machine's rules and xfsprogs: a rule
change is seen across the fleet without touching the hosts. Hosts are advised in a process pool
(one Session per host) forked from the report's process after its first host; workers keep one
rule book and the proposals already made for an identical device, environment and workload (their
own and, through a folder of the report's, each other's: one being made by a worker is waited for
by the others), and return one small record per host.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from advisor.errors import AdvisorError, BadInput
from advisor.models.audit import SEVERITIES, AuditDocument
from advisor.models.device import Device, Inventory, media_label
from advisor.models.fleet import (
    FleetDevice,
    FleetDocument,
    FleetFinding,
    FleetHost,
    FleetObservation,
    FleetObserveRule,
    FleetProposal,
    FleetProposalChange,
    FleetReason,
    FleetRule,
    FleetRuleChange,
    FleetShape,
    FleetSince,
    FleetWarning,
)
from advisor.models.session import Advising
from advisor.models.units import human_size
from advisor.models.workload import Workload
from advisor.signals import ENDING_SIGNALS

if TYPE_CHECKING:
    from collections.abc import Callable

    from advisor.engine.rulebook import RuleBook


class OpenSession(Protocol):
    """What makes a host's session (advisor.session.Session, passed by the command): over its
    capture, with a rule book and this machine's xfsprogs shared by every host of a worker."""

    def __call__(self, sysroot: str, *, rulebook: RuleBook,
                 local_xfsprogs: Callable[[], str | None]) -> Advising: ...

#: Devices a report lists without being named: top-level ones, less these kinds.
UNLISTED_KINDS = ("loop", "zram", "rom")

#: Severities by rank, worst first (0).
RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}

#: The kind of a row for an fstab line whose device is not on the host.
ABSENT = "absent"

#: Per worker process: the rules, and proposals made for (device, environment, workload).
_RULES_DIR: str | None = None
_OPEN: OpenSession | None = None
_BOOK: RuleBook | None = None
_MADE: dict[str, FleetProposal | str] = {}
#: Per worker process: the target kernel (--kernel) and its version, or None.
_KERNEL: tuple[str, tuple[int, int]] | None = None
_MADE_MAX = 4096
#: Per worker process: the folder the report's workers share their proposals through (None: the
#: report runs in one process).
_SHARED: str | None = None


def _first_line(text: str) -> str:
    """The message of a tool's stderr: a --json error document's message, else its last line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            return str(doc["error"].get("message", line))
    return lines[-1].removeprefix("xfs-advisor: ") if lines else ""


#: Largest result file read from a host's folder: an audit of a host with many filesystems is a
#: few MiB; anything larger is not what the role stores (a crafted or broken result).
MAX_RESULT_BYTES = 32 << 20


def _read(folder: Path, name: str) -> str | None:
    """A result file's text, None when the host has none. Regular files only, never through a
    symlink, at most MAX_RESULT_BYTES, opened without waiting: a FIFO, a device node (/dev/zero)
    or a huge file makes the host a failed record (BadInput), never a hang or a MemoryError."""
    path = folder / name
    if not os.path.lexists(path):
        return None
    from advisor.system.files import read_text

    return read_text(path, f"result file {name} of host {folder.name}:", MAX_RESULT_BYTES,
                     follow_symlinks=False, errors="replace")


def _rc(folder: Path, step: str) -> int | None:
    text = _read(folder, f"{step}.rc")
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _step_error(folder: Path, step: str, ok: tuple[int, ...] = (0,)) -> str | None:
    """The error of a step that ran and failed (None when it succeeded)."""
    rc = _rc(folder, step)
    if rc is None:
        return f"{step}: no result (the collection stopped before it)"
    if rc in ok:
        return None
    why = _first_line(_read(folder, f"{step}.err") or "") or "no message"
    return f"{step} failed (exit {rc}): {why}"


def _failed(host: str, error: str, **known: str | None) -> FleetHost:
    return FleetHost(host=host, status="failed", error=error, **known)


def _top(inventory: Inventory, device: Device) -> Device:
    """The top-level device under `device` (itself when it has no parents)."""
    seen = {device.name}
    while device.parents:
        parent = inventory.get(device.parents[0])
        if parent is None or parent.name in seen:
            break
        seen.add(parent.name)
        device = parent
    return device


def _shape_of(devices: list[FleetDevice]) -> str:
    return "; ".join(
        f"{d.name} {d.kind}/{d.media} {human_size(d.size_bytes) if d.size_bytes else '?'}"
        + (f" stripe {human_size(d.sunit_bytes)}x{d.swidth_bytes // d.sunit_bytes}"
           if d.sunit_bytes and d.swidth_bytes else "")
        for d in devices)


def _book() -> RuleBook:
    global _BOOK
    if _BOOK is None:
        from advisor.engine.rulebook import load_rulebook

        _BOOK = load_rulebook(Path(_RULES_DIR) if _RULES_DIR else None)
    return _BOOK


_XFSPROGS: list[str | None] = []


def _local_xfsprogs() -> str | None:
    """This machine's xfsprogs version, asked once per process (it makes every host's checks)."""
    if not _XFSPROGS:
        from advisor.system.versions import xfsprogs_version

        _XFSPROGS.append(xfsprogs_version())
    return _XFSPROGS[0]


def _propose(session: Advising, device: Device, workload: Workload) -> FleetProposal | str:
    """The proposal (or why there is none), made once per identical device, environment and
    workload in this process."""
    key = "\0".join((device.model_dump_json(), session.environment.model_dump_json(),
                     workload.model_dump_json()))
    made = _MADE.get(key)
    if made is None:
        made = _shared(key)
    if made is None:
        with _making(key) as ours:
            # Another worker making it: its result is waited for (the first hosts of each
            # worker are of the same shapes, and each would make the same proposals at once).
            made = _shared(key) if ours else _wait_for(key)
            if made is None:
                made = _make(session, device, workload)
                _share(key, made)
    if key not in _MADE:
        if len(_MADE) >= _MADE_MAX:
            _MADE.clear()
        _MADE[key] = made
    return made.model_copy() if isinstance(made, FleetProposal) else made


def _make(session: Advising, device: Device, workload: Workload) -> FleetProposal | str:
    try:
        proposal = session.propose(device, workload)
    except AdvisorError as err:
        return err.message
    return FleetProposal(
        mkfs_command=proposal.mkfs_command, mount_options=proposal.mount_options,
        fstab=proposal.fstab,
        reasons=[FleetReason(setting=d.setting, value=d.value, default=d.default, rule=d.rule,
                             reason=d.reason)
                 for d in proposal.decisions if d.changed],
        warnings=[FleetWarning(rule=w.rule, message=w.message) for w in proposal.warnings])


#: Longest a worker waits for a proposal another worker is making before making it itself.
MAKING_WAIT = 60.0


@contextlib.contextmanager
def _making(key: str) -> Iterator[bool]:
    """Whether this worker is the one to make `key`'s proposal: the first to create its mark in
    the shared folder (removed when done, whatever happens). True in a report of one process,
    or when the mark cannot be made."""
    path = _shared_path(key)
    if path is None:
        yield True
        return
    mark = f"{path}.making"
    try:
        os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        yield False
        return
    except OSError:
        yield True
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(mark)


def _wait_for(key: str) -> FleetProposal | str | None:
    """The proposal another worker is making for `key`, once it is shared; None when its mark
    went without it (that worker failed) or after MAKING_WAIT seconds."""
    import time

    path = _shared_path(key)
    until = time.monotonic() + MAKING_WAIT
    while path is not None and time.monotonic() < until:
        made = _shared(key)
        if made is not None or not os.path.lexists(f"{path}.making"):
            return made if made is not None else _shared(key)
        time.sleep(0.005)
    return None


def _shared_path(key: str) -> str | None:
    if _SHARED is None:
        return None
    import hashlib

    return os.path.join(_SHARED, hashlib.sha256(key.encode()).hexdigest())


def _shared(key: str) -> FleetProposal | str | None:
    """The proposal another worker of the report made for `key`, if any (a dry run of mkfs.xfs
    costs as much CPU time as ten hosts' reading; each is made once per report, not per
    worker). The folder is the report's own (mode 0700); what a worker could not read is made
    again."""
    import pickle

    path = _shared_path(key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            found_key, made = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None
    return made if found_key == key and isinstance(made, FleetProposal | str) else None


def _share(key: str, made: FleetProposal | str) -> None:
    """Leave `made` for the other workers: written aside, then renamed into place (a worker
    reads a whole file or none)."""
    import pickle

    path = _shared_path(key)
    if path is None:
        return
    part = f"{path}.{os.getpid()}"
    try:
        with open(part, "wb") as f:
            pickle.dump((key, made), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(part)


def advise_host(folder: Path) -> FleetHost:
    """One host's record from its results folder. Never raises for what is in the folder: a
    host whose results are missing or unusable is a failed record with the reason."""
    host = folder.name
    try:
        return _advise(folder)
    except AdvisorError as err:
        return _failed(host, err.message)
    except (OSError, ValueError) as err:
        return _failed(host, f"unreadable results: {err}")


def _collected_at(folder: Path) -> str | None:
    """The host's collected_at, when it is a UTC time in ISO 8601 (anything else: unknown)."""
    from datetime import UTC, datetime

    text = (_read(folder, "collected_at") or "").strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.utcoffset() is None or when.utcoffset():
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _advise(folder: Path) -> FleetHost:
    assert _OPEN is not None, "advise_hosts sets the session opener first"
    host = folder.name
    error = _read(folder, "error.txt")
    if error is not None:
        return _failed(host, error.strip() or "failed (no message)")
    collected_at = _collected_at(folder)
    if (folder / "tool.rc").exists():
        return _failed(host, _first_line(_read(folder, "tool.err") or "") or "no xfs-advisor",
                       collected_at=collected_at)
    version = (_read(folder, "version.out") or "").strip().removeprefix("xfs-advisor ") or None
    for step, ok in (("capture", (0,)), ("audit", (0, 6))):
        why = _step_error(folder, step, ok)
        if why:
            return _failed(host, why, tool_version=version, collected_at=collected_at)
    audit = AuditDocument.model_validate_json(_read(folder, "audit.out") or "")
    if _KERNEL is not None:
        from advisor.audit.kernel import at_kernel

        audit = at_kernel(audit, *_KERNEL)
    known = {"tool_version": version, "kernel": audit.kernel, "xfsprogs": audit.xfsprogs,
             "collected_at": collected_at}
    uid = (_read(folder, "uid") or "").strip()
    if uid != "0" and not (_read(folder, "sysroot") or "").strip():
        return _failed(host, f"not run as root (uid {uid or '?'}): the capture lacks libblkid's "
                       "probes and the audit could not read on-disk formats (use become)",
                       **known)
    try:
        session = _OPEN(str(folder / "capture"), rulebook=_book(),
                        local_xfsprogs=_local_xfsprogs)
        inventory = session.inventory()
    except AdvisorError as err:
        return _failed(host, f"unusable capture: {err.message}", **known)
    named = [n.strip() for n in (_read(folder, "devices") or "").splitlines() if n.strip()]
    workload = Workload.model_validate_json(_read(folder, "workload.json") or "{}")

    rows: dict[str, FleetDevice] = {}
    for device in inventory.devices:
        if not device.parents and device.kind not in UNLISTED_KINDS:
            rows[device.name] = _row(device, named=False)
    for name in named:
        wanted = inventory.get(name)
        if wanted is None:
            rows[name] = FleetDevice(name=name, kind="?", media="?", size_bytes=None,
                                     sunit_bytes=None, swidth_bytes=None, stripe_source="none",
                                     findings={}, named=True,
                                     proposal_error=f"no device {name} in the capture")
            continue
        row = rows.setdefault(wanted.name, _row(wanted, named=True))
        row.named = True
        made = _propose(session, wanted, workload)
        if isinstance(made, str):
            row.proposal_error = made
        else:
            made.same_as_host = _same_as_host(folder, name, made)
            row.proposal = made
    findings: list[FleetFinding] = []
    for fs in audit.filesystems:
        findings += [FleetFinding(rule=f.rule, severity=f.severity, title=f.title,
                                  due_kernel=f.due_kernel, device=fs.device,
                                  mountpoint=fs.mountpoint)
                     for f in fs.findings]
        on = inventory.get(fs.device) if fs.device else None
        if on is None:
            if not fs.findings:
                continue
            # An fstab line whose disk is not here: a row of its own, so that its findings
            # (an option the next kernel refuses...) are counted with the host's devices.
            name = f"{fs.device or fs.mountpoint or '?'} (absent)"
            found = rows.setdefault(name, FleetDevice(
                name=name, kind=ABSENT, media="-", size_bytes=None, sunit_bytes=None,
                swidth_bytes=None, stripe_source="none", findings={}, named=False))
        else:
            top = _top(inventory, on)
            there = rows.get(on.name) or rows.get(top.name)
            found = there if there is not None else rows.setdefault(top.name,
                                                                    _row(top, named=False))
        for finding in fs.findings:
            found.findings[finding.severity] = found.findings.get(finding.severity, 0) + 1
    devices = list(rows.values())
    hardware = [d for d in devices if d.kind not in (*UNLISTED_KINDS, "?", ABSENT)]
    seconds, observed, observe_error = _observation(folder)
    return FleetHost(host=host, status="ok", devices=devices, shape=_shape_of(hardware),
                     counts={s: audit.counts.get(s, 0) for s in SEVERITIES},
                     findings=findings, observed_seconds=seconds, observe_findings=observed,
                     observe_error=observe_error, **known)


def _observation(folder: Path) -> tuple[float | None, list[FleetObservation], str | None]:
    """The host's observe step, if it ran: (seconds, findings, error). The findings are made
    again from the figures the host measured, with this machine's rules, as proposals are."""
    from pydantic import ValidationError

    from advisor.models.observe import ObserveDocument
    from advisor.observe.findings import findings_for

    if not os.path.lexists(folder / "observe.rc"):
        return None, [], None
    why = _step_error(folder, "observe")
    if why:
        return None, [], why
    try:
        doc = ObserveDocument.model_validate_json(_read(folder, "observe.out") or "")
    except ValidationError as err:
        return None, [], f"observe: unusable output ({_first_line(str(err))})"
    found = [FleetObservation(rule=f.rule, mountpoint=fs.mountpoint, message=f.message)
             for fs in doc.filesystems for f in findings_for(fs)]
    return doc.seconds, found, None


def _row(device: Device, *, named: bool) -> FleetDevice:
    stripe = device.stripe
    usable = stripe.sunit_bytes is not None and stripe.ignored_reason is None
    return FleetDevice(name=device.name, kind=device.kind, media=media_label(device),
                       size_bytes=device.size_bytes.value,
                       sunit_bytes=stripe.sunit_bytes if usable else None,
                       swidth_bytes=stripe.swidth_bytes if usable else None,
                       stripe_source=stripe.source, findings={}, named=named)


class _TheirProposal(BaseModel):
    mkfs_command: Any


class _TheirDocument(BaseModel):
    """What _same_as_host reads of a host's `propose --json`: only its mkfs command, so the
    rest of the document (device facts, decisions: ~20 KiB) is checked as JSON but never made
    into Python objects (a fifth of the time of json.loads)."""

    proposal: _TheirProposal


def _same_as_host(folder: Path, name: str, made: FleetProposal) -> bool | None:
    """Whether the host's own proposal for `name` had the same mkfs.xfs command."""
    text = _read(folder / "proposals", f"{name.rsplit('/', 1)[-1]}.out")
    if not text:
        return None
    try:
        theirs = _TheirDocument.model_validate_json(text).proposal.mkfs_command
    except ValueError:  # not JSON, or no proposal.mkfs_command in it
        return None
    return bool(theirs == made.mkfs_command)


def _init_worker(rules_dir: str | None, open_session: OpenSession,
                 kernel: tuple[str, tuple[int, int]] | None = None,
                 book: RuleBook | None = None, shared: str | None = None) -> None:
    """`book`: the rule book of `rules_dir`, already loaded (None: loaded when first needed);
    `shared`: the folder where the report's workers leave their proposals for each other."""
    global _RULES_DIR, _OPEN, _BOOK, _KERNEL, _SHARED
    _RULES_DIR, _OPEN, _BOOK, _KERNEL, _SHARED = rules_dir, open_session, book, kernel, shared
    _MADE.clear()


def _forkable() -> bool:
    """Whether workers can be forked from this process: only while no other thread runs (a
    fork copies a lock another thread may hold, and the child could wait for it forever). The
    threads of a proposal's mkfs.xfs dry runs end once their run is read: waited for, briefly
    (as the runner waits: Ctrl-C breaks no lock)."""
    from advisor.system.mkfs import end_ahead

    if not hasattr(os, "fork"):
        return False
    return end_ahead(2) and threading.active_count() == 1


def host_folders(results: Path) -> list[Path]:
    """The hosts' folders in `results` (hidden ones are the role's work in progress)."""
    if not results.is_dir():
        raise BadInput(f"fleet results {results} is not a readable directory")
    try:
        folders = sorted(p for p in results.iterdir()
                         if p.is_dir() and not p.name.startswith("."))
    except OSError as err:
        raise BadInput(f"cannot read fleet results {results}: {err.strerror or err}") from None
    if not folders:
        raise BadInput(f"fleet results {results} holds no host folder (run ansible/playbook.yml "
                       "with xfs_advisor_results_dir pointing there)")
    return folders


def advise_hosts(folders: list[Path], open_session: OpenSession, rules_dir: str | None = None,
                 jobs: int | None = None, kernel: tuple[str, tuple[int, int]] | None = None,
                 book: RuleBook | None = None,
                 notice: Callable[[str], None] | None = None) -> Iterator[FleetHost]:
    """Each host's record, in order; `jobs` worker processes (default: one per CPU), each
    making its hosts' sessions with `open_session` (a class or function a worker can import);
    `kernel`: the target kernel its findings are judged for as well (advisor.audit.kernel);
    `book`: the rule book of `rules_dir`, when the caller has loaded it; `notice`: told, in one
    line, when a worker died and this process advised the hosts the workers had not given back.

    The first host is advised in this process; the workers are then forked from it (when no
    other thread runs here), and start with what that host needed: the modules imported, the
    rule book, this machine's xfsprogs version and the proposals made. A worker started afresh
    (forkserver, the fallback) spends as much CPU time as a hundred hosts on these. The workers
    leave the proposals they make in a folder of the report's for each other (_share)."""
    global _SHARED
    jobs = max(1, jobs or len(os.sched_getaffinity(0)))
    if jobs == 1 or len(folders) < 4:
        _init_worker(rules_dir, open_session, kernel, book)
        yield from (advise_host(f) for f in folders)
        return
    with tempfile.TemporaryDirectory(prefix="xfs-advisor-fleet.") as shared:
        _init_worker(rules_dir, open_session, kernel, book, shared)
        try:
            yield advise_host(folders[0])
            yield from _pool(folders[1:], jobs, (rules_dir, open_session, kernel, None, shared),
                             notice)
        finally:
            _SHARED = None


def _pool(folders: list[Path], jobs: int,
          initargs: tuple[str | None, OpenSession, tuple[str, tuple[int, int]] | None,
                          RuleBook | None, str | None],
          notice: Callable[[str], None] | None = None) -> Iterator[FleetHost]:
    """The records of `folders` from `jobs` workers, forked from this process when it can be,
    else started by the forkserver with _init_worker(*initargs).

    A worker that dies (the kernel's OOM killer, an admin's kill) breaks the pool: the others
    are stopped, and the hosts not yet given back are advised in this process, in order, with
    `notice` told so. The report never depends on the workers, as a scan never depends on its
    read's child (advisor.inspect.parallel).

    This process (the command line's main thread, where Ctrl-C is raised) never waits in
    threading's Python code, where a second interrupt can leave a lock released by the wrong
    thread (advisor.system.runner.Process): the pool is started (its manager thread's
    Thread.start) and shut down (its Thread.join) with Ctrl-C and the ending signals deferred
    (runner.signals_deferred), and each piece's records are waited for on a bare lock its
    done-callback sets (runner.Done), not in Future.result. On an interrupt or any error
    the pieces not yet started are cancelled and the workers killed before the pool is shut
    down, so that the shut-down is short."""
    from advisor.system.runner import signals_deferred

    chunks = max(1, min(32, len(folders) // (jobs * 8)))
    pieces = [folders[i:i + chunks] for i in range(0, len(folders), chunks)]
    forked = _forkable()
    # A forked worker has this process's state (_init_worker's above): it only sets its signals.
    initializer: Callable[..., None] = _worker_signals if forked else _start_worker
    context = multiprocessing.get_context("fork" if forked else "forkserver")
    pool: ProcessPoolExecutor | None = None
    waiting: list[Future[list[FleetHost]]] = []  # last first: each let go of once read
    try:
        with signals_deferred():  # the first submit starts the workers and the manager thread
            pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                       initializer=initializer,
                                       initargs=() if forked else initargs)
            for piece in reversed(pieces):
                waiting.append(pool.submit(_advise_piece, piece))
        while waiting:
            _piece_done(waiting[-1])
            try:
                hosts = waiting[-1].result()
            except BrokenProcessPool:
                break
            waiting.pop()
            yield from hosts
    finally:
        if pool is not None:
            _shut(pool, waiting)
    left = pieces[len(pieces) - len(waiting):]
    if left and notice is not None:
        notice(f"a worker process ended abruptly (killed, or out of memory): the "
               f"{sum(map(len, left))} hosts not yet reported are advised in this process")
    for piece in left:
        yield from _advise_piece(piece)


def _worker_signals() -> None:
    """A worker ignores Ctrl-C (the report, in the terminal's group too, kills its workers and
    says so in one line; a worker's KeyboardInterrupt could print a traceback), and ends on SIGTERM,
    SIGHUP or SIGQUIT as a process does without handlers (forked, it had the report's own, or
    those of the deferral it was forked in), unless the report ignores them (nohup)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in ENDING_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)


def _start_worker(*initargs: Any) -> None:
    """A worker started by the forkserver: its signals, then _init_worker(*initargs)."""
    _worker_signals()
    _init_worker(*initargs)


def _advise_piece(folders: list[Path]) -> list[FleetHost]:
    """The records of a worker's piece of the hosts."""
    return [advise_host(f) for f in folders]


def _piece_done(future: Future[list[FleetHost]]) -> None:
    """Until `future` is done, waiting on a runner.Done its done-callback sets (in the manager
    thread; here at once when it is done already)."""
    from advisor.system.runner import Done

    done = Done()
    future.add_done_callback(lambda _: done.set())
    done.wait()


def _shut(pool: ProcessPoolExecutor, unread: list[Future[list[FleetHost]]]) -> None:
    """Shut `pool` down, its manager thread joined with the ending signals deferred (a Ctrl-C
    meanwhile is raised once it is done). With pieces `unread` (an interrupt, an error, the
    caller stopped early), those not started are cancelled and the workers killed first, so
    that nothing is left running and the join is short: the manager thread sees them gone, and
    ends (shutdown alone waits for the pieces already handed to the workers). The executor has
    no public way to stop its workers before Python 3.14 (kill_workers): its _processes."""
    from advisor.system.runner import signals_deferred

    if unread:
        for future in unread:
            future.cancel()
        for process in list((pool._processes or {}).values()):
            with contextlib.suppress(OSError, ValueError):
                process.kill()
    with signals_deferred():
        pool.shutdown(wait=True, cancel_futures=bool(unread))


def by_rule(hosts: list[FleetHost]) -> list[FleetRule]:
    """Findings grouped by rule id: worst severity first, then the most hosts."""
    groups: dict[str, FleetRule] = {}
    for h in hosts:
        for f in h.findings:
            group = groups.setdefault(f.rule, FleetRule(rule=f.rule, severity=f.severity,
                                                        title=f.title, hosts=[], findings=0))
            if RANK.get(f.severity, 9) < RANK.get(group.severity, 9):
                group.severity = f.severity
            group.findings += 1
            if not group.hosts or group.hosts[-1] != h.host:
                group.hosts.append(h.host)
    return sorted(groups.values(), key=lambda g: (RANK.get(g.severity, 9), -len(g.hosts), g.rule))


def observe_by_rule(hosts: list[FleetHost]) -> list[FleetObserveRule]:
    """Observe findings grouped by rule id: the most hosts first."""
    groups: dict[str, FleetObserveRule] = {}
    for h in hosts:
        for f in h.observe_findings:
            group = groups.setdefault(f.rule, FleetObserveRule(rule=f.rule, hosts=[], findings=0,
                                                               example=f.message))
            group.findings += 1
            if not group.hosts or group.hosts[-1] != h.host:
                group.hosts.append(h.host)
    return sorted(groups.values(), key=lambda g: (-len(g.hosts), g.rule))


def failing(hosts: list[FleetHost], fail_on: str) -> list[str]:
    """Hosts with a finding at or above `fail_on`."""
    return [h.host for h in hosts
            if any(RANK.get(f.severity, 9) <= RANK[fail_on] for f in h.findings)]


def fleet_report(results: str, open_session: OpenSession, rules_dir: str | None = None,
                 jobs: int | None = None, fail_on: str | None = None,
                 kernel: str | None = None,
                 notice: Callable[[str], None] | None = None) -> FleetDocument:
    """The report for every host folder in `results`; `open_session` makes each host's session
    (advisor.session.Session); with `kernel` (a target kernel, spelt as must_mount_on_kernel),
    will-break findings due by it are breaks; `notice` as advise_hosts'."""
    from advisor.engine.decide import distribution_kernels
    from advisor.engine.rulebook import load_rulebook

    book = load_rulebook(Path(rules_dir) if rules_dir else None)  # bad rules: BadInput, once
    target = None
    if kernel is not None:
        from advisor.audit.kernel import target_version

        target = target_version(kernel, distribution_kernels(book))
    hosts = list(advise_hosts(host_folders(Path(results)), open_session, rules_dir, jobs,
                              target, book, notice))
    groups: dict[str, list[FleetHost]] = {}
    for h in hosts:
        if h.shape is not None:
            groups.setdefault(h.shape, []).append(h)
    shapes = []
    for i, (shape, members) in enumerate(sorted(groups.items(), key=lambda g: -len(g[1]))):
        proposals = {json.dumps([(d.name, d.proposal.mkfs_command if d.proposal else None,
                                  d.proposal.mount_options if d.proposal else None)
                                 for d in h.devices]) for h in members}
        shapes.append(FleetShape(shape=f"shape-{i + 1}", devices=shape,
                                 hosts=[h.host for h in members],
                                 same_proposal=len(proposals) == 1))
    by_shape = {s.devices: s.shape for s in shapes}
    for h in hosts:
        if h.shape is not None:
            h.shape = by_shape[h.shape]
    failed = sum(h.status == "failed" for h in hosts)
    return FleetDocument(results_dir=str(results), rules_dirs=book.dirs, hosts=hosts,
                         shapes=shapes, counts={"hosts": len(hosts), "ok": len(hosts) - failed,
                                                "failed": failed},
                         by_rule=by_rule(hosts), observe_by_rule=observe_by_rule(hosts),
                         fail_on=fail_on, target_kernel=target[0] if target else None,
                         failing_hosts=failing(hosts, fail_on) if fail_on else [])


#: Largest saved `fleet --json` document read by --since (2,000 hosts make about 20 MiB).
MAX_DOCUMENT_BYTES = 512 << 20


def previous_report(old: str, open_session: OpenSession, rules_dir: str | None = None,
                    jobs: int | None = None, kernel: str | None = None,
                    notice: Callable[[str], None] | None = None) -> FleetDocument:
    """The report of a previous collection: a results folder (reported again, with the same
    rules and target kernel) or a saved `fleet --json` file."""
    from pydantic import ValidationError

    from advisor.system.files import read_text

    if os.path.isdir(old):
        return fleet_report(old, open_session, rules_dir, jobs, kernel=kernel, notice=notice)
    text = read_text(old, "--since", MAX_DOCUMENT_BYTES, errors="replace")
    try:
        return FleetDocument.model_validate_json(text)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the document"
        raise BadInput(f"--since {old} is neither a results folder nor a saved `fleet --json` "
                       f"document ({where}: {first['msg']})") from None


def _proposal_text(d: FleetDevice) -> str | None:
    if d.proposal_error:
        return f"none: {d.proposal_error}"
    if d.proposal is None:
        return None
    return d.proposal.mkfs_command + (f" ; mount -o {','.join(d.proposal.mount_options)}"
                                      if d.proposal.mount_options else "")


def since(now: FleetDocument, before: FleetDocument, previous: str) -> FleetSince:
    """What changed from `before` to `now`: hosts added and removed, failed and recovered, and on
    hosts complete in both, findings gained or cleared (by rule id) and proposals changed."""
    old = {h.host: h for h in before.hosts}
    new = {h.host: h for h in now.hosts}
    both = [n for n in new if n in old]
    rules: dict[str, FleetRuleChange] = {}

    def change(f: FleetFinding) -> FleetRuleChange:
        group = rules.setdefault(f.rule, FleetRuleChange(rule=f.rule, severity=f.severity,
                                                         title=f.title, gained=[], cleared=[]))
        if RANK.get(f.severity, 9) < RANK.get(group.severity, 9):
            group.severity = f.severity
        return group

    proposals: list[FleetProposalChange] = []
    for name in both:
        a, b = old[name], new[name]
        if a.status != "ok" or b.status != "ok":
            continue
        was = {f.rule: f for f in a.findings}
        now_rules = {f.rule: f for f in b.findings}
        for rule in sorted(now_rules.keys() - was.keys()):
            change(now_rules[rule]).gained.append(name)
        for rule in sorted(was.keys() - now_rules.keys()):
            change(was[rule]).cleared.append(name)
        before_dev = {d.name: _proposal_text(d) for d in a.devices}
        after_dev = {d.name: _proposal_text(d) for d in b.devices}
        for dev in sorted(before_dev.keys() | after_dev.keys()):
            first, then = before_dev.get(dev), after_dev.get(dev)
            if first != then:
                proposals.append(FleetProposalChange(host=name, device=dev, before=first,
                                                     after=then))
    return FleetSince(
        previous=previous, added=[n for n in new if n not in old],
        removed=sorted(n for n in old if n not in new),
        failed=[n for n in both if new[n].status == "failed" and old[n].status == "ok"],
        recovered=[n for n in both if new[n].status == "ok" and old[n].status == "failed"],
        rules=sorted(rules.values(), key=lambda g: (RANK.get(g.severity, 9),
                                                    -len(g.gained) - len(g.cleared), g.rule)),
        proposals=proposals)
