"""`xfs-advisor audit` on real loop devices formatted the old ways, and on hand-written fstab
files: every finding found, none on a default filesystem, the suggested xfs_admin upgrade run on a
copy, and the audited devices' backing files unchanged (checksums before and after)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.audit.host import kernel_config
from advisor.audit.ondisk import Today, layout_findings
from advisor.cli import main
from advisor.models.proposal import MkfsGeometry
from advisor.system.sysroot import SysRoot
from tests.bench.test_guard import attached, checksum
from tests.conftest import json_command, loop_device, mounted, require_root_tools, sh

MiB = 1 << 20
#: An fstab with no lines: the tests name their own, never the host's /etc/fstab.
EMPTY = Path(__file__).parent / "empty.fstab"


def audit(*args: str) -> tuple[int, dict[str, Any], str]:
    """`xfs-advisor audit --json ARGS` in this process: exit code, document, stderr."""
    return json_command("audit", *args)


def rules(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Rule id -> finding, over every filesystem of the document."""
    return {f["rule"]: f for fs in doc["filesystems"] for f in fs["findings"]}


@contextlib.contextmanager
def formatted(tmp_path: Path, name: str, size: int, *mkfs: str) -> Iterator[tuple[str, Path]]:
    """A loop device over a new sparse file, formatted with `mkfs.xfs MKFS`."""
    require_root_tools("losetup", "mkfs.xfs", "xfs_db", "xfs_info")
    backing = tmp_path / f"{name}.img"
    with loop_device(backing, size) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", *mkfs, dev)
        sh("blockdev", "--flushbufs", dev)
        yield dev, backing


def audited(dev: str, backing: Path, *args: str, fstab: Path | None = None
            ) -> tuple[int, dict[str, Any]]:
    """Audit `dev` (unmounted) and prove its backing file unchanged."""
    before = checksum(backing)
    code, doc, err = audit(dev, "--fstab", str(fstab or EMPTY), *args)
    assert err == "", err
    assert checksum(backing) == before, "audit wrote to the device"
    return code, doc


def test_v4_with_ftype0_read_unmounted_with_xfs_db(tmp_path: Path) -> None:
    with formatted(tmp_path, "v4", 512 * MiB, "-m", "crc=0", "-n", "ftype=0") as (dev, backing):
        code, doc = audited(dev, backing, "--fail-on", "will-break")
    [fs] = doc["filesystems"]
    assert fs["read_with"] == "xfs_db -r" and not fs["mounted"]
    found = rules(doc)
    v4 = found["audit-v4"]
    assert v4["when"] == "September 2030" and v4["fix_kind"] == "new-mkfs"
    # A kernel without CONFIG_XFS_SUPPORT_V4 (this one) refuses to mount it: that breaks now.
    config = kernel_config(SysRoot())
    assert v4["severity"] == ("breaks" if config.get("CONFIG_XFS_SUPPORT_V4") == "n"
                              else "will-break")
    for rule in ("audit-no-ftype", "audit-no-finobt", "audit-no-sparse", "audit-no-reflink"):
        assert found[rule]["fix_kind"] == "new-mkfs", rule
    assert "audit-no-bigtime" not in found  # V4 cannot have it: the V4 finding says what to do
    assert code == 6


def test_the_upgrade_fix_weighs_the_answered_target_kernel(tmp_path: Path) -> None:
    """With must_mount_on_kernel answered, the xfs_admin fix is judged against it: RHEL 8 (no
    bigtime, no inobtcount in Red Hat's kernel) is told to keep the filesystem as it is, with
    no command; 5.15 is told it mounts the result."""
    with formatted(tmp_path, "old", 512 * MiB, "-m", "bigtime=0,inobtcount=0") as (dev, backing):
        _, rhel8 = audited(dev, backing, "--must-mount-on-kernel", "rhel8")
        _, newer = audited(dev, backing, "--must-mount-on-kernel", "5.15")
    for feature in ("bigtime", "inobtcount"):
        kept = rules(rhel8)[f"audit-no-{feature}"]
        assert kept["fix_kind"] == "none" and kept["fix_command"] is None, kept
        assert f"rhel8 (must_mount_on_kernel) cannot mount a filesystem with {feature}" \
            in kept["fix"]
        fixed = rules(newer)[f"audit-no-{feature}"]
        assert fixed["fix_kind"] == "xfs_admin-offline", fixed
        assert "5.15 (must_mount_on_kernel) mounts it" in fixed["fix"]


def test_no_bigtime_upgrade_suggested_then_run_on_a_copy(tmp_path: Path) -> None:
    with formatted(tmp_path, "old", 512 * MiB, "-m", "bigtime=0,inobtcount=0") as (dev, backing):
        code, doc = audited(dev, backing)
    found = rules(doc)
    assert set(found) == {"audit-no-bigtime", "audit-no-inobtcount"}
    bigtime, inobt = found["audit-no-bigtime"], found["audit-no-inobtcount"]
    assert bigtime["severity"] == "will-break" and "2038" in bigtime["when"]
    assert bigtime["fix_command"] == ["xfs_admin", "-O", "bigtime=1", dev]
    assert inobt["fix_command"] == ["xfs_admin", "-O", "inobtcount=1", dev]
    assert "xfsprogs >= 5.11" in bigtime["fix"]
    # what the fix does, said before it is run: a repair pass, one-way, kernels it shuts out
    assert "full xfs_repair pass" in bigtime["fix"] and "one-way" in bigtime["fix"]
    assert "before Linux 5.10 can no longer mount" in bigtime["fix"]
    assert code == 0  # nothing breaks now: the default --fail-on is breaks

    copy = tmp_path / "copy.img"
    shutil.copyfile(backing, copy)  # the suggested upgrade runs on a copy, never the audited one
    with attached(copy, 0) as dev2:
        for finding in (bigtime, inobt):
            out = sh(*[dev2 if a == dev else a for a in finding["fix_command"]])
            assert "Running xfs_repair to upgrade filesystem" in out.stdout + out.stderr
        with mounted(dev2, tmp_path / "mnt") as mnt:
            info = sh("xfs_info", str(mnt)).stdout
            assert "bigtime=1" in info and "inobtcount=1" in info
        code, doc, _ = audit(dev2, "--fstab", str(EMPTY), "--fail-on", "info")
        assert rules(doc) == {} and code == 0


def test_stripe_set_by_hand_on_a_device_that_reports_none(tmp_path: Path) -> None:
    """A loop device, like a hardware RAID LUN, never reports a stripe: the one given at mkfs is
    said (info), not called stale (it was `performance`, failing a `--fail-on performance`
    gate on every hand-aligned LUN)."""
    with formatted(tmp_path, "stripe", 1 << 30, "-d", "su=64k,sw=4") as (dev, backing):
        code, doc = audited(dev, backing, "--fail-on", "performance")
    stripe = rules(doc)["audit-stripe"]
    assert stripe["severity"] == "info" and code == 0
    assert "sunit=,swidth=" in stripe["fix"] and stripe["source"].startswith("guide 2.1.4")
    assert "sunit=16 swidth=64" in stripe["evidence"] and "reports 0 / 0" in stripe["evidence"]


def test_grown_filesystem_with_too_many_small_ags(tmp_path: Path) -> None:
    """Made at 320 MiB, grown to 300 GiB. Audited through a read-only loop device over the same
    file: the kernel refuses any write to it (hashing the AG headers growfs spread over 1920
    blocks of the file would take a minute; this proof is stronger and instant)."""
    require_root_tools("xfs_growfs")
    size = 300 << 30
    with formatted(tmp_path, "grown", size, "-d", "size=320m,agcount=2") as (dev, backing):
        with mounted(dev, tmp_path / "mnt") as mnt:
            sh("xfs_growfs", str(mnt))
        sh("blockdev", "--flushbufs", dev)
        with attached(backing, size, "-r") as ro:
            assert Path(f"/sys/block/{ro.removeprefix('/dev/')}/ro").read_text().strip() == "1"
            mtime = backing.stat().st_mtime_ns
            code, doc, err = audit(ro, "--fstab", str(EMPTY), "--fail-on", "performance")
            assert backing.stat().st_mtime_ns == mtime
    assert err == ""
    found = rules(doc)
    ags = found["audit-agcount"]
    assert doc["filesystems"][0]["geometry"]["agcount"] > 1000
    assert "mkfs.xfs makes" in ags["evidence"] and ags["fix_kind"] == "new-mkfs"
    log = found["audit-log-size"]  # 64 MiB from 320 MiB days; 1/2048 of 300 GiB is 150 MiB
    assert "log of 64 MiB" in log["title"]
    assert code == 6


def test_default_filesystem_has_no_finding_mounted_or_not(tmp_path: Path) -> None:
    with formatted(tmp_path, "plain", 1 << 30) as (dev, backing):
        fstab = tmp_path / "fstab"
        fstab.write_text(f"{dev} {tmp_path / 'mnt'} xfs defaults,nofail 0 2\n")
        code, doc = audited(dev, backing, "--fail-on", "info", fstab=fstab)
        assert (code, rules(doc)) == (0, {})
        assert doc["filesystems"][0]["fstab_line"] == 1
        with mounted(dev, tmp_path / "mnt", "ro") as mnt:
            sh("sync")
            before = checksum(backing)
            code, doc, err = audit(str(mnt), "--fstab", str(fstab), "--fail-on", "info")
            assert checksum(backing) == before
        assert err == "" and (code, rules(doc)) == (0, {})
        [fs] = doc["filesystems"]
        assert fs["mounted"] and fs["read_with"] == "xfs_info" and "ro" in fs["mount_options"]
        assert fs["today"]["mkfs_command"].startswith("mkfs.xfs")


def test_fstab_with_old_advice_and_a_typo(tmp_path: Path) -> None:
    opts = "ro,nobarrier,attr2,ikeep,logbufs=8,inode64,noatime,nodiratime,largeio,noatiem"
    with formatted(tmp_path, "fstab", 1 << 30) as (dev, backing):
        mnt = tmp_path / "data"
        fstab = tmp_path / "fstab"
        fstab.write_text(f"# hand-written\n\n{dev} {mnt} xfs {opts} 0 0\n")
        with mounted(dev, mnt, "ro", "noatime", "nodiratime"):
            sh("sync")
            before = checksum(backing)
            code, doc, err = audit(str(mnt), "--fstab", str(fstab))
            assert checksum(backing) == before
    assert err == "" and code == 6
    found = rules(doc)
    assert found["nobarrier"]["severity"] == "breaks"
    assert found["attr2"]["severity"] == found["ikeep"]["severity"] == "will-break"
    assert "September 2025" in found["attr2"]["when"]
    for rule in ("logbufs-8", "inode64", "nodiratime", "audit-nofail"):
        assert found[rule]["severity"] == "info", rule
    typo = found["audit-unknown-option"]
    assert typo["severity"] == "breaks" and "noatiem" in typo["title"]
    assert "nobarrier" not in typo["title"]  # reported once, as the removed option it is
    differs = found["audit-fstab-differs"]  # largeio is in fstab, not in the running mount
    assert "largeio" in differs["title"] and "noatime" not in differs["title"]
    assert doc["filesystems"][0]["fstab_line"] == 3


def test_removed_options_of_linux_4_0_break(tmp_path: Path) -> None:
    fstab = tmp_path / "fstab"
    fstab.write_text("UUID=0000-missing /srv/a xfs delaylog,ihashsize=64,nofail 0 0\n"
                     "/dev/sda1 /boot\n")
    code, doc, err = audit("--fstab", str(fstab))
    assert err == "" and code == 6
    found = rules(doc)
    assert found["delaylog"]["severity"] == "breaks"
    assert "delaylog, ihashsize=64" in found["delaylog"]["evidence"]
    assert "audit-unknown-option" not in found
    assert found["audit-fstab-syntax"]["evidence"].endswith(":2: /dev/sda1 /boot")
    assert found["audit-no-device"]["severity"] == "info"


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read fstab"),
    (b"\xff\xfe\x00garbage", "is not UTF-8 text"),
])
def test_missing_or_garbage_fstab_is_one_line(tmp_path: Path, content: bytes | None,
                                              message: str) -> None:
    fstab = tmp_path / "fstab"
    if content is not None:
        fstab.write_bytes(content)
    code, doc, err = audit("--fstab", str(fstab))
    assert code == 2 and doc == {}
    [line] = err.splitlines()
    assert message in json.loads(line)["error"]["message"]


def test_unreadable_fstab_is_one_line(tmp_path: Path) -> None:
    code, _, err = audit("--fstab", str(tmp_path))  # a directory
    assert code == 2 and "is a directory" in err and len(err.splitlines()) == 1


def test_non_xfs_paths_are_one_line_errors(tmp_path: Path) -> None:
    code, _, err = audit(str(tmp_path), "--fstab", str(EMPTY))
    assert code == 2 and "not the mount point of an XFS filesystem" in err
    code, _, err = audit(str(EMPTY), "--fstab", str(EMPTY))
    assert code == 2 and "neither a block device nor a mount point" in err
    require_root_tools("losetup", "xfs_db")
    with loop_device(tmp_path / "ext.img", 64 * MiB) as dev:  # zeros: no XFS there
        backing = tmp_path / "ext.img"
        before = checksum(backing)
        code, _, err = audit(dev, "--fstab", str(EMPTY))
        assert checksum(backing) == before
    assert code == 3 and "cannot read an XFS filesystem" in err and len(err.splitlines()) == 1


def test_a_device_that_vanishes_is_one_line(tmp_path: Path) -> None:
    """The device read by xfs_db is gone (detached) by the time it is read."""
    from advisor.audit.host import read_format
    from advisor.errors import DeviceProblem

    with formatted(tmp_path, "gone", 512 * MiB) as (dev, _):
        pass  # detached on leaving
    with pytest.raises(DeviceProblem) as err:
        read_format(dev, None)
    assert "\n" not in err.value.message and dev in err.value.message
    code, _, stderr = audit(f"/dev/nonexistent-{tmp_path.name}", "--fstab", str(EMPTY))
    assert code == 3 and "No such file" in stderr


def test_text_output_groups_by_filesystem(tmp_path: Path) -> None:
    with formatted(tmp_path, "text", 512 * MiB, "-m", "bigtime=0") as (dev, _):
            proc = subprocess.run([sys.executable, "-m", "advisor", "audit", dev, "--fstab",
                               str(EMPTY), "--fail-on", "will-break"], capture_output=True,
                              text=True, cwd=Path(__file__).parents[2], check=False, timeout=60)
    assert proc.returncode == 6, proc.stderr
    assert f"{dev} on - (not mounted, read with xfs_db -r)" in proc.stdout
    assert "[will-break] audit-no-bigtime" in proc.stdout
    assert f"xfs_admin -O bigtime=1 {dev}" in proc.stdout
    assert "offline with xfs_admin: audit-no-bigtime" in proc.stdout


def test_capture_then_audit_the_capture_after_the_device_is_gone(tmp_path: Path) -> None:
    """`capture` records xfs_info / xfs_db -r output; `--sysroot DIR audit` replays it, with the
    loop device detached by then (so nothing but the capture can be read)."""
    from advisor.inspect.capture import capture

    with formatted(tmp_path, "cap", 512 * MiB, "-m", "bigtime=0") as (dev, backing):
        mnt = tmp_path / "mnt"
        with mounted(dev, mnt, "ro", "noatime", "nodiratime"):
            before = checksum(backing)
            capture(SysRoot.open("/"), tmp_path / "capture")
            assert checksum(backing) == before
    name = Path(dev).name
    assert (tmp_path / "capture" / "xfs-advisor-audit" / f"{name}.xfs_info").is_file()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--sysroot", str(tmp_path / "capture"), "audit", "--json", str(mnt),
                     "--fstab", str(EMPTY), "--fail-on", "info"])
    assert err.getvalue() == "" and code == 6
    doc = json.loads(out.getvalue())
    [fs] = doc["filesystems"]
    assert fs["read_with"] == "xfs_info" and fs["mounted"] and fs["device"] == dev
    found = rules(doc)
    assert found["audit-no-bigtime"]["fix_command"] == ["xfs_admin", "-O", "bigtime=1", dev]
    assert found["nodiratime"]["evidence"] == "nodiratime in the running mount"


def test_a_capture_without_audit_files_audits_nothing_or_says_why(tmp_path: Path) -> None:
    (tmp_path / "sys" / "block").mkdir(parents=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--sysroot", str(tmp_path), "audit", "--json"])
    assert code == 0 and json.loads(out.getvalue())["filesystems"] == []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--sysroot", str(tmp_path), "audit", "sdz"])
    assert code == 3 and "unknown device 'sdz'" in err.getvalue()


def test_fstab_fields_are_unescaped_and_comments_skipped() -> None:
    from advisor.audit.fstab import parse_fstab

    entries, errors = parse_fstab("# c\n/dev/sdb1 /srv/my\\040data xfs  # no options\nx y\n")
    [entry] = entries
    assert entry.mountpoint == "/srv/my data" and entry.options == ("defaults",)
    assert [e.line for e in errors] == [3]


def test_an_fstab_line_the_mount_follows_has_no_false_finding(tmp_path: Path) -> None:
    """Valid options mountinfo writes differently or not at all are no 'differs' finding."""
    opts = ["ro", "noatime", "largeio", "swalloc", "allocsize=64k", "logbsize=256k", "inode32",
            "nodiscard", "sync", "uquota"]
    with formatted(tmp_path, "follows", 1 << 30) as (dev, _):
        mnt = tmp_path / "mnt"
        fstab = tmp_path / "fstab"
        fstab.write_text(f"{dev} {mnt} xfs {','.join(opts)},nofail,x-systemd.device-timeout=9s,"
                         "comment=data 0 0\n")
        with mounted(dev, mnt, *[o for o in opts if o != "uquota"]):
            code, doc, err = audit(str(mnt), "--fstab", str(fstab), "--fail-on", "info")
    assert err == ""
    found = rules(doc)
    # uquota needs CONFIG_XFS_QUOTA to mount, so the mount above went without it: the one
    # difference the audit must name.
    assert set(found) == {"audit-fstab-differs"} and "uquota" in found["audit-fstab-differs"][
        "title"] and code == 6


def _geometry(**over: int) -> MkfsGeometry:
    values = {"block_size": 4096, "sector_size": 512, "inode_size": 512, "agcount": 4,
              "agsize_blocks": 65536, "data_blocks": 262144, "sunit_blocks": 0,
              "swidth_blocks": 0, "naming_block_size": 4096, "log_blocks": 16384,
              "log_sunit_blocks": 0}
    values.update(over)
    return MkfsGeometry(**values, features={"crc": 1, "finobt": 1, "sparse": 1, "reflink": 1,
                                            "bigtime": 1, "inobtcount": 1, "ftype": 1})


@pytest.mark.parametrize(("fs", "device", "reports", "fix_kind", "words", "severity"), [
    ((16, 64), (128 << 10, 512 << 10), True, "next-mount", "sunit=256,swidth=1024",
     "performance"),  # reshaped RAID
    ((0, 0), (64 << 10, 256 << 10), True, "new-mkfs", "never aligned", "performance"),
    # an md array that reports no stripe now: stale; the mount options fix it
    ((16, 64), (None, None), True, "next-mount", "mount with noalign", "performance"),
    # a hardware RAID LUN that never reports its stripe: the one set at mkfs is not stale
    ((16, 64), (None, None), False, "none", "does not report", "info"),
])
def test_stripe_against_what_the_device_reports(fs: tuple[int, int],
                                                device: tuple[int | None, int | None],
                                                reports: bool, fix_kind: str, words: str,
                                                severity: str) -> None:
    """md and RAID reshapes cannot be made in this VM: the pure check, on each case."""
    geometry = _geometry(sunit_blocks=fs[0], swidth_blocks=fs[1])
    [finding] = layout_findings(geometry, Today(device[0], device[1], "md0 (md raid5)", 4, None,
                                                reports_stripes=reports))
    assert finding.fix_kind == fix_kind and words in finding.fix + finding.title
    assert finding.severity == severity and finding.source.startswith("guide 2.1.4")
    assert layout_findings(_geometry(sunit_blocks=16, swidth_blocks=64),
                           Today(64 << 10, 256 << 10, "md0", 4, None)) == []


def test_an_fstab_line_for_a_device_without_xfs_breaks(tmp_path: Path) -> None:
    require_root_tools("losetup", "xfs_db")
    backing = tmp_path / "zero.img"
    with loop_device(backing, 64 * MiB) as dev:
        fstab = tmp_path / "fstab"
        fstab.write_text(f"{dev} {tmp_path / 'x'} xfs defaults,nofail 0 0\n")
        before = checksum(backing)
        code, doc, err = audit("--fstab", str(fstab))
        assert checksum(backing) == before
    assert err == "" and code == 6
    [fs] = [fs for fs in doc["filesystems"] if fs["fstab_line"] == 1]
    assert fs["device"] == dev and fs["read_with"] is None
    [finding] = fs["findings"]
    assert finding["rule"] == "audit-unreadable" and finding["severity"] == "breaks"


def test_what_the_advisor_would_propose_today_follows_the_answers(tmp_path: Path) -> None:
    """The "if you made it again" side is made for the answers given, as `xfs-advisor --device`
    would make it: 16 writers on this device ask for a larger log than no answers do."""
    with formatted(tmp_path, "answers", 8 << 30) as (dev, backing):
        _, plain = audited(dev, backing)
        _, answered = audited(dev, backing, "--concurrent-writers", "16",
                              "--largest-directory-entries", "2000000",
                              "--access", "read-heavy")
        code, doc, err = main_json_proposal(dev)
    plain_cmd = plain["filesystems"][0]["today"]["mkfs_command"]
    answered_cmd = answered["filesystems"][0]["today"]["mkfs_command"]
    assert "-n size=64k" not in plain_cmd and "-n size=64k" in answered_cmd
    assert code == 0, err
    assert answered_cmd == doc["proposal"]["mkfs_command"]


def main_json_proposal(dev: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--json", "--device", dev, "--concurrent-writers", "16",
                     "--largest-directory-entries", "2000000", "--access", "read-heavy"])
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def test_a_host_root_mounted_elsewhere_is_audited_with_its_own_fstab(tmp_path: Path) -> None:
    """`--sysroot /host` (a host's root file system, not a capture): audit reads /host/etc/fstab
    and capture copies that one, never this machine's /etc/fstab."""
    from tests.inspect.sysfs_builder import write_tree

    host = write_tree(tmp_path / "host", [])
    (host / "etc").mkdir()
    (host / "etc" / "fstab").write_text("UUID=0000-gone /srv/old xfs delaylog,nofail 0 0\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--sysroot", str(host), "audit", "--json", "--fail-on", "will-break"])
    doc = json.loads(out.getvalue())
    assert doc["fstab"] == str(host / "etc" / "fstab")
    assert code == 6 and doc["counts"]["breaks"] == 1, err.getvalue()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["--sysroot", str(host), "capture", str(tmp_path / "capture")]) == 0
    copied = tmp_path / "capture" / "xfs-advisor-audit" / "fstab"
    assert copied.read_text() == (host / "etc" / "fstab").read_text()
    # A tree with no fstab at all: none copied (this machine's is not the host's).
    bare = write_tree(tmp_path / "bare", [])
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["--sysroot", str(bare), "capture", str(tmp_path / "capture2")]) == 0
    assert not (tmp_path / "capture2" / "xfs-advisor-audit" / "fstab").exists()


#: Mount option values, and whether Linux mounts an XFS with them (a 4 KiB block, no log stripe).
VALUES = [("allocsize=2g", False), ("allocsize=1g", True), ("allocsize=4k", True),
          ("allocsize=2k", False), ("allocsize=3k", False), ("allocsize=12k", True),
          ("logbsize=24k", False), ("logbsize=512k", False), ("logbsize=16k", True),
          ("logbsize=256k", True), ("logbufs=1", False), ("logbufs=9", False),
          ("logbufs=2", True), ("logbufs=8", True)]


def test_mount_values_the_kernel_refuses_break(tmp_path: Path) -> None:
    """Every value range the audit models, against a real mount: a value the kernel refuses is a
    `breaks` finding, one it takes is none (allocsize=12k mounts as 4k: said, as info)."""
    from advisor.audit.fstab import FstabEntry
    from advisor.audit.options import value_findings
    with formatted(tmp_path, "values", 1 << 30) as (dev, _):
        for option, mounts in VALUES:
            entry = FstabEntry(1, dev, "/srv", "xfs", (option,), f"{dev} /srv xfs {option} 0 0")
            breaks = [f for f in value_findings(entry) if f.severity == "breaks"]
            mount = subprocess.run(["mount", "-o", option, dev, str(tmp_path)],
                                   capture_output=True, text=True, check=False)
            ok = mount.returncode == 0
            if ok:
                sh("umount", str(tmp_path))
            assert (ok, bool(breaks)) == (mounts, not mounts), (option, mount.stderr)
    [info] = value_findings(FstabEntry(1, dev, "/srv", "xfs", ("allocsize=12k",), ""))
    assert info.severity == "info" and "uses 4KiB" in info.evidence


def test_logbsize_below_the_log_stripe_unit_breaks(tmp_path: Path) -> None:
    with formatted(tmp_path, "lsu", 1 << 30, "-l", "su=64k") as (dev, backing):
        for option, mounts in (("logbsize=32k", False), ("logbsize=64k", True)):
            (tmp_path / "m").mkdir(exist_ok=True)
            mount = subprocess.run(["mount", "-o", option, dev, str(tmp_path / "m")],
                                   capture_output=True, text=True, check=False)
            ok = mount.returncode == 0
            if ok:
                sh("umount", str(tmp_path / "m"))
            assert ok == mounts, (option, mount.stderr)
        fstab = tmp_path / "fstab"
        fstab.write_text(f"{dev} {tmp_path / 'm'} xfs logbsize=32k,nofail 0 0\n")
        code, doc = audited(dev, backing, fstab=fstab)
    found = rules(doc)["audit-mount-value"]
    assert found["severity"] == "breaks" and "64k log stripe unit" in found["evidence"]
    assert code == 6


def test_a_uuid_line_finds_its_device_through_libblkid(tmp_path: Path) -> None:
    """fstab's UUID= resolved as mount(8) resolves it, through libblkid: with no udev (no
    /dev/disk/by-uuid, as in this container) the unmounted device was "not on this host"."""
    uuid = "3f0c7e9a-1111-4222-8333-944455556666"
    with formatted(tmp_path, "uuid", 512 * MiB, "-m", f"uuid={uuid}") as (dev, backing):
        fstab = tmp_path / "fstab"
        fstab.write_text(f"UUID={uuid} {tmp_path / 'data'} xfs nofail 0 0\n")
        _, doc = audited(dev, backing, fstab=fstab)
    [fs] = doc["filesystems"]
    assert fs["device"] == dev and fs["fstab_line"] == 1 and fs["read_with"] == "xfs_db -r"
    assert "audit-no-device" not in rules(doc)


def test_a_past_removal_date_is_said_as_due() -> None:
    """attr2/ikeep's removal was scheduled for September 2025: before then it is ahead, after it
    due (Linux 6.18 still mounts with both, checked on a loop device), never a future date
    that has passed."""
    from datetime import date

    from advisor.audit.options import obsolete_findings
    from advisor.engine.rulebook import load_rulebook

    obsolete = load_rulebook().of_kind("obsolete")
    [before] = obsolete_findings(["attr2"], "fstab", obsolete, today=date(2025, 1, 1))
    [after] = obsolete_findings(["attr2"], "fstab", obsolete, today=date(2026, 11, 25))
    assert before.when is not None and before.when.startswith("removal scheduled for Sept")
    assert after.when is not None and "was scheduled for September 2025 and is due" in after.when


def test_an_obsolete_option_s_fix_says_each_thing_once() -> None:
    """inode64's fix read "...it is the default since Linux 3.7. The default."; every fix says
    each sentence once."""
    from advisor.audit.options import obsolete_findings
    from advisor.engine.rulebook import load_rulebook

    obsolete = load_rulebook().of_kind("obsolete")
    found = obsolete_findings(["inode64", "logbufs=8", "ikeep", "attr2", "noatime",
                               "nodiratime"], "fstab", obsolete)
    assert len(found) == 5
    for f in found:
        assert "default. the default" not in f.fix.lower(), f.fix
        assert f.fix.lower().count("default") <= 1, f.fix
        assert f.fix.lower().count("ignored") <= 1, f.fix
    inode64 = next(f for f in found if f.rule == "inode64")
    assert inode64.fix == "drop inode64: it is the default since Linux 3.7"
