"""The one adapter around the host's mkfs.xfs: what it makes by default for a device, what it would
make with given options (`mkfs.xfs -N -f OPTIONS` on a sparse stand-in of the device's size, never
the device), and which of xfsprogs' lts_*.conf feature sets it accepts.

The rule engine never runs it: advisor.advice asks this adapter first and hands the engine the
answers, then gates the engine's draft with a real dry run. Tests hand the engine captured
`mkfs.xfs -N` outputs instead (tests/engine/data/mkfs/)."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from advisor.errors import AdvisorError, DeviceProblem, ProposalBug
from advisor.models.device import Device, device_size
from advisor.models.environment import Environment, FeatureSet, parse_lts_conf
from advisor.models.proposal import Check, MkfsGeometry
from advisor.models.units import parse_size
from advisor.system import argv
from advisor.system.runner import Done, Result, run, signals_deferred, start_thread

GiB = 1 << 30


_FEATURES = ("crc", "finobt", "sparse", "rmapbt", "reflink", "bigtime", "inobtcount", "nrext64",
             "ftype")
_PAIR = re.compile(r"([a-z][a-z0-9-]*)=(\S+?),?(?=\s|$)")


def parse_mkfs_output(stdout: str, stderr: str = "") -> MkfsGeometry:
    """The geometry from `mkfs.xfs -N` (or xfs_info) text. Keys repeat across sections (bsize,
    sectsz, sunit), so values are read per section: meta-data, data, naming, log, realtime."""
    sections: dict[str, dict[str, str]] = {}
    current = ""
    for line in stdout.splitlines():
        head, sep, rest = line.partition("=")
        if not sep:
            continue
        if head.strip():
            current = head.strip()
        else:
            rest = line.split("=", 1)[1]
        values = sections.setdefault(current, {})
        for key, value in _PAIR.findall(rest):
            values.setdefault(key, value)
    meta, data = sections.get("meta-data", {}), sections.get("data", {})
    naming, log = sections.get("naming", {}), sections.get("log", {})
    try:
        return MkfsGeometry(
            block_size=int(data["bsize"]),
            sector_size=int(meta["sectsz"]),
            inode_size=int(meta["isize"]),
            agcount=int(meta["agcount"]),
            agsize_blocks=int(meta["agsize"]),
            data_blocks=int(data["blocks"]),
            sunit_blocks=int(data.get("sunit", "0")),
            swidth_blocks=int(data.get("swidth", "0")),
            naming_block_size=int(naming["bsize"]),
            log_blocks=int(log["blocks"]),
            log_sunit_blocks=int(log.get("sunit", "0")),
            imaxpct=int(data["imaxpct"]) if data.get("imaxpct", "").isdigit() else None,
            features={k: int(v) for k in _FEATURES for v in
                      [meta.get(k, naming.get(k))] if v is not None and v.isdigit()},
            mkfs_warnings=[ln.strip() for ln in stderr.splitlines() if ln.strip()],
        )
    except (KeyError, ValueError) as err:
        raise AdvisorError(f"cannot parse mkfs.xfs -N output (missing {err})") from None


def emulation_options(device: Device, proposed: Sequence[str] = ()) -> list[str]:
    """Options that make a plain file look like the device to mkfs.xfs: the sector size and the
    stripe geometry mkfs.xfs would detect (unless the proposal sets them itself)."""
    options: list[str] = []
    sector = device.physical_sector.value or device.logical_sector.value
    # As mkfs.xfs does on the device (validate_sectorsize): a physical sector larger than the
    # block size (a QLC drive's 16 KiB indirection unit) gives way to the logical one.
    if sector and sector > _block_size(proposed) and device.logical_sector.value:
        sector = device.logical_sector.value
    if sector and sector > 512 and not _sets(proposed, "-s", "size"):
        options += ["-s", f"size={sector}"]
    stripe = device.stripe
    if (stripe.used_by_mkfs and stripe.sunit_bytes and stripe.data_disks
            and not _sets(proposed, "-d", "su") and not _sets(proposed, "-d", "sunit")):
        options += ["-d", f"su={stripe.sunit_bytes},sw={stripe.data_disks}"]
    return options


def _block_size(options: Sequence[str]) -> int:
    """The -b size= the options give, in bytes (4096, mkfs.xfs's default, when none)."""
    for i in range(len(options) - 1):
        if options[i] == "-b":
            for part in options[i + 1].split(","):
                key, _, value = part.partition("=")
                if key == "size":
                    with contextlib.suppress(ValueError):
                        return parse_size(value)
    return 4096


def _sets(options: Sequence[str], flag: str, key: str) -> bool:
    return any(options[i] == flag and any(p.split("=")[0] == key for p in options[i + 1].split(","))
               for i in range(len(options) - 1))


#: The dry run's folder in TMPDIR: `xfs-advisor-check-PID-START-XXXXXXXX`, its maker's pid and
#: start time in the name, so that what a killed process left can be told from a live one's.
DRY_RUN_PREFIX = "xfs-advisor-check-"
_DRY_RUN_NAME = re.compile(re.escape(DRY_RUN_PREFIX) + r"([0-9]+)-([0-9]+)-[^/]+")
#: What a dry run puts in its folder: the device's and a log device's sparse stand-ins.
_DRY_RUN_FILES = frozenset({"device.img", "log.img"})


def _dry_run_prefix() -> str:
    from advisor.system.processes import process_start
    from advisor.system.sysroot import SysRoot

    pid = os.getpid()
    return f"{DRY_RUN_PREFIX}{pid}-{process_start(SysRoot(), pid) or 0}-"


def sweep_dry_runs(folder: str | None = None) -> list[str]:
    """Remove the dry-run folders (and their device-sized sparse images) that processes killed
    before their own clean-up left in `folder` (default: TMPDIR): only folders of ours, named
    for a process that is no longer alive, holding nothing but a dry run's files. The paths
    removed."""
    from advisor.system.processes import alive
    from advisor.system.sysroot import SysRoot

    where = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(where) if _DRY_RUN_NAME.fullmatch(n)]
    except OSError:
        return removed
    proc = SysRoot()
    for name in names:
        match = _DRY_RUN_NAME.fullmatch(name)
        assert match is not None
        pid, started = int(match.group(1)), match.group(2)
        if alive(proc, pid, started):
            continue
        path = os.path.join(where, name)
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                if os.fstat(fd).st_uid != os.geteuid():
                    continue  # someone else's (or made to look like ours): not ours to remove
                inside = os.listdir(fd)
                if not set(inside) <= _DRY_RUN_FILES:
                    continue
                for entry in inside:
                    if stat.S_ISREG(os.lstat(entry, dir_fd=fd).st_mode):
                        os.unlink(entry, dir_fd=fd)
            finally:
                os.close(fd)
            os.rmdir(path)
            removed.append(path)
    return removed


def _dry(device: Device, options: Sequence[str]) -> tuple[Result, list[str], str, list[str]]:
    """`mkfs.xfs -N -f` with the options on a stand-in for the device: its result, the command as
    shown (FILE for the stand-in), how the stand-in was made, the emulation options used."""
    size = device_size(device)
    emulated = emulation_options(device, options)
    with tempfile.TemporaryDirectory(prefix=_dry_run_prefix()) as tmp:
        image = os.path.join(tmp, "device.img")
        target_options: list[str] = []
        method = "sparse file"
        with open(image, "wb") as f:
            try:
                f.truncate(size)
            except OSError as err:
                # ext4 holds files up to 16 TiB: let mkfs.xfs size the data section itself.
                if err.errno not in (errno.EFBIG, errno.EINVAL):
                    raise
                method = "mkfs -d file,size"
        if method != "sparse file":
            target_options = ["-d", f"file,name={image},size={size}"]
        log_image = os.path.join(tmp, "log.img")
        options, log_names = log_stand_in(options, log_image)
        cmd = argv.mkfs_xfs(None if target_options else image,
                            [*emulated, *options, *target_options], dry_run=True, force=True)
        result = run(cmd, timeout=30, check=False)
    shown = [a.replace(image, "FILE") for a in cmd]
    for name in log_names:
        shown = [a.replace(log_image, "LOGFILE") for a in shown]
        method += f"; a sparse LOGFILE of {MAX_LOG_BYTES} bytes for the log device {name}"
    return result, shown, method, emulated


#: The largest log mkfs.xfs makes (2 GiB - 10 MiB): the stand-in of an external log device.
MAX_LOG_BYTES = 2136997888


def log_stand_in(options: Sequence[str], image: str) -> tuple[list[str], list[str]]:
    """The options with every `-l logdev=PATH` pointing at a sparse file `image` of the largest
    log's size instead (created here), and the paths replaced: a dry run checks the external
    log's options without opening a device of this host (the proposal may be for another)."""
    out: list[str] = []
    names: list[str] = []
    for i, option in enumerate(options):
        if i % 2 and options[i - 1] == "-l" and "logdev=" in option:
            parts = []
            for part in option.split(","):
                if part.startswith("logdev="):
                    names.append(part.removeprefix("logdev="))
                    part = f"logdev={image}"
                parts.append(part)
            option = ",".join(parts)
            with open(image, "wb") as f:
                f.truncate(MAX_LOG_BYTES)
        out.append(option)
    return out, names


def attempt(device: Device, options: Sequence[str]) -> Check | str:
    """Run `mkfs.xfs -N -f` with the options on a stand-in for the device: the parsed result,
    or the first line of mkfs.xfs's refusal (e.g. a proposal made for a larger device on a
    scratch one)."""
    result, shown, method, emulated = _dry(device, options)
    if not result.ok:
        return result.first_error_line()
    return Check(argv=shown, method=method, emulated=emulated,
                 geometry=parse_mkfs_output(result.stdout, result.stderr))


def dry_run(device: Device, options: Sequence[str], *, defaults: bool = False) -> Check:
    """attempt(), a refusal raised: of the defaults, a device problem (too small, odd sector
    size); of a proposal, a bug in the rules."""
    return _accepted(device, options, attempt(device, options), defaults)


def _accepted(device: Device, options: Sequence[str], made: Check | str,
              defaults: bool) -> Check:
    if not isinstance(made, str):
        return made
    if defaults:
        raise DeviceProblem(f"{device.name}: mkfs.xfs rejects a filesystem of this device's "
                            f"size and geometry: {made}")
    raise ProposalBug(f"bug: the proposal ({' '.join(options) or 'no options'}) fails "
                      f"`mkfs.xfs -N`: {made} (please report it with the --json output)")


@functools.lru_cache(maxsize=16)
def conf_rejection(path: str) -> str | None:
    """Why this mkfs.xfs rejects a config file (None: accepted), from a dry run on a file."""
    with tempfile.NamedTemporaryFile(prefix="xfs-advisor-conf-") as f:
        f.truncate(GiB)
        result = run(argv.mkfs_xfs(f.name, ["-c", f"options={path}"], dry_run=True, force=True),
                     timeout=30, check=False)
    return None if result.ok else result.first_error_line()


def feature_sets(env: Environment) -> dict[str, FeatureSet]:
    """Every lts_<kernel>.conf the host's xfsprogs ships: its features, and whether this mkfs.xfs
    accepts it (an older xfsprogs may reject its own file). One dry run per file, once."""
    sets = {}
    for version, path in env.lts_configs.items():
        rejection: str | None
        try:
            features = parse_lts_conf(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            features, rejection = {}, f"unreadable: {err}"
        else:
            rejection = conf_rejection(path)
        sets[version] = FeatureSet(version=version, path=path, features=features,
                                   rejection=rejection)
    return sets


#: The name prefix of the threads that run a dry run of the defaults ahead (defaults_ahead):
#: a caller about to fork waits for them (advisor.fleet).
AHEAD_THREADS = "mkfs-defaults"


class _Ahead(threading.Thread):
    """One dry run in its own thread; `result` waits for it and raises its error in the
    caller's thread. (A plain thread: concurrent.futures imports logging, which a proposal has
    no other use for: 12 M instructions of its start.) The caller, the main thread of a
    proposal, waits for it the runner's way, not in threading's Event.wait or Thread.join,
    where Ctrl-C can break a lock (advisor.system.runner.Process)."""

    def __init__(self, work: functools.partial[Check]) -> None:
        super().__init__(name=AHEAD_THREADS)
        self._work = work
        self._check: Check | None = None
        self._error: BaseException | None = None
        self._done = Done()  # set when run() is done

    def run(self) -> None:
        try:
            self._check = self._work()
        except BaseException as e:  # raised again by result(), in the caller's thread
            self._error = e
        finally:
            self._done.set()

    def end(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds for the dry run, then for the thread to end (its last
        instructions: joined with the ending signals deferred); whether it ended."""
        if not self._done.wait(timeout):
            return False
        with signals_deferred():
            self.join()
        return True

    def result(self) -> Check:
        self.end()
        if self._error is not None:
            raise self._error
        assert self._check is not None
        return self._check


def end_ahead(timeout: float) -> bool:
    """Wait up to `timeout` seconds in all for the dry runs still running ahead (advisor.fleet
    forks only when no other thread runs); whether none is left."""
    until = time.monotonic() + timeout
    return all(thread.end(max(0.0, until - time.monotonic()))
               for thread in threading.enumerate() if isinstance(thread, _Ahead))


class HostMkfs:
    """The host's mkfs.xfs, as the advice needs it. Each answer is kept for the life of the
    object (one proposal): the engine's last dry run, after the last mkfs setting, has the same
    options as the gate on the whole draft, which then costs nothing; and the defaults can be
    asked ahead (`defaults_ahead`), while the caller reads the rule book."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, int | None, tuple[str, ...]], Check | str] = {}
        self._ahead: dict[str, _Ahead] = {}

    def _attempt(self, device: Device, options: Sequence[str]) -> Check | str:
        key = (device.path, device.size_bytes.value, tuple(options))
        if key not in self._made:
            self._made[key] = attempt(device, options)
        return self._made[key]

    def _dry_run(self, device: Device, options: Sequence[str], defaults: bool) -> Check:
        return _accepted(device, options, self._attempt(device, options), defaults)

    def rejection(self, device: Device, options: Sequence[str]) -> str | None:
        """Why mkfs.xfs refuses these options on this device (None: it accepts them, and
        check() then costs nothing)."""
        made = self._attempt(device, options)
        return made if isinstance(made, str) else None

    def defaults_ahead(self, device: Device) -> None:
        """Start the dry run of the defaults in a thread (mkfs.xfs runs while Python works)."""
        ahead = _Ahead(functools.partial(self._dry_run, device, [], True))
        start_thread(ahead)
        self._ahead[device.path] = ahead

    def defaults(self, device: Device) -> Check:
        """What mkfs.xfs makes on this device with no options."""
        ahead = self._ahead.pop(device.path, None)
        if ahead is not None:
            ahead.result()  # its errors are raised here, in the caller's thread
        return self._dry_run(device, [], True)

    def check(self, device: Device, options: list[str]) -> Check:
        """A dry run of the proposal's options: the gate every proposal passes."""
        return self._dry_run(device, options, False)

    def feature_sets(self, env: Environment) -> dict[str, FeatureSet]:
        return feature_sets(env)
