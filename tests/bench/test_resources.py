"""The run's ledger on real loop devices and mounts: recovery undoes only what a run made (by
identity, not by what a state file claims), refuses state folders and files others could have
written, finds what was made under symlinked, relative and oddly named folders, and every signal
that ends a run (SIGHUP, SIGQUIT, SIGINT twice, SIGTERM) leaves nothing; what cannot be undone yet
stays recorded and is said to remain; a SIGKILLed --device run is recovered by the next one."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from advisor import signals
from advisor.bench import cleanup, journal, resources
from advisor.errors import DeviceProblem
from advisor.system import runner
from tests.bench.test_guard import attached
from tests.conftest import REPO, force_clean, leftovers, mounted, require_root_tools, sh

GIB = 1 << 30
SMALL = 320 << 20  # above mkfs.xfs's 300 MiB minimum
WORKLOAD = ("--largest-directory-entries", "5000", "--concurrent-writers", "1",
            "--fsyncs-per-second", "0", "--median-file-size", "4KiB")


@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "umount", "fio")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state folder for this test (mode 0700, ours)."""
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv(journal.STATE_DIR_ENV, str(folder))
    return folder


def is_attached(device: str) -> bool:
    return any(line.startswith(device + ":") for line in sh("losetup", "-a").stdout.splitlines())


def record(path: Path) -> dict[str, object]:
    st = os.lstat(path)
    return {"path": str(path), "dev": st.st_dev, "ino": st.st_ino}


def plant(folder: Path, name: str, doc: dict[str, object]) -> Path:
    path = folder / name
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def mountinfo_line(mountpoint: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.split()[4] == str(mountpoint)]


# ---- item 4: recovery trusts nothing it did not make ----

def test_planted_state_file_with_wrong_identities_undoes_nothing(
        tmp_path: Path, state: Path, root_tools: None) -> None:
    backing = tmp_path / "theirs.img"
    victim_file = tmp_path / "victim.txt"
    victim_file.write_text("keep me\n")
    victim_dir = tmp_path / "victim-dir"
    victim_dir.mkdir()
    (victim_dir / "inside.txt").write_text("keep me too\n")
    with attached(backing, GIB) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "m") as mnt:
            (mnt / "data.txt").write_text("theirs\n")
            line = mountinfo_line(mnt)[0].split()
            rdev = os.stat(dev).st_rdev
            real = f"{os.major(rdev)}:{os.minor(rdev)}"
            st = backing.stat()
            planted = plant(state, "run-999999-0.json", {
                "pid": 999999, "started": "1",
                "mounts": [  # the right device, the wrong mount; a wrong device numbers
                    {"device": dev, "source": real, "mountpoint": str(mnt),
                     "mount_id": int(line[0]) + 100000},
                    {"device": dev, "source": "7:999", "mountpoint": str(mnt)}],
                "loops": [{"backing": str(backing), "dev": st.st_dev, "ino": st.st_ino + 1,
                           "device": dev}],
                "files": [{**record(victim_file), "ino": victim_file.stat().st_ino + 1}],
                "dirs": [{**record(victim_dir), "dev": victim_dir.stat().st_dev + 1}]})
            found = cleanup.recover_leftovers()
            assert mountinfo_line(mnt), "a mount the tool never made was unmounted"
            assert (mnt / "data.txt").read_text() == "theirs\n"
            assert is_attached(dev)
    assert victim_file.read_text() == "keep me\n"
    assert (victim_dir / "inside.txt").read_text() == "keep me too\n"
    text = " ".join(found.done)
    assert f"left {victim_file} alone" in text and f"left {victim_dir} alone" in text, text
    assert "unmounted" not in text and "detached" not in text and "removed" not in text
    assert not planted.exists()  # none of what it names is the run's: nothing to keep


def _validate_json(tmp_path: Path, state_folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, journal.STATE_DIR_ENV: str(state_folder)}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "advisor", "validate", "--json", "--loop-dir",
                           str(tmp_path / "work"), "--loop-size", "1GiB", "--calibrate"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=60)


def _nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


@pytest.mark.parametrize("how", ["mode 0777", "owned by nobody", "a symlink"])
def test_untrusted_state_folder_is_refused_and_nothing_touched(
        tmp_path: Path, root_tools: None, how: str) -> None:
    real = tmp_path / "state"
    real.mkdir(mode=0o700)
    bait = tmp_path / "bait"
    bait.mkdir()
    (bait / "precious.txt").write_text("keep\n")
    plant(real, "run-999999-0.json", {"pid": 999999, "started": "1", "dirs": [record(bait)]})
    folder = real
    if how == "mode 0777":
        real.chmod(0o777)
        reason = "writable by others (mode 0777)"
    elif how == "owned by nobody":
        os.chown(real, _nobody(), -1)
        reason = f"owned by uid {_nobody()}"
    else:
        folder = tmp_path / "link"
        folder.symlink_to(real)
        reason = "symbolic link"
    proc = _validate_json(tmp_path, folder)
    assert proc.returncode == 3, proc.stderr
    error = json.loads(proc.stderr)["error"]  # one JSON line
    assert error["kind"] == "device" and reason in error["message"], error
    assert f"refusing the state folder {folder}" in error["message"]
    assert (bait / "precious.txt").read_text() == "keep\n"
    assert not (tmp_path / "work").exists()  # nothing made either
    assert leftovers(tmp_path) == []


def test_state_file_owned_by_another_user_is_ignored_and_said(tmp_path: Path, state: Path,
                                                             root_tools: None) -> None:
    bait = tmp_path / "bait"
    bait.mkdir()
    planted = plant(state, "run-999999-0.json",
                    {"pid": 999999, "started": "1", "dirs": [record(bait)]})
    os.chown(planted, _nobody(), -1)
    writable = plant(state, "run-999998-0.json",
                     {"pid": 999998, "started": "1", "dirs": [record(bait)]})
    writable.chmod(0o666)
    found = cleanup.recover_leftovers()
    assert found.done == []
    assert bait.is_dir() and planted.exists() and writable.exists()
    notes = "\n".join(found.notes)
    assert f"ignored {planted}: it is owned by uid {_nobody()}" in notes, notes
    assert f"ignored {writable}: it is writable by others (mode 0666)" in notes, notes


def test_zombie_owner_counts_as_dead_and_a_live_one_does_not(tmp_path: Path, state: Path,
                                                            root_tools: None) -> None:
    zombie = subprocess.Popen(["true"])
    alive = subprocess.Popen(["sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.05)
        folders = {}
        for name, child in (("zombie", zombie), ("alive", alive)):
            folders[name] = tmp_path / name
            folders[name].mkdir()
            started = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
            plant(state, f"run-{child.pid}-0.json", {"pid": child.pid, "started": started,
                                                     "dirs": [record(folders[name])]})
        found = cleanup.recover_leftovers()
        assert not folders["zombie"].exists(), found
        assert folders["alive"].is_dir()
        assert [p.name for p in state.iterdir()] == [f"run-{alive.pid}-0.json"]
    finally:
        alive.kill()
        alive.wait()
        zombie.wait()


# ---- item 8: canonical paths and device numbers, whatever the folder is called ----

def _folder(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> str:
    if kind == "symlink":
        (tmp_path / "real").mkdir()
        (tmp_path / "via").symlink_to(tmp_path / "real")
        return str(tmp_path / "via")
    if kind == "relative":
        (tmp_path / "rel").mkdir()
        monkeypatch.chdir(tmp_path)
        return "rel"
    odd = tmp_path / "odd \\ name\twith tab"
    odd.mkdir()
    return str(odd)


def _make_everything(res: resources.Resources, loop_dir: str) -> tuple[str, str, str]:
    """What a run makes: folder, backing file, loop device, XFS, mount."""
    work = res.make_dir(loop_dir, "xfs-advisor-")
    backing = res.preallocate(os.path.join(work, "scratch.img"), SMALL)
    device = res.attach_loop(backing, direct_io=False)
    sh("mkfs.xfs", "-q", "-f", "-K", device)
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    res.mount(device, mnt, [])
    return work, device, mnt


KINDS = ["symlink", "relative", "backslash, space and tab"]


@pytest.mark.parametrize("kind", KINDS)
def test_odd_loop_dir_is_cleaned_up(tmp_path: Path, state: Path, root_tools: None,
                                    monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    loop_dir = _folder(tmp_path, kind, monkeypatch)
    try:
        with resources.Resources() as res:
            work, device, _ = _make_everything(res, loop_dir)
            assert work == os.path.realpath(work)  # canonical from the start
            assert leftovers(tmp_path.resolve()) != []
        assert leftovers(tmp_path.resolve()) == []
        # By backing file, not by name: another run's test may have attached the same number.
        assert not os.path.exists(work) and not _backed_by(device, str(tmp_path.resolve()))
        assert list(state.iterdir()) == []
    finally:
        force_clean(str(tmp_path.resolve()))


def _backed_by(device: str, marker: str) -> bool:
    """Whether loop device `device` is attached to a file whose path contains marker."""
    backing = Path("/sys/block", os.path.basename(device), "loop", "backing_file")
    try:
        return marker in backing.read_text()
    except OSError:
        return False


HOLDER = """
import os, sys, time
from advisor.bench import resources
from tests.bench.test_resources import _make_everything
res = resources.Resources()
res.__enter__()
_make_everything(res, sys.argv[1])
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("kind", KINDS)
def test_odd_loop_dir_is_recovered_after_sigkill(tmp_path: Path, state: Path, root_tools: None,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 kind: str) -> None:
    loop_dir = _folder(tmp_path, kind, monkeypatch)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, loop_dir], stdout=subprocess.PIPE,
                              text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        holder.kill()
        holder.wait(timeout=30)
        assert leftovers(tmp_path.resolve()) != []
        found = cleanup.recover_leftovers()
        text = " ".join(found.done)
        assert "unmounted" in text and "detached" in text and "removed" in text, found
        assert leftovers(tmp_path.resolve()) == []
        assert list(state.iterdir()) == []
        work = tmp_path / ("real" if kind == "symlink" else loop_dir)
        assert list(work.iterdir()) == []
    finally:
        if holder.poll() is None:
            holder.kill()
        force_clean(str(tmp_path.resolve()))


# ---- item 9: what cannot be undone yet stays recorded and is said ----

def test_busy_mount_is_kept_in_the_state_and_said_to_remain(tmp_path: Path, state: Path,
                                                            root_tools: None) -> None:
    said: list[str] = []
    holder: subprocess.Popen[bytes] | None = None
    try:
        res = resources.Resources(say=said.append)
        with res:
            _, device, mnt = _make_everything(res, str(tmp_path))
            # A process of the test holds its cwd in the mount: the lazy unmount detaches it
            # from the tree, but the filesystem (and so the loop device) stays busy.
            holder = subprocess.Popen(["sleep", "600"], cwd=mnt)
        assert mountinfo_line(Path(mnt)) == []
        assert is_attached(device)
        (kept,) = state.glob("run-*.json")
        assert [lo["device"] for lo in json.loads(kept.read_text())["loops"]] == [device]
        assert len(said) == 1 and said[0].startswith("could not remove everything"), said
        assert f"{device} is still attached" in said[0] and "still there" in said[0], said
        assert f"lazily unmounted {mnt}" in said[0], said
        holder.kill()
        holder.wait()
        deadline = time.monotonic() + 20  # the kernel lets go of the loop once unused
        while leftovers(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        cleanup.recover_leftovers()
        assert list(state.iterdir()) == []
        assert leftovers(tmp_path) == []
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        force_clean(str(tmp_path))


def test_a_loop_device_released_soon_after_its_detach_is_waited_for(tmp_path: Path, state: Path,
                                                                    root_tools: None) -> None:
    """A command the run killed as it ended may still be exiting, the loop device open, when
    clean-up detaches it: the kernel then only sets the device to detach itself once released.
    Released a moment later, it is gone before clean-up ends, and the state file with it."""
    said: list[str] = []
    holder: subprocess.Popen[bytes] | None = None
    try:
        res = resources.Resources(say=said.append)
        with res:
            work = res.make_dir(str(tmp_path), "xfs-advisor-")
            backing = res.preallocate(os.path.join(work, "scratch.img"), SMALL)
            device = res.attach_loop(backing, direct_io=False)
            holder = subprocess.Popen(
                [sys.executable, "-c", "import os, sys, time\nos.open(sys.argv[1], os.O_RDONLY)"
                 "\nprint(flush=True)\ntime.sleep(1.0)", device], stdout=subprocess.PIPE)
            assert holder.stdout is not None and holder.stdout.readline()  # it holds it now
        assert said == []
        assert not is_attached(device)
        assert list(state.iterdir()) == []
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        force_clean(str(tmp_path))


# ---- item 9: every signal that ends a run cleans up ----

def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, journal.STATE_DIR_ENV: str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return env


def _start(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    """validate in its own session (a terminal would signal its whole process group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "advisor", "validate", "--json", "--loop-dir",
         str(tmp_path / "work"), "--loop-size", "1GiB", "--calibrate", "--budget", "60",
         *WORKLOAD, *extra],
        cwd=REPO, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)


def _wait_for_our_mount(tmp_path: Path, proc: subprocess.Popen[str]) -> None:
    """Until the run's state file shows its mount made (mount ID recorded)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for path in (tmp_path / "state").glob(f"run-{proc.pid}-*.json"):
            with contextlib.suppress(ValueError, OSError):
                if any(m.get("mount_id") for m in json.loads(path.read_text())["mounts"]):
                    return
        if proc.poll() is not None:
            pytest.fail(f"validate ended early: {proc.communicate()[1]}")
        time.sleep(0.1)
    pytest.fail("validate never mounted its scratch filesystem")


@contextlib.contextmanager
def running(tmp_path: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    proc = _start(tmp_path, *extra)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def cleaned(tmp_path: Path) -> Iterator[None]:
    try:
        yield
    finally:
        force_clean(str(tmp_path))


def _assert_clean_exit(tmp_path: Path, proc: subprocess.Popen[str]) -> None:
    _, err = proc.communicate(timeout=60)  # a bounded time: clean-up takes seconds
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert json.loads(err.strip().splitlines()[-1])["error"]["message"].startswith("interrupted")
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "work").exists()  # made for the run, removed with it
    assert list((tmp_path / "state").iterdir()) == [], err


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM])
def test_ending_signal_to_the_group_cleans_up(tmp_path: Path, root_tools: None,
                                              signum: int) -> None:
    with cleaned(tmp_path), running(tmp_path) as proc:
        _wait_for_our_mount(tmp_path, proc)
        time.sleep(1.0)  # inside fio
        os.killpg(proc.pid, signum)
        _assert_clean_exit(tmp_path, proc)


def test_ctrl_c_again_and_again_during_clean_up_does_not_stop_it(tmp_path: Path,
                                                                 root_tools: None) -> None:
    with cleaned(tmp_path), running(tmp_path) as proc:
        _wait_for_our_mount(tmp_path, proc)
        time.sleep(1.0)
        # The terminal's Ctrl-C reaches the whole group (umount and losetup too); keep pressing
        # it while the run cleans up, until its state file is gone (clean-up ended). Every 5 ms:
        # a quiet machine cleans up in 40-60 ms, so at 20 ms only 3 presses fit (CI failed on
        # that count once); the first press starts the clean-up, the others land inside it.
        presses, deadline = 0, time.monotonic() + 10
        while list((tmp_path / "state").glob("run-*.json")) and time.monotonic() < deadline:
            os.killpg(proc.pid, signal.SIGINT)
            presses += 1
            time.sleep(0.005)
        assert presses > 3  # some of them came while it was cleaning up
        _assert_clean_exit(tmp_path, proc)


def test_signals_held_raise_when_the_block_ends() -> None:
    with pytest.raises(signals.Terminated, match="SIGHUP"), signals.signals_held():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.1)  # the handler ran here: held, not raised
        held = True
    assert held


def test_a_signal_while_held_handlers_are_put_back_is_raised_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal landing while signals_held puts the outer handlers back (one that raises is
    already back, others are not) waits until every handler is back and holding has ended: then
    it is raised, and the next signals_held holds again."""
    _in_the_main_thread()
    real = signal.signal
    sent: list[int] = []

    def put_back_then_signal(signum: int, handler: Any) -> Any:
        previous = real(signum, handler)
        if armed and not sent:
            sent.append(signum)
            os.kill(os.getpid(), signal.SIGINT)  # its handler, just put back, raises
        return previous

    armed = False
    with signals.terminate_as_interrupt():
        monkeypatch.setattr(signal, "signal", put_back_then_signal)
        with pytest.raises(signals.Terminated, match="SIGINT"), signals.signals_held():
            armed = True
        monkeypatch.setattr(signal, "signal", real)
        assert sent == [signal.SIGINT]
        assert signals._held is None  # holding ended
        # Every handler is the outer block's again, and holding works as before.
        assert {signal.getsignal(s) for s in signals.STOPPING_SIGNALS} == {
            signal.getsignal(signal.SIGINT)}
        with pytest.raises(signals.Terminated, match="SIGHUP"), signals.signals_held():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.1)


def test_a_signal_while_handlers_are_installed_puts_back_those_already_replaced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal landing while signals_held installs its handler (SIGINT's replaced, SIGTERM's
    not yet, and that one raises) ends the install: SIGINT's handler is put back before the
    signal goes on, nothing is left holding, and the next signals_held holds again."""
    _in_the_main_thread()
    real = signal.signal
    sent: list[int] = []

    def install_then_signal(signum: int, handler: Any) -> Any:
        previous = real(signum, handler)
        if not sent:
            sent.append(signum)
            os.kill(os.getpid(), signal.SIGTERM)  # its handler, not yet replaced, raises
        return previous

    with signals.terminate_as_interrupt():
        outer = {s: signal.getsignal(s) for s in signals.STOPPING_SIGNALS}
        monkeypatch.setattr(signal, "signal", install_then_signal)
        with pytest.raises(signals.Terminated, match="SIGTERM"), signals.signals_held():
            pytest.fail("the block ran without its handlers")
        monkeypatch.setattr(signal, "signal", real)
        assert sent == [signal.SIGINT]
        assert {s: signal.getsignal(s) for s in signals.STOPPING_SIGNALS} == outer
        assert signals._held is None
        with pytest.raises(signals.Terminated, match="SIGHUP"), signals.signals_held():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.1)


def test_a_command_killed_by_an_ending_signal_is_reaped_before_the_signal_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or SIGTERM) while a command runs kills it and waits for it to be gone, so that
    what it held open (a loop device clean-up detaches next) is released."""
    _in_the_main_thread()
    spawned: list[Any] = []
    real_spawn = runner._spawn

    def spy(*args: Any, **kwargs: Any) -> Any:
        proc = real_spawn(*args, **kwargs)
        spawned.append(proc)
        return proc

    monkeypatch.setattr(runner, "_spawn", spy)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    with signals.terminate_as_interrupt(), pytest.raises(signals.Terminated):
        timer.start()
        runner.run(["sleep", "30"])
    [proc] = spawned
    assert not Path(f"/proc/{proc.pid}").exists(), "the killed command was not reaped"


def _in_the_main_thread() -> None:
    """These tests signal their own process: only the main thread turns SIGTERM into
    Terminated (elsewhere it would end pytest)."""
    assert threading.current_thread() is threading.main_thread()


def test_a_signal_while_the_state_file_is_opened_leaves_no_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM landing while the journal's temporary copy is being opened (held there: a FIFO
    in its place blocks the open until the signal comes) ends the run with nothing left in
    the state folder."""
    _in_the_main_thread()
    state = tmp_path / "state"
    monkeypatch.setenv(journal.STATE_DIR_ENV, str(state))
    res = resources.Resources()
    tmp = state / (res.name + ".tmp")
    os.mkfifo(tmp, 0o600)
    main = threading.main_thread().ident
    assert main is not None
    released = threading.Event()

    def signal_then_release() -> None:
        time.sleep(0.3)
        signal.pthread_kill(main, signal.SIGTERM)  # to the thread blocked in open(2)
        if not released.wait(10):  # never blocks the suite: a reader ends the open
            with contextlib.suppress(OSError):
                os.close(os.open(tmp, os.O_RDONLY | os.O_NONBLOCK))

    sender = threading.Thread(target=signal_then_release, daemon=True)
    sender.start()
    try:
        with pytest.raises(signals.Terminated, match="SIGTERM"), \
                signals.terminate_as_interrupt(), res:
            pytest.fail("entered")
    finally:
        released.set()
        sender.join()
    assert list(state.iterdir()) == []
    assert str(res.path) not in journal.active_runs


def test_a_signal_right_after_the_first_state_write_leaves_no_state_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM landing as the run's state file has just been written, before the run is
    entered (so before any `with` would clean up): the file goes with the exception. The
    signal is sent when write_state returns."""
    _in_the_main_thread()
    state = tmp_path / "state"
    monkeypatch.setenv(journal.STATE_DIR_ENV, str(state))
    sent: list[str] = []

    def returning(frame: FrameType, event: str, arg: object) -> object:
        if event == "return" and not sent:
            sent.append(os.listdir(state)[0])
            os.kill(os.getpid(), signal.SIGTERM)
        return returning

    def calls(frame: FrameType, event: str, arg: object) -> object:
        return returning if frame.f_code is journal.write_state.__code__ else None

    res = resources.Resources()
    with pytest.raises(signals.Terminated, match="SIGTERM"), signals.terminate_as_interrupt():
        sys.settrace(calls)
        try:
            with res:
                pytest.fail("entered")
        finally:
            sys.settrace(None)
    assert sent == [res.name]  # the signal came once the state file was there
    assert list(state.iterdir()) == []
    assert str(res.path) not in journal.active_runs


# ---- a SIGKILLed --device run: recovered by the next run, its filesystem forgiven only when
# provably unchanged ----

def test_killed_device_run_is_recovered_and_user_data_written_since_is_kept(
        tmp_path: Path, root_tools: None) -> None:
    """The dead run's test filesystem was mounted when it died; the user then mounted it and
    wrote payroll.txt. The next run unmounts what the dead run left, but formats nothing: the
    UUID is the dead run's, the content is the user's, and the recovery line says so."""
    from advisor.system.superblock import read_xfs_uuid

    backing = tmp_path / "scratch.img"
    with attached(backing, GIB) as dev, cleaned(tmp_path):
        with running(tmp_path, "--device", dev, "--yes") as first:
            _wait_for_our_mount(tmp_path, first)
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
        assert any(dev in line for line in leftovers(tmp_path))  # its mount is left
        with mounted(dev, tmp_path / "user") as mnt:
            (mnt / "payroll.txt").write_text("precious\n")
        uuid = read_xfs_uuid(dev)
        with running(tmp_path, "--device", dev, "--yes") as second:
            _, err = second.communicate(timeout=120)
        assert second.returncode == 3, err
        assert f"recovered: a dead run (pid {first.pid}) left: unmounted" in err, err
        assert "treated as data" in err and "holds the test filesystem it made" not in err
        assert "refusing to format" in err and "holds data: xfs" in err, err
        assert read_xfs_uuid(dev) == uuid
        with mounted(dev, tmp_path / "user", "ro") as mnt:
            assert (mnt / "payroll.txt").read_text() == "precious\n"
        assert [line for line in leftovers(tmp_path) if not line.startswith(dev)] == []
        assert not any((tmp_path / "work").glob("*"))  # nothing of the runs is left in it
        assert list((tmp_path / "state").iterdir()) == []


@contextlib.contextmanager
def _dead_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dev: str) -> Iterator[None]:
    """A run, in this process, that made a test filesystem on `dev`, mounted it, wrote to it and
    unmounted it, then died (its state file left as a SIGKILL leaves it)."""
    monkeypatch.setenv(journal.STATE_DIR_ENV, str(tmp_path / "state"))
    res = resources.Resources().__enter__()
    sh("mkfs.xfs", "-q", "-f", dev)
    res.made_filesystem(dev)
    mnt = tmp_path / "ours"
    mnt.mkdir()
    res.mount(dev, str(mnt), [])
    (mnt / "round.dat").write_bytes(b"x" * 65536)
    res.umount(str(mnt))
    journal.active_runs.discard(str(res.path))  # dead: recovery may read its state file
    os.close(res._dir_fd)
    yield


def test_a_dead_runs_unchanged_test_filesystem_is_forgiven(tmp_path: Path, root_tools: None,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    with attached(tmp_path / "fs.img", GIB) as dev, _dead_run(tmp_path, monkeypatch, dev):
        found = cleanup.recover_leftovers()
        source = f"{os.major(os.stat(dev).st_rdev)}:{os.minor(os.stat(dev).st_rdev)}"
        from advisor.system.superblock import read_xfs_uuid
        assert found.test_filesystems == {source: read_xfs_uuid(dev)}
        assert f"{dev} holds the test filesystem it made, unchanged since" in found.done[0]


def test_a_dead_runs_test_filesystem_written_since_is_not_forgiven(
        tmp_path: Path, root_tools: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with attached(tmp_path / "fs.img", GIB) as dev, _dead_run(tmp_path, monkeypatch, dev):
        with mounted(dev, tmp_path / "user") as mnt:
            (mnt / "payroll.txt").write_text("precious\n")
        found = cleanup.recover_leftovers()
        assert found.test_filesystems == {}
        assert "it was mounted or written since that run unmounted it" in found.done[0]
        assert "treated as data" in found.done[0]


def test_recovery_refuses_nothing_when_there_is_no_state_folder(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    monkeypatch.setenv(journal.STATE_DIR_ENV, str(tmp_path / "none"))
    assert cleanup.recover_leftovers() == cleanup.Recovery()
    assert not (tmp_path / "none").exists()


def test_state_folder_check_runs_before_anything_is_made(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv(journal.STATE_DIR_ENV, str(folder))
    with pytest.raises(DeviceProblem, match="writable by others"):
        resources.Resources()
    assert list(folder.iterdir()) == []


def test_state_file_of_an_older_shape_is_removed_and_nothing_it_names_touched(
        tmp_path: Path, state: Path) -> None:
    bait = tmp_path / "bait"
    bait.mkdir()
    old = plant(state, "run-999999.json", {"pid": 999999, "started": "1", "dirs": [str(bait)],
                                           "files": [], "loops": [], "mounts": []})
    found = cleanup.recover_leftovers()
    assert found.done == [] and bait.is_dir() and not old.exists()
    assert found.notes == [f"removed {old}: not a state file of this version; nothing it names "
                           "was touched"]


def test_plan_makes_the_loop_folder_canonical(tmp_path: Path) -> None:
    from advisor.bench.plan import Plan
    from advisor.models.bench import SideConfig
    from advisor.models.workload import Workload

    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
                loop_dir=str(tmp_path / "via" / ".." / "via"))
    assert plan.loop_dir == str((tmp_path / "real").resolve())
