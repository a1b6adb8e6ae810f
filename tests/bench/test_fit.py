"""B is the proposal the user was shown: options a scratch device cannot take
are found by real `mkfs.xfs -N` dry runs on a stand-in of its size, left out, and named before
the run (in the plan) and after it (the report's first lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from advisor.bench.fit import fit
from advisor.bench.plan import Plan
from advisor.models.bench import NotApplied, SideConfig
from advisor.models.workload import Workload
from advisor.render.validation import render_text, what_ran
from advisor.session import Session
from tests.bench.test_calibration import _judged
from tests.bench.test_guard import GIB, attached, checksum
from tests.conftest import REPO, require_root_tools

GROWN = SideConfig(label="B", source="proposal", mkfs_options=["-d", "agsize=80g,su=64k,sw=4",
                                                               "-l", "size=256m"],
                   mount_options=["logbsize=256k", "noatime"])


def test_what_fits_runs_and_what_does_not_is_named() -> None:
    require_root_tools("mkfs.xfs")
    ran, left = Session().fit_to_scratch(GROWN, None, 4 * GIB)
    assert ran.mkfs_options == ["-d", "su=64k,sw=4", "-l", "size=256m"]
    assert ran.mount_options == GROWN.mount_options
    assert [n.option for n in left] == ["-d agsize=80g"]
    assert "too big" in left[0].reason  # mkfs.xfs's own words
    same, none = Session().fit_to_scratch(GROWN, None, 200 * GIB)  # large enough: all of it
    assert same == GROWN and none == []


def test_the_loop_run_makes_the_proposal_b_the_same_way_for_both_front_ends(
        tmp_path: Path) -> None:
    """Session.fit_loop, which `validate --for DEV` and the TUI's loop run both call: a
    `-d agsize=4g` proposal for a 6 GiB device does not fit the default 4 GiB loop device; the
    loop device grows to 6 GiB (its backing file is sparse) and B runs it exactly. With a loop
    size chosen (no growing), it is left out and named."""
    require_root_tools("mkfs.xfs")
    shown = SideConfig(label="B", source="proposal", mkfs_options=["-d", "agsize=4g"])
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
                device_bytes=4 * GIB, loop_dir=str(tmp_path))
    Session().fit_loop(plan, shown, 6 * GIB)
    assert plan.device_bytes == 6 * GIB and plan.not_applied == []
    assert plan.b.mkfs_options == ["-d", "agsize=4g"] and plan.proposed == shown
    fixed = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
                 device_bytes=4 * GIB, loop_dir=str(tmp_path))
    Session().fit_loop(fixed, shown, 6 * GIB, grow=False)
    assert fixed.device_bytes == 4 * GIB
    assert [n.option for n in fixed.not_applied] == ["-d agsize=4g"]


def test_an_option_that_is_the_default_on_the_scratch_device_is_named_not_run(
        tmp_path: Path) -> None:
    """A `-d agsize=1g` proposal for a 2 GiB device: on the default 4 GiB loop device mkfs.xfs
    makes 4 AGs of 1 GiB anyway, so B would be the defaults again, measured against themselves
    and reported as the proposal. The option is left out and named (real dry runs compare the
    two filesystems); growing, the loop device takes the device's own 2 GiB instead, where the
    option makes 2 AGs, not 4, and B runs it exactly."""
    require_root_tools("mkfs.xfs")
    shown = SideConfig(label="B", source="proposal", mkfs_options=["-d", "agsize=1g"],
                       mount_options=["noatime"])
    ran, left = Session().fit_to_scratch(shown, None, 4 * GIB)
    assert ran.mkfs_options == [] and ran.mount_options == ["noatime"]
    assert [n.option for n in left] == ["-d agsize=1g"]
    assert left[0].reason == ("on the 4 GiB scratch device mkfs.xfs makes the same filesystem "
                              "without it (agcount=4, agsize 262144 blocks, log 16384 blocks): "
                              "B would be the defaults again")
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
                device_bytes=4 * GIB, loop_dir=str(tmp_path))
    Session().fit_loop(plan, shown, 2 * GIB)
    assert plan.device_bytes == 2 * GIB and plan.not_applied == []
    assert plan.b.mkfs_options == ["-d", "agsize=1g"]
    fixed = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
                 device_bytes=4 * GIB, loop_dir=str(tmp_path))
    Session().fit_loop(fixed, shown, 2 * GIB, grow=False)
    assert fixed.device_bytes == 4 * GIB and fixed.b.mkfs_options == []
    assert [n.option for n in fixed.not_applied] == ["-d agsize=1g"]


def test_fit_keeps_order_and_asks_only_when_needed() -> None:
    asked: list[list[str]] = []

    def check(options: list[str]) -> str | None:
        asked.append(options)
        return "no" if "agsize=80g" in ",".join(options) else None

    ran, left = fit(GROWN, check)
    assert ran.mkfs_options == ["-d", "su=64k,sw=4", "-l", "size=256m"]
    assert left == [NotApplied(option="-d agsize=80g", reason="no")]
    fitting = GROWN.model_copy(update={"mkfs_options": ["-l", "size=64m"]})
    asked.clear()
    assert fit(fitting, check) == (fitting, []) and len(asked) == 1


def test_the_report_says_what_was_proposed_what_ran_and_the_difference() -> None:
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload())
    report = _judged(None, slower=1.0).model_copy(update={
        "proposed": GROWN, "proposed_for": "/dev/sdz",
        "b": GROWN.model_copy(update={"mkfs_options": ["-d", "su=64k,sw=4", "-l", "size=256m"]}),
        "not_applied": [NotApplied(option="-d agsize=80g", reason="agsize too big")]})
    lines = what_ran(report)
    assert lines[0] == ("Proposed for /dev/sdz: mkfs.xfs -d agsize=80g,su=64k,sw=4 -l size=256m, "
                        "mount -o logbsize=256k,noatime")
    assert lines[2].startswith("B = mkfs.xfs -d su=64k,sw=4 -l size=256m")
    assert "(as run)" in lines[2]
    assert lines[3].startswith("Not applied on this 4 GiB device: -d agsize=80g (agsize too big)")
    assert "\n".join(lines) in render_text(report, with_plot=False).replace("\n  ", "\n")
    exact = report.model_copy(update={"b": GROWN, "not_applied": []})
    assert what_ran(exact)[-1] == "B ran exactly as proposed."
    plan.b, plan.not_applied = report.b, report.not_applied
    assert "#   not applied: -d agsize=80g: agsize too big" in plan.commands()


def test_validate_for_a_device_names_what_the_scratch_device_cannot_take(
        tmp_path: Path) -> None:
    """`validate --for BIG --device SCRATCH`: the plan printed before the confirmation shows B
    as it will run and the options left out with mkfs.xfs's reason. Not confirmed: nothing is
    written to either device."""
    require_root_tools("losetup", "mkfs.xfs", "fio")
    with attached(tmp_path / "big.img", 400 * GIB) as big, \
            attached(tmp_path / "scratch.img", 2 * GIB) as scratch:
        before = checksum(tmp_path / "big.img"), checksum(tmp_path / "scratch.img")
        env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
        done = subprocess.run(
            [sys.executable, "-m", "advisor", "validate", "--for", big, "--device", scratch,
             "--eventual-size", "100TiB"], input="no\n", capture_output=True, text=True,
            cwd=REPO, env=env, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "#   not applied: -d agsize=" in done.stderr, done.stderr
        assert "too big" in done.stderr
        assert f"mkfs.xfs -f -K {scratch}" in done.stderr  # B without the AG size
        assert (checksum(tmp_path / "big.img"), checksum(tmp_path / "scratch.img")) == before


# ---- an external log is never run by validate, and is named as not applied ----
def test_an_external_log_is_left_out_and_named() -> None:
    logged = SideConfig(label="B", source="proposal",
                        mkfs_options=["-l", "su=4k,logdev=/dev/nvme0n1p3,size=256m"],
                        mount_options=["logdev=/dev/nvme0n1p3", "noatime", "dax=always"])
    asked: list[list[str]] = []
    ran, left = fit(logged, lambda options: asked.append(options) or None)
    assert asked == [["-l", "su=4k,size=256m"]]  # the dry run never sees the other device
    assert ran.mkfs_options == ["-l", "su=4k,size=256m"]
    assert ran.mount_options == ["noatime"]
    assert [n.option for n in left] == ["-l logdev=/dev/nvme0n1p3", "logdev=/dev/nvme0n1p3",
                                        "dax=always"]
    assert all("second device" in n.reason for n in left[:2]) and "DAX" in left[2].reason
    only = logged.model_copy(update={"mkfs_options": ["-l", "logdev=/dev/sdc"]})
    ran, _ = fit(only, lambda options: None)
    assert ran.mkfs_options == []
