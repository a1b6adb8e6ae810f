"""The Session both front ends share: one way to read devices, apply rules and refuse what cannot
apply. Before it, the TUI and the CLI drove the core each in its own way and drifted (validate
ignored site rules; a captured tree given to validate benchmarked the live machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from advisor.errors import BadInput
from advisor.models.workload import Workload
from advisor.session import Session
from advisor.tui.app import build_app
from tests.bench.test_guard import GIB, attached, checksum
from tests.conftest import REPO, require_root_tools
from tests.engine.test_cli import cli

if TYPE_CHECKING:
    from advisor.models.bench import ValidationReport


def _site_rules(tmp_path: Path) -> Path:
    """Site rules replacing two built-in ones: 16 AGs for concurrency, not 32; 12 MiB of log
    reservation per writer, not the measured 630 KiB (16 writers, each also holding the
    kernel's 15 KiB of headers and padding: 257 MiB of log)."""
    site = tmp_path / "site-rules"
    site.mkdir()
    for rule, old, new in (("ag-concurrency", "target_agcount = 32", "target_agcount = 16"),
                           ("log-size", "reservation_bytes_per_writer = 645456",
                            "reservation_bytes_per_writer = 12582912")):
        text = (REPO / "rules" / "mkfs" / f"{rule}.toml").read_text()
        assert old in text
        (site / f"{rule}.toml").write_text(text.replace(old, new))
    return site


@pytest.mark.parametrize("argv", [["validate"], ["profile", "/tmp"]])
def test_a_captured_tree_is_refused_where_only_the_live_system_can_serve(
        shared_dumps: dict[str, Path], argv: list[str]) -> None:
    root = str(shared_dumps["simple-nvme"])
    for line in (["--sysroot", root, *argv], [*argv[:1], "--sysroot", root, *argv[1:]]):
        done = cli(*line)
        assert done.returncode == 2, done.stderr
        line = done.stderr.strip()
        assert "\n" not in line and line.startswith(f"xfs-advisor: {argv[0]} ")
        assert "--sysroot" in line and "Traceback" not in line


def test_the_session_refuses_live_only_work_on_a_capture(shared_dumps: dict[str, Path]) -> None:
    """What the TUI calls: a session over a captured tree can propose, never validate or scan."""
    root = str(shared_dumps["simple-nvme"])
    session = Session(root)
    device = session.device("sda")
    with pytest.raises(BadInput, match="captured tree"):
        session.recover(loop=True)
    with pytest.raises(BadInput, match="captured tree"):
        session.profile("/tmp")
    assert session.scratch_refusals(device) == [
        "a captured tree: only the live system's devices can be formatted"]


def test_the_tui_and_the_command_line_propose_alike(shared_dumps: dict[str, Path],
                                                    tmp_path: Path) -> None:
    root = str(shared_dumps["simple-nvme"])
    site = _site_rules(tmp_path)
    work = Workload(concurrent_writers=16)
    app = build_app(Session(root, rules_dir=str(site)), device="sda", workload=work)
    device = app.state.session.device("sda")  # 223.6 GiB: room for 32 AGs of at least 1 GiB
    tui = app.state.session.propose(device, work)
    done = cli("--json", "--sysroot", root, "--rules", str(site), "--device", "sda",
               "--concurrent-writers", "16")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)["proposal"]
    assert tui.mkfs_command == printed["mkfs_command"]
    ag = next(d for d in tui.decisions if d.setting == "-d agcount/agsize")
    assert ag.options == ["-d", "agcount=16"]


def test_validate_proposes_with_the_site_rules(tmp_path: Path) -> None:
    """B of `validate --device DEV --rules DIR` is the proposal under those rules; the plan
    printed before the confirmation shows it. Not confirmed: nothing written."""
    require_root_tools("losetup", "mkfs.xfs", "fio")
    site = _site_rules(tmp_path)
    backing = tmp_path / "scratch.img"
    with attached(backing, 64 * GIB) as dev:  # sparse: room for the log, nothing written
        before = checksum(backing)
        env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
        done = subprocess.run(
            [sys.executable, "-m", "advisor", "validate", "--device", dev, "--rules", str(site),
             "--concurrent-writers", "16"], input="no\n", capture_output=True, text=True,
            cwd=REPO, env=env, timeout=120)
        assert done.returncode == 2, done.stderr
        # The loop device is no single disk (its storage is its backing file's): 16 AGs.
        assert f"mkfs.xfs -f -K -d agcount=16 -l size=257m {dev}" in done.stderr, done.stderr
        assert checksum(backing) == before


def test_the_inventory_is_read_once_until_refreshed(shared_dumps: dict[str, Path]) -> None:
    session = Session(str(shared_dumps["simple-lvm"]))
    first = session.inventory()
    assert session.inventory() is first
    assert session.inventory(refresh=True) is not first
    fixed = Session(inventory=first)
    assert fixed.inventory(refresh=True) is first and not fixed.follows_hotplug


def test_a_partial_scan_is_its_own_and_leaves_the_kept_one(shared_dumps: dict[str, Path]) -> None:
    """`devices --json --fields` and `--no-probe` go through the Session too, with scans of their
    own: what the TUI and the proposal use is never a partial inventory."""
    session = Session(str(shared_dumps["simple-lvm"]))
    kept = session.inventory()
    part = session.inventory(fields=frozenset({"rotational"}))
    assert part is not kept and session.inventory() is kept
    assert [d.name for d in part.devices] == [d.name for d in kept.devices]
    assert all(d.write_cache.value is None for d in part.devices)  # not read
    assert any(d.write_cache.value is not None for d in kept.devices)
    bare = session.inventory(probe=False)
    assert bare is not kept and session.inventory() is kept


def attributable_report() -> ValidationReport:
    """A loop run of 6 pairs that took 90 s, whose B (logbsize=256k and noatime, given) moved
    the log writes per 1k directory operations: what an attribution is offered for."""
    from advisor.models.bench import ValidationReport

    moved = {"name": "log_writes_per_1k_dirops", "title": "log writes per 1k directory ops",
             "unit": "writes", "higher_is_better": False, "a": [9.0] * 6, "b": [1.3] * 6,
             "ratio": 0.14, "ci": [0.13, 0.15], "margin": 0.05, "noise": 0.02,
             "verdict": "better"}
    return ValidationReport.model_validate({
        "a": {"label": "A"}, "rounds": 6, "order": ["A", "B"], "metrics": [],
        "b": {"label": "B", "mount_options": ["logbsize=256k", "noatime"],
              "source": "given options"},
        "mechanisms": [moved], "verdict": "equivalent", "summary": "-",
        "timing": {"wall_seconds": 90, "measuring_seconds": 1, "measuring_share": 1},
        "environment": {"device": "/dev/loop9", "device_size_bytes": 1 << 30}})


def test_both_front_ends_offer_attribution_from_one_choice() -> None:
    """The TUI's offer and `validate --attribute`'s line come from the same choice: the same
    options, estimate and reason not to; a scratch device is left to the command line, which
    holds it between the runs."""
    from advisor.bench.plan import Plan
    from advisor.models.bench import SideConfig

    report = attributable_report()
    b = report.b
    loop = Plan(a=SideConfig(label="A"), b=b, workload=Workload())

    choice = Session.attribution_choice(loop, report)
    assert choice.options == ("logbsize=256k", "noatime") and choice.why_not is None
    minutes = f"about {choice.seconds / 60:.0f} min"
    assert choice.seconds > 90
    assert Session.attribution_offer(loop, report) == (
        f"ctrl+b: which option moved what: 2 more A/B runs (logbsize=256k, noatime), {minutes}")
    assert choice.announcement() == (
        f"attribution: 2 more A/B runs, one per option (logbsize=256k, noatime), {loop.pairs} "
        f"pairs and a {loop.budget_seconds:.0f} s budget each: {minutes} (the combined run "
        "took 90 s)")

    scratch = Plan(a=SideConfig(label="A"), b=b, workload=Workload(), device="/dev/sdz")
    assert Session.attribution_offer(scratch, report) == (
        "Attribution: not offered: on /dev/sdz it runs from the command line, with the device "
        "held between runs: xfs-advisor validate --device /dev/sdz --attribute")
    assert Session.attribution_choice(scratch, report, held=True).why_not is None

    one = Plan(a=SideConfig(label="A"), b=SideConfig(label="B", mount_options=["noatime"]),
               workload=Workload())
    assert Session.attribution_offer(one, report).startswith(
        "Attribution: not offered: B differs from A in 1 option")
    assert Session.attribution_choice(one, report).announcement().startswith(
        "attribution: not run: B differs from A in 1 option")


def test_a_link_to_a_device_names_the_device_itself(tmp_path: Path,
                                                   shared_dumps: dict[str, Path]) -> None:
    """`--device` given as a symbolic link to a device node (as /dev/disk/by-id/... are) is the
    device it points to: the proposal is for it, and validate's plan and question name the
    device itself, so that what the user confirms is what is written. Not confirmed: nothing
    written. A captured tree's devices are not looked up through this machine's links."""
    require_root_tools("losetup", "mkfs.xfs")
    backing = tmp_path / "scratch.img"
    link = tmp_path / "by-id-scratch"
    with attached(backing, 2 * GIB) as dev:
        link.symlink_to(dev)
        done = cli("--json", "--device", str(link))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["proposal"]["mkfs_command"].endswith(f" {dev}")
        before = checksum(backing)
        env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
        asked = subprocess.run(
            [sys.executable, "-m", "advisor", "validate", "--device", str(link)],
            input="no\n", capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
        assert asked.returncode == 2, asked.stderr
        assert f"Type its name ({dev}) to go on" in asked.stderr, asked.stderr
        assert f"nothing was done to {dev}" in asked.stderr
        assert checksum(backing) == before
    (tmp_path / "nvme-link").symlink_to("/dev/nvme0n1")  # in the capture, not necessarily here
    captured = cli("--json", "--sysroot", str(shared_dumps["simple-nvme"]), "--device",
                   str(tmp_path / "nvme-link"))
    assert captured.returncode == 3 and "unknown device" in captured.stderr, captured.stderr


def test_the_log_device_is_looked_for_among_the_hosts_devices(tmp_path: Path) -> None:
    """An external log proposed on the answer storage.log_device: mkfs.xfs writes the log there,
    so what stands in the way on that device (mounted, here) is a warning, as it is for the data
    device; a log device the host does not have is said too. Dry runs only."""
    from advisor.models.workload import Storage
    from tests.inspect.sysfs_builder import Dev, write_tree

    require_root_tools("mkfs.xfs")
    root = write_tree(tmp_path / "host", [Dev("sda", 4000 * GIB, "8:0"),
                                          Dev("sdb", 100 * GIB, "8:16", rotational=0)],
                      mountinfo="1 0 8:16 / /srv rw - ext4 /dev/sdb rw")
    session = Session(str(root))
    device = session.device("sda")
    for log, said in (("/dev/sdb", "the log device /dev/sdb is mounted on /srv: unmount it "
                                    "first (mkfs.xfs destroys what is on it)"),
                      ("/dev/sdz", "the log device /dev/sdz (storage.log_device) is not a block "
                                   "device of the captured host: `-l logdev=/dev/sdz` fails "
                                   "there; answer a device it has")):
        work = Workload(fsyncs_per_second=500, storage=Storage(kind="hardware-raid",
                                                               log_device=log))
        proposal = session.propose(device, work)
        assert any(o.startswith("logdev=") for o in proposal.mkfs_options), proposal.mkfs_options
        assert [w.message for w in proposal.warnings if w.rule == "external-log"
                and w.message.startswith("the log device")] == [said]
        # a device of the host: its stack read, not every device (one it lacks: all, to say so)
        assert (session._inventory is None) == (log == "/dev/sdb")
    kept = session.propose(device, Workload(storage=Storage(log_device="/dev/sdz")))
    assert not any("logdev=" in o for o in kept.mkfs_options)  # no fsync rate: log kept inside
    assert not any(w.message.startswith("the log device") for w in kept.warnings)
