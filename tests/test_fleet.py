"""The fleet: ansible/playbook.yml run for real with ansible-playbook (connection local) on this
machine and on inventory hosts that stand for other machines by reading captured trees, twice;
then `xfs-advisor fleet` over what it stored. And the report's own rules on hand-made results."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from tests.audit.test_audit import formatted
from tests.bench.test_guard import checksum
from tests.conftest import REPO, json_command, require
from tests.fleet_hosts import run_playbook

MiB = 1 << 20
#: An fstab line with an option Linux 4.0 removed (a 'breaks' finding) for a disk not there.
OLD_FSTAB = "UUID=0000-gone /srv/old xfs delaylog,nofail 0 0\n"


def fleet(*args: str) -> tuple[int, dict[str, Any], str]:
    """`xfs-advisor fleet --json ARGS` in this process: exit code, document, stderr."""
    return json_command("fleet", *args)


def _host_venv(tmp: Path) -> Path:
    """A virtual environment standing for a host's /opt/xfs-advisor: its dependencies come from
    this test run's environment (a .pth line), so the role's pip installs only the wheel, with
    --no-deps and without the network."""
    venv = tmp / "host-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    pip.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n')
    pip.chmod(0o755)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _wheel(tmp: Path) -> Path:
    """The wheel the controller built, as a user would (pip wheel of the checkout)."""
    out = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(REPO)], check=True, capture_output=True)
    [wheel] = out.glob("xfs_advisor-*.whl")
    return wheel


@pytest.mark.root
@pytest.mark.slow
def test_playbook_twice_then_one_report(tmp_path: Path, shared_dumps: dict[str, Path]) -> None:
    require(shutil.which("ansible-playbook") is not None
            or (Path(sys.executable).parent / "ansible-playbook").exists(),
            "needs ansible-playbook (pip install -e .[test])")
    trees = {}
    for name in ("simple-lvm", "simple-nvme"):  # the unpacked copies, with an old fstab added
        trees[name] = shared_dumps[name]
        audit_dir = trees[name] / "xfs-advisor-audit"
        audit_dir.mkdir(exist_ok=True)
        (audit_dir / "fstab").write_text(OLD_FSTAB)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    results = tmp_path / "results"
    venv = _host_venv(tmp_path)
    # 4 GiB (sparse): on 512 MiB the answers' agcount=8 leaves mkfs.xfs a log under its 64 MiB
    # minimum, which the proposal's own check rejects (a known engine limit, not the fleet's).
    with formatted(tmp_path, "fleet", 4096 * MiB, "-m", "bigtime=0") as (dev, backing):
        inventory = {"all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                     "xfs_advisor_venv": str(venv), "xfs_advisor_results_dir": str(results),
                     "xfs_advisor_workload": {"access": "mixed", "concurrent_writers": 8,
                                              "mount_point": "/srv/data"}},
            "hosts": {
                "thishost": {"xfs_advisor_wheel": str(_wheel(tmp_path)),
                             "xfs_advisor_wheel_cache": str(tmp_path / "wheel-cache"),
                             "xfs_advisor_pip_args": ["--no-deps"],
                             "xfs_advisor_devices": [Path(dev).name],
                             "xfs_advisor_audit": [dev]},
                "lvmhost": {"xfs_advisor_install": False,
                            "xfs_advisor_sysroot": str(trees["simple-lvm"]),
                            "xfs_advisor_devices": ["sda", "nvme0n1"]},
                "nvmehost": {"xfs_advisor_install": False,
                             "xfs_advisor_sysroot": str(trees["simple-nvme"]),
                             "xfs_advisor_devices": ["sdb"]},
                "garbagehost": {"xfs_advisor_install": False,
                                "xfs_advisor_sysroot": str(garbage)},
            }}}
        before = checksum(backing)
        out, check = run_playbook(inventory, tmp_path, "--check", "--limit", "thishost,localhost")
        assert not results.exists() and not (venv / "bin" / "xfs-advisor").exists(), out
        assert not (tmp_path / "wheel-cache").exists()
        assert check["thishost"]["changed"] >= 1  # what it would install, not installed
        out, first = run_playbook(inventory, tmp_path)
        assert (venv / "bin" / "xfs-advisor").exists(), out[-6000:]
        assert first["thishost"]["changed"] >= 1 and first["localhost"]["changed"] >= 1
        out, second = run_playbook(inventory, tmp_path)
        for host in ("thishost", "lvmhost", "nvmehost", "garbagehost"):
            assert second[host]["changed"] == 0 and second[host]["failed"] == 0, (host, out)
        assert checksum(backing) == before, "the audit wrote to the device"
        code, doc, err = fleet(str(results))
    assert code == 0 and err == ""
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert set(hosts) == {"thishost", "lvmhost", "nvmehost", "garbagehost"}
    assert doc["counts"] == {"hosts": 4, "ok": 3, "failed": 1}
    assert "capture failed (exit 2)" in hosts["garbagehost"]["error"]
    assert "has no sys/block" in hosts["garbagehost"]["error"]
    # This machine: the loop device made here, its finding and a proposal checked by mkfs.xfs.
    [mine] = [d for d in hosts["thishost"]["devices"] if d["name"] == Path(dev).name]
    assert sum(mine["findings"].values()) >= 1  # no bigtime
    assert mine["proposal"], mine
    assert mine["proposal"]["mkfs_command"].startswith("mkfs.xfs ")
    assert mine["proposal"]["same_as_host"] is True
    for name, named in (("lvmhost", {"sda", "nvme0n1"}), ("nvmehost", {"sdb"})):
        host = hosts[name]
        assert host["status"] == "ok" and host["counts"]["breaks"] == 1  # delaylog
        proposed = {d["name"] for d in host["devices"] if d["proposal"]}
        assert proposed == named, name
        assert all(d["proposal"]["mkfs_command"].endswith(f"/dev/{d['name']}")
                   for d in host["devices"] if d["proposal"])
    # The two captures hold the same disks (same kinds, media, sizes): one shape, but not the
    # same proposals, since different devices were named.
    shared = [s for s in doc["shapes"] if set(s["hosts"]) == {"lvmhost", "nvmehost"}]
    assert shared and shared[0]["same_proposal"] is False


# ---- the report on results made without Ansible (collect.sh and store.py run directly) ----

GiB = 1 << 30
TiB = 1 << 40
KiB = 1 << 10
SAS = "pci0000:00/0000:00:02.0/host2/target2:0:0/2:0:0:0"


def _tree(root: Path) -> Path:
    from tests.inspect.sysfs_builder import Dev, write_tree

    return write_tree(root, [
        Dev("sdb", 16 * TiB, "8:16", devpath=SAS, min_io=64 * KiB, opt_io=512 * KiB,
            write_cache="write through", queue_depth=256),
        Dev("sdc", 2 * TiB, "8:32", devpath=SAS, rotational=0)])


@pytest.fixture(scope="module")
def raid_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.fleet_hosts import collect

    tmp = tmp_path_factory.mktemp("fleet")
    tree = _tree(tmp / "tree")
    return collect(tmp / "one", "raid1", tree, ["sdb"], {"concurrent_writers": 16})


def test_hosts_of_one_shape_in_a_pool_and_failed_ones(tmp_path: Path, raid_host: Path) -> None:
    from tests.fleet_hosts import replicate, store

    results = tmp_path / "results"
    replicate(raid_host, results, [f"raid{i}" for i in range(1, 7)])
    assert store(results, "down", error="UNREACHABLE: ssh: connect to host down port 22") \
        == "changed"
    assert store(results, "down", error="UNREACHABLE: ssh: connect to host down port 22") \
        == "unchanged"
    notool = results / "notool"
    notool.mkdir()
    (notool / "tool.rc").write_text("127\n")
    (notool / "tool.err").write_text("xfs-advisor is not installed on this host: no /x\n")
    shutil.copytree(raid_host, results / "garbled", symlinks=True)
    (results / "garbled" / "audit.out").write_text("{not json")
    shutil.copytree(raid_host, results / "user", symlinks=True)
    (results / "user" / "uid").write_text("1000\n")
    (results / "user" / "sysroot").write_text("\n")
    code, doc, err = fleet(str(results), "--jobs", "2")
    assert code == 0 and err == ""
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert doc["counts"] == {"hosts": 10, "ok": 6, "failed": 4}
    assert hosts["down"]["error"].startswith("UNREACHABLE")
    assert "not installed" in hosts["notool"]["error"]
    assert hosts["garbled"]["error"].startswith("unreadable results")
    assert "not run as root (uid 1000)" in hosts["user"]["error"]
    [shape] = doc["shapes"]
    assert shape["hosts"] == [f"raid{i}" for i in range(1, 7)] and shape["same_proposal"]
    sdb = next(d for d in hosts["raid3"]["devices"] if d["name"] == "sdb")
    # The LUN's geometry, and the proposal that follows it, as mkfs.xfs checked it.
    assert (sdb["sunit_bytes"], sdb["swidth_bytes"]) == (64 * KiB, 512 * KiB)
    assert sdb["proposal"]["same_as_host"] is True
    assert "/dev/sdb" in sdb["proposal"]["mkfs_command"]
    assert next(d for d in hosts["raid3"]["devices"] if d["name"] == "sdc")["proposal"] is None
    # The same in one process: the same document.
    code, alone, _ = fleet(str(results), "--jobs", "1")
    assert alone == doc


def _parent_session(sysroot: str, **_: object) -> Any:
    """A session opener that says which process started the one advising the host (a failed
    record's error carries it)."""
    from advisor.errors import BadInput

    raise BadInput(f"parent {os.getppid()}")


def test_workers_are_forked_from_the_report_unless_a_thread_runs(tmp_path: Path,
                                                                 raid_host: Path) -> None:
    """The first host is advised in the report's process and the workers are forked from it
    (they start with its rule book, modules and proposals); with another thread running here, a
    fork could copy a lock that thread holds, and the workers come from the forkserver. Both
    give the records of one process."""
    import threading

    from advisor.fleet import advise_hosts, host_folders
    from advisor.session import Session
    from tests.fleet_hosts import replicate

    results = tmp_path / "results"
    replicate(raid_host, results, [f"raid{i}" for i in range(6)])
    folders = host_folders(results)
    parents = [h.error for h in advise_hosts(folders, _parent_session, jobs=2)]
    assert parents[0] == f"unusable capture: parent {os.getppid()}"
    assert set(parents[1:]) == {f"unusable capture: parent {os.getpid()}"}
    alone = [h.model_dump_json() for h in advise_hosts(folders, Session, jobs=1)]
    assert [h.model_dump_json() for h in advise_hosts(folders, Session, jobs=2)] == alone
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        parents = [h.error for h in advise_hosts(folders, _parent_session, jobs=2)]
        assert f"unusable capture: parent {os.getpid()}" not in parents[1:]
        assert [h.model_dump_json() for h in advise_hosts(folders, Session, jobs=2)] == alone
    finally:
        stop.set()
        other.join()


#: The process a report runs in (set by the test using _dying_session).
_REPORT_PID: int | None = None


def _dying_session(sysroot: str, **kw: Any) -> Any:
    """A session opener that kills the worker process given host raid3 (as the OOM killer
    would), and opens the real session anywhere else."""
    import signal

    from advisor.session import Session

    if Path(sysroot).parent.name == "raid3" and os.getpid() != _REPORT_PID:
        os.kill(os.getpid(), signal.SIGKILL)
    return Session(sysroot, **kw)


def test_a_worker_that_dies_leaves_its_hosts_to_the_report(tmp_path: Path,
                                                         raid_host: Path) -> None:
    """A worker killed mid-report (here: while it opens raid3's session) breaks the pool; the
    hosts not yet given back are advised in the report's process, in order, and the report is
    the one a single process makes, with one notice saying so."""
    global _REPORT_PID
    from advisor.fleet import advise_hosts, host_folders
    from advisor.session import Session
    from tests.fleet_hosts import replicate

    results = tmp_path / "results"
    replicate(raid_host, results, [f"raid{i}" for i in range(8)])
    folders = host_folders(results)
    alone = [h.model_dump_json() for h in advise_hosts(folders, Session, jobs=1)]
    _REPORT_PID = os.getpid()
    told: list[str] = []
    try:
        pooled = [h.model_dump_json()
                  for h in advise_hosts(folders, _dying_session, jobs=2, notice=told.append)]
    finally:
        _REPORT_PID = None
    assert pooled == alone
    [line] = told
    left = int(re.fullmatch(r"a worker process ended abruptly \(killed, or out of memory\): "
                            r"the (\d+) hosts not yet reported are advised in this process",
                            line)[1])  # type: ignore[index]
    assert 5 <= left <= 7  # raid3 to raid7 at least; raid1 and raid2 too if not yet back


def test_a_shared_proposal_is_the_one_each_host_gets_alone(tmp_path: Path,
                                                          raid_host: Path) -> None:
    """Workers share the proposals they make (one dry run per device, environment and workload
    for the whole report): every host's record is the one a report of that host alone makes,
    without any proposal made before; and what is left in the shared folder is used only when
    it is whole and for the same key."""
    import pickle

    from advisor import fleet as fleet_module
    from advisor.fleet import advise_hosts, host_folders
    from advisor.models.fleet import FleetProposal
    from advisor.session import Session
    from tests.fleet_hosts import replicate

    results = tmp_path / "results"
    replicate(raid_host, results, [f"raid{i}" for i in range(5)])
    # One host whose sdb is named with other answers: another proposal, in the same folder.
    (results / "raid4" / "workload.json").write_text('{"median_file_size": "4KiB"}')
    folders = host_folders(results)
    pooled = [h.model_dump_json() for h in advise_hosts(folders, Session, jobs=2)]
    assert [next(advise_hosts([f], Session, jobs=1)).model_dump_json()
            for f in folders] == pooled
    sdb = [next(d for d in json.loads(h)["devices"] if d["name"] == "sdb") for h in pooled]
    assert len({d["proposal"]["mkfs_command"] for d in sdb}) == 2

    shared = tmp_path / "shared"
    shared.mkdir()
    fleet_module._init_worker(None, Session, shared=str(shared))
    try:
        made = FleetProposal(mkfs_command="mkfs.xfs /dev/sdb", mount_options=[], fstab="",
                             reasons=[], warnings=[])
        fleet_module._share("a key", made)
        fleet_module._share("another key", "no proposal: why")
        assert fleet_module._shared("a key") == made
        assert fleet_module._shared("another key") == "no proposal: why"
        assert fleet_module._shared("a third key") is None
        [path] = [p for p in shared.iterdir()
                  if pickle.loads(p.read_bytes())[0] == "a key"]
        path.write_bytes(path.read_bytes()[:-5])
        assert fleet_module._shared("a key") is None
        path.write_bytes(pickle.dumps(("not this key", made)))
        assert fleet_module._shared("a key") is None
    finally:
        fleet_module._init_worker(None, Session)


#: `xfs-advisor fleet RESULTS --jobs 2` in this process (traced: tests.test_bad_input); with
#: another thread running first (started with Ctrl-C deferred), so that the workers come from
#: the forkserver.
_POOL_WAITS = """
from advisor.cli import main
if {other_thread}:
    from advisor.system.runner import start_thread
    held = threading.Lock()
    held.acquire()
    start_thread(threading.Thread(target=held.acquire, daemon=True))
assert main(["fleet", {results!r}, "--jobs", "2", "--json"]) == 0
"""


@pytest.mark.parametrize("other_thread", [False, True], ids=["forked", "forkserver"])
def test_the_pool_never_waits_in_threading_code_while_ctrl_c_raises(
        tmp_path: Path, raid_host: Path, other_thread: bool) -> None:
    """The report with several workers waits as the runner does: its pool is started and shut
    down (Thread.start, Thread.join) with Ctrl-C deferred, and each piece of records is waited
    for on a bare lock, not in Future.result's Condition.wait, where a second interrupt can
    leave a lock released by the wrong thread (CPython gh-118433). The same report as alone."""
    from tests.fleet_hosts import replicate
    from tests.test_bad_input import _waits_in_threading

    results = tmp_path / "results"
    replicate(raid_host, results, [f"raid{i}" for i in range(8)])
    script = _POOL_WAITS.format(other_thread=other_thread, results=str(results))
    waits, out, err = _waits_in_threading(tmp_path, script)
    assert waits == [], err[-2000:]
    doc = json.loads(out)
    assert doc["counts"] == {"hosts": 8, "ok": 8, "failed": 0}
    assert fleet(str(results), "--jobs", "1")[1] == doc


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


@pytest.mark.parametrize("group", [True, False], ids=["terminal", "report-alone"])
def test_ctrl_c_while_the_workers_run_is_one_line_exit_130(tmp_path: Path, raid_host: Path,
                                                           group: bool) -> None:
    """Ctrl-C once the workers run (sent to the whole group, as a terminal does, or to the report
    alone): one line, exit 130, and no worker left running (they are killed, not waited for;
    they ignore Ctrl-C: a worker's KeyboardInterrupt printed "Process ForkProcess-1:" and its
    traceback)."""
    import signal
    import tempfile
    import time

    from tests.conftest import scratch_parent

    # 800 hosts (about a second of the workers' time), in /dev/shm where it can be: 46,000
    # files, which a busy disk took 8 s to remove.
    scratch = Path(tempfile.mkdtemp(prefix="fleet-ctrl-c.", dir=scratch_parent()))
    results = scratch / "results"
    results.mkdir()
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
    env.pop("XFS_ADVISOR_DEBUG", None)
    proc: subprocess.Popen[str] | None = None
    try:
        shutil.copytree(raid_host, results / "raid000", symlinks=True)
        for i in range(1, 800):  # hard links to the first copy
            shutil.copytree(results / "raid000", results / f"raid{i:03d}", symlinks=True,
                            copy_function=os.link)
        proc = subprocess.Popen([sys.executable, "-m", "advisor", "fleet", str(results),
                                 "--jobs", "2"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
            with contextlib.suppress(OSError):
                workers = _children(proc.pid)
        assert len(workers) == 2 and proc.poll() is None, (workers, proc.poll())
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    assert (proc.returncode, err) == (130, "xfs-advisor: interrupted\n")
    assert [w for w in workers if os.path.exists(f"/proc/{w}")] == []


def test_a_proposal_another_worker_is_making_is_waited_for(tmp_path: Path,
                                                          raid_host: Path) -> None:
    """Two workers needing the same proposal at once: one makes it, the other waits for it
    (not two mkfs.xfs dry runs); when the one making it fails, the other makes it itself."""
    import threading
    import time

    from advisor import fleet as fleet_module
    from advisor.models.fleet import FleetProposal
    from advisor.models.workload import Workload
    from advisor.session import Session

    made: list[str] = []
    failing = threading.Event()

    class Slow(Session):
        def propose(self, *args: Any, **kwargs: Any) -> Any:
            made.append(threading.current_thread().name)
            time.sleep(0.3)  # long enough for the other to find the mark
            if failing.is_set():
                failing.clear()
                raise RuntimeError("this worker fails")
            return super().propose(*args, **kwargs)

    session = Slow(str(raid_host / "capture"))
    device = session.device("sdb")
    shared = tmp_path / "shared"
    found: dict[str, object] = {}

    def advise(name: str) -> None:
        try:
            found[name] = fleet_module._propose(session, device, Workload())
        except RuntimeError as err:
            found[name] = str(err)

    for fail in (False, True):
        made.clear()
        found.clear()
        shared.mkdir()
        fleet_module._init_worker(None, Session, shared=str(shared))
        try:
            if fail:
                failing.set()
            first = threading.Thread(target=advise, args=("first",), name="first")
            first.start()
            while not any(p.name.endswith(".making") for p in shared.iterdir()):
                time.sleep(0.01)
            second = threading.Thread(target=advise, args=("second",), name="second")
            second.start()
            first.join()
            second.join()
        finally:
            fleet_module._init_worker(None, Session)
        waited = found["second"]
        assert isinstance(waited, FleetProposal) and "/dev/sdb" in waited.mkfs_command
        if not fail:
            assert made == ["first"]
            assert found["first"] == waited
        else:
            assert made == ["first", "second"]
            assert found["first"] == "this worker fails"
        assert not any(p.name.endswith(".making") for p in shared.iterdir())
        shutil.rmtree(shared)


def test_table_and_markdown_name_every_host(tmp_path: Path, raid_host: Path) -> None:
    from tests.fleet_hosts import replicate, store

    results = tmp_path / "results"
    replicate(raid_host, results, ["a", "b"])
    store(results, "c", error="boom")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results)]) == 0
    table = out.getvalue()
    assert re.search(r"^c +FAILED .* boom$", table, re.M)
    assert re.search(r"^a +ok +shape-1 +sdb +disk/rot +16 TiB +64 KiBx8 ", table, re.M)
    md = tmp_path / "fleet.md"
    assert main(["fleet", str(results), "--markdown", "-o", str(md)]) == 0
    text = md.read_text()
    assert "| a | ok | shape-1 | sdb |" in text and "- **c**: boom" in text
    assert "(2 hosts, the same proposals)" in text


@pytest.mark.parametrize(("args", "message"), [
    (["/nonexistent/results"], "is not a readable directory"),
    (["{empty}"], "holds no host folder"),
    (["{empty}", "--jobs", "0"], "--jobs 0"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    args = [a.replace("{empty}", str(tmp_path)) for a in args]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["fleet", *args]) == 2
    assert message in err.getvalue() and len(err.getvalue().splitlines()) == 1


def _with_absent_fstab_finding(folder: Path) -> None:
    """The host's audit gains an fstab line for a disk that is not there, with an option Linux
    4.0 removed (what `audit` reports for OLD_FSTAB)."""
    from advisor.models.audit import AuditDocument, FilesystemAudit, Finding

    audit = AuditDocument.model_validate_json((folder / "audit.out").read_text())
    audit.filesystems.append(FilesystemAudit(
        device=None, mountpoint="/srv/old", mounted=False, read_with=None, fstab_line=1,
        fstab_options=["delaylog", "nofail"],
        findings=[Finding(rule="delaylog", severity="breaks", title="delaylog was removed",
                          evidence="delaylog", source="Linux 4.0", fix="drop it",
                          fix_kind="next-mount")]))
    audit.counts["breaks"] = audit.counts.get("breaks", 0) + 1
    (folder / "audit.out").write_text(audit.model_dump_json())


def test_findings_by_rule_gate_and_proposals_with_reasons(tmp_path: Path,
                                                          raid_host: Path) -> None:
    from tests.fleet_hosts import replicate

    results = tmp_path / "results"
    replicate(raid_host, results, ["a", "b", "c"])
    for name in ("a", "c"):
        _with_absent_fstab_finding(results / name)
    code, doc, err = fleet(str(results))
    assert code == 0 and err == ""  # no --fail-on: no gate
    hosts = {h["host"]: h for h in doc["hosts"]}
    # The finding of a line whose disk is absent is a row of the host, and counted.
    [absent] = [d for d in hosts["a"]["devices"] if d["kind"] == "absent"]
    assert absent["name"] == "/srv/old (absent)" and absent["findings"] == {"breaks": 1}
    assert hosts["a"]["findings"] == [{"rule": "delaylog", "severity": "breaks",
                                       "title": "delaylog was removed", "due_kernel": None,
                                       "device": None, "mountpoint": "/srv/old"}]
    assert not [d for d in hosts["b"]["devices"] if d["kind"] == "absent"]
    assert doc["by_rule"] == [{"rule": "delaylog", "severity": "breaks",
                               "title": "delaylog was removed", "hosts": ["a", "c"],
                               "findings": 2}]
    # The absent line does not change the hardware shape: one shape for the three.
    [shape] = doc["shapes"]
    assert shape["hosts"] == ["a", "b", "c"]
    assert "stripe 64 KiBx8" in shape["devices"] and "524288" not in shape["devices"]
    # mkfs.xfs takes the LUN's stripe by itself: the defaults kept, no reasons.
    sdb = next(d for d in hosts["b"]["devices"] if d["name"] == "sdb")
    assert sdb["proposal"]["reasons"] == [] and sdb["proposal"]["warnings"] == []
    code, gated, _ = fleet(str(results), "--fail-on", "will-break")
    assert code == 6 and gated["failing_hosts"] == ["a", "c"]
    code, _, _ = fleet(str(results), "--fail-on", "will-break", "--rules", str(tmp_path))
    assert code == 6
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results), "--by-rule"]) == 0
    assert "delaylog [breaks] 2 hosts, 1 findings" not in out.getvalue()
    assert "delaylog [breaks] 2 hosts, 2 findings: delaylog was removed\n    a, c\n" \
        in out.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results), "--by-proposal"]) == 0
    assert "3 devices, the defaults kept: mkfs.xfs /dev/sdb\n    a:sdb, b:sdb, c:sdb\n" \
        in out.getvalue(), out.getvalue()


def test_a_non_default_proposal_carries_its_reasons(tmp_path: Path) -> None:
    from tests.fleet_hosts import collect

    results = tmp_path / "results"
    collect(results, "big", _tree(tmp_path / "tree"), ["sdb"],
            {"atime_needed": False, "median_file_size": "4KiB", "fsyncs_per_second": 5000})
    code, doc, _ = fleet(str(results))
    assert code == 0
    [host] = doc["hosts"]
    sdb = next(d for d in host["devices"] if d["name"] == "sdb")
    reasons = sdb["proposal"]["reasons"]
    assert reasons and all(r["rule"] and r["reason"] and r["value"] != r["default"]
                           for r in reasons), sdb["proposal"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results), "--by-proposal"]) == 0
    text = out.getvalue()
    assert "1 devices, non-default: " + sdb["proposal"]["mkfs_command"] in text, text
    for r in reasons:
        assert f"    {r['setting']} {r['value']} (default {r['default']}), rule {r['rule']}: " \
            in text


def test_csv_has_every_row_and_every_finding_with_its_rule(tmp_path: Path,
                                                           raid_host: Path) -> None:
    import csv

    from tests.fleet_hosts import replicate, store

    results = tmp_path / "results"
    replicate(raid_host, results, ["a", "b"])
    _with_absent_fstab_finding(results / "a")
    store(results, "=cmd", error="=HYPERLINK(\"x\")")
    out = tmp_path / "fleet.csv"
    assert main(["fleet", str(results), "--csv", "-o", str(out)]) == 0
    table, findings = out.read_text().split("\n\n")
    rows = list(csv.reader(table.splitlines()))
    assert rows[0][:3] == ["HOST", "STATUS", "SHAPE"]
    assert rows[1][:2] == ["'=cmd", "FAILED"] and rows[1][9] == "'=HYPERLINK(\"x\")"
    assert any(r[0] == "a" and r[3] == "/srv/old (absent)" and r[7] == "1 breaks"
               for r in rows)
    assert list(csv.reader(findings.splitlines()))[1:] == [
        ["a", "delaylog", "breaks", "", "/srv/old", "delaylog was removed"]]


def test_html_report_is_one_page_with_host_text_escaped(tmp_path: Path, raid_host: Path) -> None:
    from tests.fleet_hosts import replicate, store

    results = tmp_path / "results"
    replicate(raid_host, results, ["a"])
    _with_absent_fstab_finding(results / "a")
    store(results, "<b>x", error="<script>alert(1)</script> & \"q\"")
    page = tmp_path / "fleet.html"
    assert main(["fleet", str(results), "--html", "-o", str(page)]) == 0
    text = page.read_text()
    assert "<script>alert(1)" not in text and "<b>x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;" in text
    assert "<td>&lt;b&gt;x</td><td>FAILED</td>" in text
    assert "<td>delaylog</td><td>breaks</td><td>1</td><td>1</td>" in text
    # Self-contained: no address to fetch anything from; one inline script (sort and filter).
    assert "http://" not in text and "https://" not in text and " src=" not in text
    assert text.count("<script>") == 1 and 'id="filter"' in text


SPILLING = """
import os, sys, time
folder = sys.argv[1]
os.makedirs(folder, exist_ok=True)
i = 0
while True:
    path = f"{folder}/x{i}"
    open(path, "w").close()
    os.setxattr(path, "user.tag", b"v" * 300)
    i += 1
    time.sleep(0.01)
"""


@pytest.mark.root
@pytest.mark.slow
def test_observe_findings_by_rule_across_hosts(tmp_path: Path) -> None:
    """The role's collect step observes a live XFS whose files get 300-byte attributes (never
    inline) for 2 s: fleet groups the inode-size finding by rule over the hosts that observed,
    says nothing for a host that was not asked, and gives the error of one whose observation
    failed."""
    from tests.conftest import loop_device, mounted, sh
    from tests.fleet_hosts import collect, replicate
    from tests.observe.test_observe import have_perf

    require(have_perf(), "needs perf with xfs tracepoints")
    tree = _tree(tmp_path / "tree")
    results = tmp_path / "results"
    with loop_device(tmp_path / "fs.img", 512 * MiB) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            writer = subprocess.Popen([sys.executable, "-c", SPILLING, str(mnt / "tagged")])
            try:
                busy = collect(tmp_path / "one", "busy", tree, [], observe_for=2,
                               observe=(str(mnt),))
            finally:
                writer.kill()
                writer.wait()
    assert (busy / "observe.rc").read_text().strip() == "0", (busy / "observe.err").read_text()
    replicate(busy, results, ["busy1", "busy2", "broken"])
    quiet = collect(tmp_path / "two", "quiet", tree, [])
    assert not (quiet / "observe.rc").exists()
    replicate(quiet, results, ["quiet"])
    (results / "broken" / "observe.rc").write_text("3\n")
    (results / "broken" / "observe.err").write_text(
        "xfs-advisor: /srv was unmounted during the observation\n")
    code, doc, err = fleet(str(results))
    assert code == 0 and err == ""
    hosts = {h["host"]: h for h in doc["hosts"]}
    [group] = [g for g in doc["observe_by_rule"] if g["rule"] == "inode-size"]
    assert group["hosts"] == ["busy1", "busy2"], doc["observe_by_rule"]
    assert group["findings"] == 2
    # Every file gets a 300-byte value, so (nearly) every setxattr spills; a file made at the
    # window's edge may have its setxattr counted on one side of it only.
    spilled = re.search(r"(\d+) of (\d+) setxattr calls \((\d+)%\) moved the attributes out "
                        r"of the 512-byte inode", group["example"])
    assert spilled and int(spilled[3]) >= 90, group["example"]
    assert hosts["busy1"]["observed_seconds"] == 2
    assert hosts["busy1"]["observe_findings"][0]["mountpoint"] == str(tmp_path / "mnt")
    assert hosts["quiet"]["observed_seconds"] is None and hosts["quiet"]["observe_error"] is None
    assert hosts["broken"]["observe_error"] == ("observe failed (exit 3): /srv was unmounted "
                                                "during the observation")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results), "--by-rule"]) == 0
    text = out.getvalue()
    # Other findings may join inode-size (a directory the writer grew past one block under
    # load): the view is checked block by block, not for inode-size being first.
    _, _, rest = text.partition("observed under load on 3 hosts; observe findings by rule:\n")
    assert rest, text
    assert "\ninode-size [observed] 2 hosts, 2 findings: " in "\n" + rest, text
    assert re.search(r"^inode-size \[observed\] .*\n    busy1, busy2\n", rest, re.M), text
    assert re.search(r"\n    [^\n]*\nbroken: observe failed \(exit 3\): /srv was unmounted",
                     rest), text


def test_every_view_says_when_each_host_collected(tmp_path: Path, raid_host: Path) -> None:
    import csv

    from tests.fleet_hosts import replicate, store

    results = tmp_path / "results"
    replicate(raid_host, results, ["a", "b"])
    (results / "b" / "collected_at").write_text("2026-01-31T12:00:00Z\n")
    store(results, "c", error="boom")
    when = (raid_host / "collected_at").read_text().strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", when), when
    _, doc, _ = fleet(str(results))
    hosts = {h["host"]: h["collected_at"] for h in doc["hosts"]}
    assert hosts == {"a": when, "b": "2026-01-31T12:00:00Z", "c": None}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results)]) == 0
    assert re.search(r"^b +ok +shape-1 +sdb .* 2026-01-31T12:00:00Z +mkfs\.xfs ", out.getvalue(),
                     re.M), out.getvalue()
    assert re.search(r"^c +FAILED .* - +boom$", out.getvalue(), re.M)
    assert main(["fleet", str(results), "--csv", "-o", str(tmp_path / "f.csv")]) == 0
    rows = list(csv.reader((tmp_path / "f.csv").read_text().split("\n\n")[0].splitlines()))
    column = rows[0].index("COLLECTED")
    assert {r[0]: r[column] for r in rows[1:]}["b"] == "2026-01-31T12:00:00Z"
    assert main(["fleet", str(results), "--html", "-o", str(tmp_path / "f.html")]) == 0
    page = (tmp_path / "f.html").read_text()
    assert "<th>COLLECTED</th>" in page and "<td>2026-01-31T12:00:00Z</td>" in page
    # Not a UTC time in ISO 8601: unknown, not shown as the host wrote it.
    (results / "b" / "collected_at").write_text("\x1b[31myesterday\n")
    assert {h["host"]: h["collected_at"] for h in fleet(str(results))[1]["hosts"]}["b"] is None


def test_since_a_previous_collection(tmp_path: Path, raid_host: Path) -> None:
    """Hosts added, removed, failed; a finding gained and one cleared (by rule id); a proposal
    changed by new answers. The same from the previous folder and from its saved JSON."""
    from tests.fleet_hosts import replicate, store

    old, new = tmp_path / "old", tmp_path / "new"
    replicate(raid_host, old, ["a", "b", "c", "d", "gone"])
    _with_absent_fstab_finding(old / "c")
    replicate(raid_host, new, ["a", "b", "c", "d", "fresh"])
    _with_absent_fstab_finding(new / "a")
    (new / "b" / "workload.json").write_text(json.dumps(
        {"atime_needed": False, "median_file_size": "4KiB", "fsyncs_per_second": 5000}))
    shutil.rmtree(new / "d")
    store(new, "d", error="UNREACHABLE: ssh: connect to host d port 22")
    code, doc, err = fleet(str(new), "--since", str(old))
    assert code == 0 and err == "", err
    d = doc["since"]
    assert (d["added"], d["removed"], d["failed"], d["recovered"]) == (["fresh"], ["gone"],
                                                                        ["d"], [])
    assert d["rules"] == [{"rule": "delaylog", "severity": "breaks",
                           "title": "delaylog was removed", "gained": ["a"], "cleared": ["c"]}]
    [changed] = d["proposals"]
    assert (changed["host"], changed["device"]) == ("b", "sdb")
    assert changed["before"] == "mkfs.xfs /dev/sdb" and changed["after"] != changed["before"]
    saved = tmp_path / "old.json"
    assert main(["fleet", str(old), "--json", "-o", str(saved)]) == 0
    code, from_file, _ = fleet(str(new), "--since", str(saved))
    assert from_file["since"] == {**d, "previous": str(saved)}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(new), "--since", str(saved), "--fail-on", "breaks"]) == 6
    text = out.getvalue()
    assert text.startswith(f"5 hosts: 4 complete, 1 failed; since {saved}: 1 hosts added, "
                           "1 removed, 1 failed, 0 recovered; 1 rules with findings gained or "
                           "cleared; 1 proposals changed\n"), text
    assert "hosts failed:\n    d: UNREACHABLE: ssh: connect to host d port 22\n" in text
    assert ("delaylog [breaks]: delaylog was removed\n    gained on 1 hosts: a\n"
            "    cleared on 1 hosts: c\n") in text
    assert "proposal for b:sdb\n    before: mkfs.xfs /dev/sdb\n    now:    mkfs.xfs " in text
    # The same collection: nothing changed.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(new), "--since", str(new)]) == 0
    assert out.getvalue().endswith("proposals changed\nnothing changed\n")


@pytest.mark.parametrize(("old", "message"), [
    ("{tmp}/nothing", "--since {tmp}/nothing"),
    ("{tmp}/audit.json", "is neither a results folder nor a saved `fleet --json` document"),
])
def test_since_something_unreadable_is_one_line(tmp_path: Path, raid_host: Path, old: str,
                                                message: str) -> None:
    (tmp_path / "audit.json").write_text('{"schema_version": 1, "filesystems": []}')
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["fleet", str(raid_host.parent), "--since", old.format(tmp=tmp_path)])
    assert code == 2 and message.format(tmp=tmp_path) in err.getvalue()
    assert len(err.getvalue().splitlines()) == 1, err.getvalue()


def _with_will_break(folder: Path, rule: str, due: str) -> None:
    """The host's audit gains a will-break fstab finding due from kernel `due`."""
    from advisor.models.audit import AuditDocument, FilesystemAudit, Finding

    audit = AuditDocument.model_validate_json((folder / "audit.out").read_text())
    audit.filesystems.append(FilesystemAudit(
        device=None, mountpoint=f"/srv/{rule}", mounted=False, read_with=None, fstab_line=1,
        findings=[Finding(rule=rule, severity="will-break", title=f"{rule} goes away",
                          evidence=rule, source="test", when="some day", due_kernel=due,
                          fix="drop it", fix_kind="next-mount")]))
    audit.counts["will-break"] = audit.counts.get("will-break", 0) + 1
    (folder / "audit.out").write_text(audit.model_dump_json())


def test_which_hosts_the_target_kernel_refuses(tmp_path: Path, raid_host: Path) -> None:
    """Findings due at different kernels: each target kernel fails the hosts it refuses."""
    from tests.fleet_hosts import replicate

    results = tmp_path / "results"
    replicate(raid_host, results, ["a", "b", "c"])
    _with_will_break(results / "a", "attr2", "6.19")
    _with_will_break(results / "b", "audit-v4", "7.4")
    failing, breaking = {}, {}
    for kernel in ("6.18", "6.19", "7.4", "rhel9", "ubuntu24.04"):
        code, doc, err = fleet(str(results), "--kernel", kernel, "--fail-on", "breaks")
        assert err == "" and doc["target_kernel"] == kernel
        assert code == (6 if doc["failing_hosts"] else 0)
        failing[kernel] = doc["failing_hosts"]
        breaking[kernel] = sorted(r["rule"] for r in doc["by_rule"] if r["severity"] == "breaks")
    assert failing == {"6.18": [], "6.19": ["a"], "7.4": ["a", "b"], "rhel9": [],
                       "ubuntu24.04": []}
    assert breaking == {"6.18": [], "6.19": ["attr2"], "7.4": ["attr2", "audit-v4"],
                        "rhel9": [], "ubuntu24.04": []}
    # Without a target: will-break, as each host's audit said.
    code, doc, _ = fleet(str(results), "--fail-on", "breaks")
    assert code == 0 and doc["target_kernel"] is None
    assert {r["rule"]: r["severity"] for r in doc["by_rule"]} == {"attr2": "will-break",
                                                                  "audit-v4": "will-break"}
    # One command answers "which hosts will the new kernel refuse?".
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results), "--kernel", "6.19", "--by-rule",
                     "--fail-on", "breaks"]) == 6
    assert "attr2 [breaks] 1 hosts, 1 findings: attr2 goes away\n    a\n" in out.getvalue()
    assert out.getvalue().endswith("--fail-on breaks: 1 hosts fail: a\n")
    [row] = [d for d in fleet(str(results), "--kernel", "6.19")[1]["hosts"][0]["devices"]
             if d["kind"] == "absent"]
    assert row["findings"] == {"breaks": 1}
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["fleet", str(results), "--kernel", "next"]) == 2
    assert err.getvalue().startswith("xfs-advisor: --kernel next: give a kernel version")


def test_a_proposal_with_a_warning_reaches_by_proposal_with_it(tmp_path: Path) -> None:
    """A disk whose partition is mounted: its own proposal warns, and so does every view."""
    from tests.fleet_hosts import collect
    from tests.inspect.sysfs_builder import Dev, Part, write_tree

    tree = write_tree(tmp_path / "tree", [
        Dev("sdb", 4 * TiB, "8:16", devpath=SAS, write_cache="write through",
            partitions=[Part("sdb1", 2048, 1024 * GiB)])],
        mountinfo="1 0 8:17 / /data rw - xfs /dev/sdb1 rw")
    results = tmp_path / "results"
    folder = collect(results, "parted", tree, ["sdb"])
    own = json.loads((folder / "proposals" / "sdb.out").read_text())["proposal"]
    [theirs] = [w for w in own["warnings"] if w["rule"] == "device-partitions"]
    _, doc, _ = fleet(str(results))
    [sdb] = [d for d in doc["hosts"][0]["devices"] if d["name"] == "sdb"]
    assert {"rule": "device-partitions", "message": theirs["message"]} \
        in sdb["proposal"]["warnings"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", str(results), "--by-proposal"]) == 0
    assert (f"1 devices, the defaults kept: mkfs.xfs /dev/sdb\n"
            f"    warning (device-partitions): {theirs['message']}\n    parted:sdb\n") \
        in out.getvalue(), out.getvalue()
    assert "sdb1" in theirs["message"]


@pytest.mark.parametrize("text", [
    '{"proposal": {"mkfs_command": "mkfs.xfs /dev/sdb"}}',
    '{"schema_version": 1, "proposal": {"mkfs_command": "mkfs.xfs -d su=64k /dev/sdb", "x": 1}}',
    '{"proposal": {"mkfs_command": "mkfs.xfs /dev/sdb"}, "extra": [NaN, Infinity, 1e999]}',
    '{"proposal": {"mkfs_command": "a"}, "proposal": {"mkfs_command": "mkfs.xfs /dev/sdb"}}',
    '{"proposal": {"mkfs_command": 5}}', '{"proposal": {"mkfs_command": null}}',
    '{"proposal": {}}', '{"proposal": []}', '[{"proposal": 1}]', '"text"', "{not json", "",
    '{"proposal": {"mkfs_command": "mkfs.xfs /dev/sdb"}} trailing',
])
def test_same_as_host_is_what_the_whole_document_says(tmp_path: Path, text: str) -> None:
    """Only the host's mkfs command is read from its proposal (not the whole document): the
    answer is the one of reading it all, for odd documents too."""
    from advisor.fleet import _same_as_host
    from advisor.models.fleet import FleetProposal

    (tmp_path / "proposals").mkdir()
    (tmp_path / "proposals" / "sdb.out").write_text(text)
    made = FleetProposal(mkfs_command="mkfs.xfs /dev/sdb", mount_options=[], fstab="",
                         reasons=[], warnings=[])
    try:
        whole: bool | None = json.loads(text)["proposal"]["mkfs_command"] == made.mkfs_command
    except (ValueError, KeyError, TypeError):
        whole = None
    assert _same_as_host(tmp_path, "/dev/sdb", made) is (whole if text else None)
