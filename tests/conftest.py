"""Shared test fixtures, and the test tiers.

Tests that need root or loop devices call `require(...)`: a skip on a developer's
machine, a failure under XFS_ADVISOR_STRICT=1 (which .ci/run sets), so CI always runs them.
Every fixture that attaches or mounts something undoes it, even when the test fails.

Tiers: every test is marked `root`, `fio` or `tmux` when it (or a fixture or helper of its module
that it uses) asks for root tools, fio or tmux, so `-m "not root"` selects without them. The fast
tier, `XFS_ADVISOR_TIER=fast ./bootstrap test -m "not slow" -n 2` (README, Development), also skips
whatever asks for root, fio or tmux at run time, so no test of that kind can slip into it.
"""

from __future__ import annotations

import ast
import contextlib
import multiprocessing.util
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inspect.sysfs_builder import unpack_dumps

STRICT = os.environ.get("XFS_ADVISOR_STRICT") == "1"
FAST = os.environ.get("XFS_ADVISOR_TIER") == "fast"
REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def require(condition: bool, reason: str) -> None:
    """Skip (or, in strict mode, fail) when a precondition of the test does not hold."""
    if not condition:
        if STRICT:
            pytest.fail(f"required in CI: {reason}")
        pytest.skip(reason)


def require_root_tools(*tools: str) -> None:
    if FAST:
        pytest.skip("fast tier: needs root" + (f" and {', '.join(tools)}" if tools else ""))
    require(os.geteuid() == 0, "needs root")
    for t in tools:
        require(shutil.which(t) is not None or Path("/usr/sbin", t).exists(), f"needs {t}")


def require_tmux() -> None:
    if FAST:
        pytest.skip("fast tier: needs tmux")
    require(shutil.which("tmux") is not None, "needs tmux")


def scratch_parent() -> str | None:
    """/dev/shm when it can be written to, else None (the usual temp folder). Synthetic trees of
    many thousand small files are made and removed there: on a busy root disk each unlink of a
    thousand-device sysfs tree cost ~1 ms, and the removal alone took 30-50 s."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@contextlib.contextmanager
def memory_folder(prefix: str) -> Iterator[Path]:
    """A new folder under scratch_parent(), removed afterwards whatever happens."""
    top = Path(tempfile.mkdtemp(prefix=f"xfs-advisor-{prefix}-", dir=scratch_parent()))
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def memory_tmp() -> Iterator[Path]:
    """tmp_path for trees of many small files (synthetic sysfs, big directories): in memory."""
    with memory_folder("test") as top:
        yield top


# What marks a function as needing each tier marker: calls it makes, or fixtures it takes.
_CALLS = {"root": {"require_root_tools", "loop_device", "mounted"}, "tmux": {"require_tmux"}}
_FIXTURES = {"root": {"loop"}, "tmux": {"tmux"}}


def _direct_marks(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    marks = {m for m, names in _FIXTURES.items()
             if names & {a.arg for a in fn.args.args + fn.args.kwonlyargs}}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            marks |= {m for m, names in _CALLS.items() if node.func.id in names}
            if node.func.id == "require_root_tools" and any(
                    isinstance(a, ast.Constant) and a.value == "fio" for a in node.args):
                marks.add("fio")
    return marks


def _module_marks(path: Path) -> dict[str, set[str]]:
    """Each function of a test module with the tier markers it needs, followed through the
    module's own fixtures and helpers it names (a helper that calls require_root_tools marks
    every test that calls the helper)."""
    tree = ast.parse(path.read_text())
    fns = {n.name: n for n in ast.walk(tree)
           if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    uses = {name: {x.id for x in ast.walk(fn) if isinstance(x, ast.Name)}
            | {a.arg for a in fn.args.args} for name, fn in fns.items()}
    marks = {name: _direct_marks(fn) for name, fn in fns.items()}
    changed = True
    while changed:
        changed = False
        for name in fns:
            new = set().union(*(marks[u] for u in uses[name] if u in marks and u != name))
            if not new <= marks[name]:
                marks[name] |= new
                changed = True
    return marks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    cache: dict[Path, dict[str, set[str]]] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path not in cache:
            cache[path] = _module_marks(path)
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        for mark in sorted(cache[path].get(name, set())):
            item.add_marker(getattr(pytest.mark, mark))


def json_command(command: str, *args: str) -> tuple[int, dict[str, Any], str]:
    """`xfs-advisor COMMAND --json ARGS` in this process: exit code, document (checked against
    COMMAND's published schema), stderr."""
    import io
    import json

    import jsonschema

    from advisor.cli import main
    from advisor.commands.schema import schema_text

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([command, "--json", *args])
    doc = json.loads(out.getvalue()) if out.getvalue() else {}
    if doc:
        jsonschema.validate(doc, json.loads(schema_text(command)))
    return code, doc, err.getvalue()


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


@contextlib.contextmanager
def loop_device(backing: Path, size: int, *, sector: int = 512) -> Iterator[str]:
    """Attach a loop device over a new sparse file; detach it afterwards, whatever happens."""
    with open(backing, "wb") as f:
        f.truncate(size)
    dev = sh("losetup", "--find", "--show", "-b", str(sector), str(backing)).stdout.strip()
    try:
        yield dev
    finally:
        release_loop(dev, backing)


def still_bound_to(dev: str, backing: Path) -> bool:
    """`dev` is still a loop device over `backing`: a test that detached its own may find the
    number taken by another test (the other worker's) by the time it cleans up."""
    try:
        bound = Path("/sys/block", Path(dev).name, "loop", "backing_file").read_text().strip()
    except OSError:
        return False
    return bound.removesuffix(" (deleted)") == str(backing.resolve())


def release_loop(dev: str, backing: Path) -> None:
    """Unmount and detach `dev`, only while it is still the test's own (still_bound_to): a
    test never touches a device it did not make."""
    if not still_bound_to(dev, backing):
        return
    with contextlib.suppress(Exception):
        sh("umount", "--quiet", dev, check=False)
    sh("losetup", "-d", dev, check=False)


@contextlib.contextmanager
def mounted(dev: str, mnt: Path, *options: str) -> Iterator[Path]:
    """Mount dev on mnt; unmount afterwards, whatever happens."""
    mnt.mkdir(parents=True, exist_ok=True)
    argv = ["mount", dev, str(mnt)]
    if options:
        argv[1:1] = ["-o", ",".join(options)]
    sh(*argv)
    try:
        yield mnt
    finally:
        unmount_own(mnt)


def unmount_own(mnt: Path, patience: float = 10.0) -> None:
    """Unmount the test's own mount point, trying again while it is busy for a moment (a
    process of the other test worker passing through it). By its path only, never a lazy
    unmount: the path is the test's, whatever device another test may have taken since."""
    deadline = time.monotonic() + patience
    while True:
        done = sh("umount", str(mnt), check=False)
        if done.returncode == 0 or not os.path.ismount(mnt) or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def leftovers(folder: Path | str) -> list[str]:
    """Loop devices and mounts whose lines name `folder` (a test's own tmp folder): what a run
    made there and left behind."""
    marker = str(folder)
    loops = [line for line in sh("losetup", "-a").stdout.splitlines() if marker in line]
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if marker in line]
    return loops + mounts


def force_clean(marker: str) -> None:
    """Belt and braces after a failed test: only what carries this test's marker."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if marker in line:
            sh("umount", "-l", line.split()[4].replace("\\040", " "), check=False)
    for line in sh("losetup", "-a").stdout.splitlines():
        if marker in line:
            sh("losetup", "-d", line.split(":")[0], check=False)


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[str]:
    """A 1 GiB loop device over a sparse file, for tests that need a real block device (root)."""
    require_root_tools("losetup", "mkfs.xfs")
    with loop_device(tmp_path / "loop.img", 1 << 30) as dev:
        yield dev


@pytest.fixture(autouse=True, scope="session")
def _own_state_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run journal of every command the tests start lives in this run's temp folder, never
    in the host's /run/xfs-advisor (where a real run's journal would be), so two test runs at
    once never see each other's runs. A test that wants its own sets the variable again. TMPDIR
    too: the temporary files the advisor and its tools make (a dry run's sparse image) go into
    this run's temp folder, and are removed with it."""
    saved = {name: os.environ.get(name) for name in ("XFS_ADVISOR_STATE_DIR", "TMPDIR")}
    # multiprocessing's own folder (the fleet's forkserver workers in this process) is made
    # now, in the host's temp folder, and removed by multiprocessing at exit: made in this run's
    # folder, it was gone by then and its clean-up printed a traceback after pytest's summary.
    multiprocessing.util.get_temp_dir()
    os.environ["XFS_ADVISOR_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("tmp"))
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tempfile.tempdir = None


def own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMPDIR is this test's folder, for this test only. tempfile keeps the folder it first
    found (gettempdir): it is forgotten for the test and given back after it, or every later
    test in this process would make its temporary files in a folder that is gone."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)


@pytest.fixture(scope="session")
def shared_dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real sysfs captures of tests/data/sysfs-dumps, unpacked once per run."""
    src = DATA / "sysfs-dumps"
    dumps = unpack_dumps(src, tmp_path_factory.mktemp("sysfs-dumps"))
    require(len(dumps) >= 3, f"{src} holds {len(dumps)} captures; the tests expect 3")
    return dumps
