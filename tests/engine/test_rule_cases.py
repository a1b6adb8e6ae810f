"""One case (or a few) per rule: a device and answers in, the expected decision out. Every case
runs the whole engine, including the `mkfs.xfs -N` check of the result."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import propose
from advisor.engine.rulebook import RuleBook
from advisor.engine.rules.log_size import LogSizeParams, reservation_per_writer
from advisor.models.device import Device, Fact, StripeGeometry, Usage
from advisor.models.proposal import Decision, Proposal
from advisor.models.workload import Workload
from tests.engine.helpers import GiB, MiB, TiB, device, environment, md_stripe

KiB = 1 << 10


def run(book: RuleBook, dev: Device, check: bool = True, memory: int = 16 * GiB,
        xfsprogs: str = "6.1.0", **answers: Any) -> Proposal:
    return propose(dev, Workload.model_validate(answers), env=environment(xfsprogs, memory),
                   rulebook=book, check=check)


def decision(p: Proposal, setting: str) -> Decision:
    found = [d for d in p.decisions if d.setting == setting]
    assert len(found) == 1
    return found[0]


def warned(p: Proposal, rule: str) -> list[str]:
    return [w.message for w in p.warnings if w.rule == rule]


SSD = device(100 * GiB, rotational=False, write_cache="write back", fua=True,
             discard_granularity=4096)
HDD = device(4 * TiB, rotational=True, write_cache="write back", fua=False)
MD = device(100 * GiB, name="md0", rotational=False, stripe=md_stripe(512 * KiB, 6))


def test_keep_defaults_without_answers(book: RuleBook) -> None:
    p = run(book, SSD)
    assert p.mkfs_argv == ["mkfs.xfs", "/dev/sdx"]
    assert p.mount_options == []
    assert p.fstab == "UUID=<uuid-after-mkfs> <mount-point> xfs defaults 0 0"
    assert not any(d.changed for d in p.decisions)
    assert all(d.value == "default" and d.reason for d in p.decisions)
    assert decision(p, "-b size").rule == "block-size"  # it keeps 4 KiB, and says why


@pytest.mark.parametrize(("entries", "access", "expected"), [
    (2_000_000, "read-heavy", "64k"),
    (500_000, "read-heavy", "16k"),
    (500_000, "write-heavy", "default"),
    (20_000_000, "write-heavy", "64k"),
    (3_000_000, None, "default"),  # access not answered: missing keeps the default
])
def test_dir_block_size(book: RuleBook, entries: int, access: str | None, expected: str) -> None:
    p = run(book, SSD, largest_directory_entries=entries, access=access)
    d = decision(p, "-n size")
    assert d.value == expected
    assert d.rule == "dir-block-size"
    if expected != "default":
        assert f"size={expected}" in p.mkfs_options
        assert p.check is not None
        assert p.check.geometry.naming_block_size == int(expected[:-1]) * KiB


def test_dir_block_size_unknown_keeps_default(book: RuleBook) -> None:
    d = decision(run(book, SSD), "-n size")
    assert d.value == "default" and "not given" in d.reason


def test_ag_concurrency_on_ssd(book: RuleBook) -> None:
    p = run(book, device(1 * TiB, rotational=False), concurrent_writers=16)
    d = decision(p, "-d agcount/agsize")
    assert (d.value, d.rule) == ("agcount=32", "ag-concurrency")
    assert p.check is not None and p.check.geometry.agcount == 32
    # 100 GiB: what mkfs.xfs makes for multi-disk storage of that size, not a size of our own.
    p = run(book, SSD, concurrent_writers=16)
    assert decision(p, "-d agcount/agsize").value == "agcount=16"
    assert p.check is not None
    multidisk = run(book, SSD, storage={"raid_stripe_unit": "64KiB", "raid_data_disks": 4})
    assert multidisk.check is not None
    assert p.check.geometry.agcount == multidisk.check.geometry.agcount == 16


def test_ag_concurrency_on_rotational_storage_of_unknown_kind(book: RuleBook) -> None:
    d = decision(run(book, HDD, concurrent_writers=16), "-d agcount/agsize")
    assert d.value == "agcount=32" and "unknown kind" in d.reason
    assert "single spinning disk" not in d.reason
    d = decision(run(book, HDD, concurrent_writers=16, storage={"kind": "single-disk"}),
                 "-d agcount/agsize")
    assert d.value == "default" and "single spinning disk (the answers)" in d.reason


def test_writers_into_existing_files_are_not_metadata_concurrency(book: RuleBook) -> None:
    """A database's 16 (or 200) writers into existing files get no more AGs, no
    bigger log and no bigger log buffers; the same count creating files does."""
    for writers in (16, 200):
        p = run(book, device(1 * TiB, rotational=False, write_cache="write back"),
                concurrent_writers=writers, writer_activity="data")
        for setting in ("-d agcount/agsize", "-l size", "mount logbsize"):
            assert decision(p, setting).value == "default", setting
        assert "write into existing files" in decision(p, "-d agcount/agsize").reason
    p = run(book, device(1 * TiB, rotational=False, write_cache="write back"),
            concurrent_writers=16, writer_activity="metadata")
    assert decision(p, "-d agcount/agsize").value == "agcount=32"
    assert decision(p, "mount logbsize").value == "256k"


def test_ag_concurrency_not_on_detected_raid(book: RuleBook) -> None:
    d = decision(run(book, MD, concurrent_writers=64), "-d agcount/agsize")
    assert d.value == "default" and "multi-disk" in d.reason
    p = run(book, SSD, concurrent_writers=16,
            storage={"raid_stripe_unit": "256KiB", "raid_data_disks": 8})
    assert decision(p, "-d agcount/agsize").value == "default"


def test_ag_concurrency_limited_by_size(book: RuleBook) -> None:
    p = run(book, device(3 * GiB, rotational=False), concurrent_writers=64)
    d = decision(p, "-d agcount/agsize")
    assert d.value == "agcount=32" and "one per writer up to 32" in d.reason
    assert p.check is not None and p.check.geometry.agcount == 32


def test_ag_concurrency_uses_concurrency_option_on_xfsprogs_6_8(book: RuleBook) -> None:
    p = run(book, SSD, check=False, xfsprogs="6.8.0", concurrent_writers=16)
    assert decision(p, "-d agcount/agsize").value == "concurrency=16"
    assert "concurrency=16" in p.mkfs_options


def test_ag_growth_resizes_agcount_for_the_eventual_size(book: RuleBook) -> None:
    p = run(book, MD, eventual_size="4TiB")
    d = decision(p, "-d agcount/agsize")
    assert d.rule == "ag-growth" and d.value.startswith("agsize=")
    assert p.check is not None
    grown = 4 * TiB / p.check.geometry.agsize_bytes
    assert grown <= 256
    assert any("never shrink" in m for m in warned(p, "ag-growth"))
    assert any("growth of 41x is beyond" in m for m in warned(p, "ag-growth"))  # not "41.0x"
    assert any("same geometry" in m for m in warned(p, "ag-growth"))  # MD is striped


def test_ag_growth_within_limits_keeps_default(book: RuleBook) -> None:
    p = run(book, SSD, growth_factor=5)
    d = decision(p, "-d agcount/agsize")
    assert d.value == "default" and "few hundred" in d.reason
    assert not any("beyond" in m for m in warned(p, "ag-growth"))
    assert not any("same geometry" in m for m in warned(p, "ag-growth"))


def test_inode_size_for_inline_xattrs(book: RuleBook) -> None:
    p = run(book, SSD, xattr_bytes_per_file=600)
    assert decision(p, "-i size").value == "1024"
    assert p.check is not None and p.check.geometry.inode_size == 1024
    assert decision(run(book, SSD, xattr_bytes_per_file=120), "-i size").value == "default"


def test_inode_size_warns_on_large_values(book: RuleBook) -> None:
    p = run(book, SSD, xattr_bytes_per_file=600, largest_xattr_value=300)
    assert decision(p, "-i size").value == "default"
    assert any("over 254" in m for m in warned(p, "inode-size"))
    p = run(book, SSD, xattr_bytes_per_file=5000)
    assert any("more than any inode size holds inline" in m for m in warned(p, "inode-size"))


def test_stripe_from_answers(book: RuleBook) -> None:
    p = run(book, SSD, storage={"raid_stripe_unit": "256KiB", "raid_data_disks": 8})
    assert decision(p, "-d su/sw").value == "su=256k,sw=8"
    assert p.check is not None
    assert (p.check.geometry.sunit_blocks, p.check.geometry.swidth_blocks) == (64, 512)


def test_stripe_detected_by_mkfs(book: RuleBook) -> None:
    p = run(book, MD)
    d = decision(p, "-d su/sw")
    assert d.value == "default" and "detects su=512k, sw=6" in d.reason
    assert d.default == "su=512k,sw=6"


def test_stripe_answers_disagreeing_with_device(book: RuleBook) -> None:
    p = run(book, MD, storage={"raid_stripe_unit": "64KiB", "raid_data_disks": 4})
    assert decision(p, "-d su/sw").value == "su=64k,sw=4"
    assert any("disagree" in m for m in warned(p, "stripe-geometry"))


def test_stripe_ignored_by_mkfs_is_explained(book: RuleBook) -> None:
    ignored = StripeGeometry(sunit_bytes=4096, swidth_bytes=4096, data_disks=1, source="sdx",
                             used_by_mkfs=False,
                             ignored_reason="minimum_io_size equals the physical sector size")
    d = decision(run(book, device(stripe=ignored)), "-d su/sw")
    assert "ignores" in d.reason and "physical sector" in d.reason


def test_log_size_for_concurrent_metadata_work(book: RuleBook) -> None:
    params = book.rules["log-size"].params
    assert isinstance(params, LogSizeParams)
    per_writer = reservation_per_writer(params, 0) * 100 / params.usable_log_percent
    fits = int((64 << 20) // per_writer)  # writers whose reservations the 64 MiB log holds
    assert decision(run(book, SSD, concurrent_writers=fits, access="mixed"),
                    "-l size").value == "default"
    p = run(book, SSD, concurrent_writers=fits + 1, access="mixed")
    assert decision(p, "-l size").value == "65m"
    p = run(book, SSD, concurrent_writers=200, access="mixed")
    assert decision(p, "-l size").value == "169m"
    assert p.check is not None and p.check.geometry.log_bytes == 169 << 20
    assert p.check.geometry.log_bytes >= 200 * per_writer


def test_log_size_does_not_depend_on_this_hosts_memory(book: RuleBook) -> None:
    small, large = (decision(run(book, SSD, memory=m, concurrent_writers=200), "-l size")
                    for m in (2 * GiB, 512 * GiB))
    assert small.value == large.value == "169m"


def test_log_size_read_heavy_keeps_default(book: RuleBook) -> None:
    assert decision(run(book, SSD, concurrent_writers=16, access="read-heavy"),
                    "-l size").value == "default"


def test_log_stripe_unit_for_fsync_heavy_raid(book: RuleBook) -> None:
    p = run(book, MD, fsyncs_per_second=500)
    assert decision(p, "-l su").value == "4k"
    assert p.check is not None and p.check.geometry.log_sunit_blocks == 1
    assert decision(run(book, MD, fsyncs_per_second=10), "-l su").value == "default"
    assert decision(run(book, SSD, fsyncs_per_second=500), "-l su").value == "default"


@pytest.mark.parametrize(("dev", "answers", "load", "logbsize"), [
    (HDD, {"storage": {"kind": "single-disk"}}, "more than it completes (about 40/s)", "256k"),
    # unknown storage: the single disk's cost, the worst case
    (HDD, {}, "more than it completes (about 40/s)", "256k"),
    (SSD, {}, "busy 10% of the time", "default"),
    (HDD, {"storage": {"kind": "single-disk", "nonvolatile_write_cache": True}},
     "busy 0% of the time", "default"),
])
def test_fsync_load_is_relative_to_the_storage(book: RuleBook, dev: Device,
                                               answers: dict[str, Any], load: str,
                                               logbsize: str) -> None:
    """50 fsyncs/s are heavy for a single disk without a non-volatile cache (25 ms each: more
    than the 40/s it completes, never printed as a share over 100%) and light for an SSD (2 ms
    each: 10%)."""
    d = decision(run(book, dev, fsyncs_per_second=50, **answers), "mount logbsize")
    assert d.value == logbsize
    assert load in d.reason


def test_log_stripe_unit_relative_to_the_storage(book: RuleBook) -> None:
    spinning = device(8 * TiB, name="md0", rotational=True, stripe=md_stripe(128 * KiB, 6))
    d = decision(run(book, spinning, fsyncs_per_second=50), "-l su")
    assert d.value == "4k" and "on md-raid storage" in d.reason
    d = decision(run(book, MD, fsyncs_per_second=50), "-l su")  # md over SSDs
    assert d.value == "default" and "solid-state members" in d.reason


def test_inode32_only_over_1tib(book: RuleBook) -> None:
    p = run(book, HDD, nfs_32bit_clients=True)
    assert decision(p, "mount inode32/inode64").value == "inode32"
    assert "inode32" in p.fstab
    assert warned(p, "inode32")
    assert decision(run(book, SSD, nfs_32bit_clients=True),
                    "mount inode32/inode64").value == "default"


def test_logbsize_without_nonvolatile_cache(book: RuleBook) -> None:
    p = run(book, SSD, concurrent_writers=8, writer_activity="metadata")
    assert decision(p, "mount logbsize").value == "256k"
    assert "logbsize=256k" in p.mount_options
    p = run(book, SSD, concurrent_writers=8, writer_activity="metadata",
            storage={"nonvolatile_write_cache": True})
    assert decision(p, "mount logbsize").value == "default"


def test_write_through_is_not_a_nonvolatile_cache(book: RuleBook) -> None:
    through = device(4 * TiB, rotational=True, write_cache="write through")
    d = decision(run(book, through, concurrent_writers=8, writer_activity="both"),
                 "mount logbsize")
    assert d.value == "256k" and "write through" in d.reason


def test_no_volatile_cache_warning_when_the_answer_says_non_volatile(book: RuleBook) -> None:
    assert any("volatile write cache without FUA" in m for m in warned(run(book, HDD),
                                                                        "flush-cost"))
    assert warned(run(book, HDD), "nonvolatile-cache") == []
    p = run(book, HDD, storage={"nonvolatile_write_cache": True})
    assert warned(p, "flush-cost") == []
    messages = warned(p, "nonvolatile-cache")
    assert any("queue/write_cache" in m and "Risk:" in m for m in messages), messages
    assert decision(p, "mount logbsize").value == "default"


def test_logbsize_respects_odd_log_stripe_unit(book: RuleBook) -> None:
    odd = device(100 * GiB, write_cache="write back", stripe=md_stripe(192 * KiB, 4))
    d = decision(run(book, odd, concurrent_writers=8, writer_activity="metadata"),
                 "mount logbsize")
    assert d.value == "default" and "multiple" in d.reason


def test_logbufs_always_kept(book: RuleBook) -> None:
    d = decision(run(book, SSD, concurrent_writers=64), "mount logbufs")
    assert d.value == "default" and "many filesystems" in d.reason


def test_atime(book: RuleBook) -> None:
    assert run(book, SSD, atime_needed=False).mount_options == ["noatime"]
    assert decision(run(book, SSD, atime_needed=True), "mount atime").value == "default"


def test_discard_never_mounted(book: RuleBook) -> None:
    d = decision(run(book, SSD), "mount discard")
    assert d.value == "default" and "fstrim" in d.reason
    d = decision(run(book, device(discard_granularity=0)), "mount discard")
    assert "does not support" in d.reason


def test_kernel_compat_falls_back_to_explicit_flags(book: RuleBook) -> None:
    p = run(book, SSD, must_mount_on_kernel="5.4")
    d = decision(p, "-m features")
    assert d.changed and d.rule == "kernel-compat"
    assert "-m" in p.mkfs_options
    assert p.check is not None
    features = p.check.geometry.features
    assert (features["bigtime"], features["inobtcount"], features["reflink"]) == (0, 0, 1)


def test_kernel_compat_newer_kernel_keeps_default(book: RuleBook) -> None:
    assert decision(run(book, SSD, must_mount_on_kernel="6.5"), "-m features").value == "default"
    p = run(book, SSD, must_mount_on_kernel="3.12")
    assert not warned(p, "kernel-compat")  # no "may not mount": only what 3.12 mounts
    assert "older than every LTS feature set" in decision(p, "-m features").reason
    assert p.check is not None
    features = p.check.geometry.features
    assert features["crc"] == 1
    assert all(features[f] == 0 for f in ("finobt", "sparse", "reflink", "bigtime",
                                            "inobtcount")), features


def test_kernel_compat_merges_with_inode_size(book: RuleBook) -> None:
    p = run(book, SSD, must_mount_on_kernel="5.10", xattr_bytes_per_file=600)
    i_args = [p.mkfs_options[i + 1] for i, a in enumerate(p.mkfs_options) if a == "-i"]
    assert len(i_args) == 1 and "size=1024" in i_args[0] and "sparse=1" in i_args[0]


DEVICE_RULES = ("device-mounted", "device-swap", "device-held", "device-looped",
                "device-partitions",
                "device-holds-data", "device-read-only", "device-zoned", "device-misaligned",
                "flush-cost", "nonvolatile-cache", "discard-passdown", "stack-alignment")


@pytest.mark.parametrize(("facts", "rule", "needle"), [
    ({"alignment_offset": 3584}, "device-misaligned",
     "sdx starts 3584 bytes off its physical alignment: every IO straddles sectors"),
    ({"write_cache": "write back", "fua": False}, "flush-cost", "without FUA"),
    ({"zoned": "host-aware"}, "device-zoned", "host-aware zoned device: it takes random writes"),
    ({"usage": Usage(mountpoints=["/srv"])}, "device-mounted", "sdx is mounted on /srv"),
    ({"usage": Usage(swap=True)}, "device-swap", "sdx is in use as swap"),
    ({"usage": Usage(signatures=[Fact[str](value="ext4", source="blkid", raw="TYPE=ext4")],
                     probed=True)}, "device-holds-data", "sdx holds data: ext4 (TYPE=ext4)"),
    ({"holders": ["dm-3"], "children": ["dm-3"]}, "device-held", "sdx is held by dm-3"),
    ({"usage": Usage(loops=["loop7"])}, "device-looped",
     "sdx is the backing of loop device loop7"),
    ({"children": ["sdx1", "sdx2"]}, "device-partitions", "sdx has partitions (sdx1, sdx2)"),
    ({"read_only": True}, "device-read-only", "sdx is read-only"),
])
def test_each_device_rule_says_one_thing(book: RuleBook, facts: dict[str, Any], rule: str,
                                         needle: str) -> None:
    """Each obstacle is warned about by its own rule, once, and by no other device rule."""
    p = run(book, device(**facts))
    assert [m for m in warned(p, rule) if needle in m], warned(p, rule)
    assert len(warned(p, rule)) == 1
    others = [r for r in DEVICE_RULES if r != rule and warned(p, r)]
    assert others == [], others


def test_host_aware_wording_does_not_talk_about_host_managed(book: RuleBook) -> None:
    messages = warned(run(book, device(zoned="host-aware")), "device-zoned")
    assert messages and not any("host-managed" in m for m in messages)


def test_no_device_warnings_on_a_clean_device(book: RuleBook) -> None:
    assert set(DEVICE_RULES) == {r.id for r in book.of_kind("device")}
    assert [r for r in DEVICE_RULES if warned(run(book, SSD), r)] == []


def test_log_size_on_old_xfsprogs_with_tiny_default_log(book: RuleBook) -> None:
    # The defaults come from this host's mkfs.xfs; an xfsprogs 5.10 host makes a 10 MiB log.
    from advisor.engine.context import Context
    from advisor.engine.rules.log_size import LogSizeParams, log_size
    from advisor.system.mkfs import dry_run

    dev = device(100 * GiB)
    defaults = dry_run(dev, []).geometry.model_copy(update={"log_blocks": 2560})
    ctx = Context(device=dev, workload=Workload(), env=environment("5.10.0"), geometry=defaults,
                  size=100 * GiB)
    params = book.rules["log-size"].params
    assert isinstance(params, LogSizeParams)
    outcome = log_size(ctx, params)
    assert outcome.change is not None and outcome.change.options == ["-l", "size=64m"]
    assert "5.10.0 makes small logs" in outcome.change.reason
    ctx.env = environment("6.1.0")
    assert log_size(ctx, params).change is None


def test_kernel_compat_for_a_host_running_an_older_kernel(book: RuleBook) -> None:
    env = environment().model_copy(update={"kernel": "5.10.0-28-amd64"})
    p = propose(SSD, Workload(), env=env, rulebook=book)
    d = decision(p, "-m features")
    assert d.changed and "the host runs kernel 5.10.0-28-amd64" in d.reason
    assert p.check is not None and p.check.geometry.features["bigtime"] == 0


@pytest.mark.parametrize("size", [1 * GiB, 3 * GiB, 8 * GiB, 8 * GiB + (1 << 20), 100 * GiB,
                                  512 * GiB, 513 * GiB, 2 * TiB, 16 * TiB])
def test_multidisk_agcount_is_what_mkfs_makes_for_a_stripe(size: int) -> None:
    """ag-concurrency's cap on small filesystems is mkfs.xfs's own multi-disk AG count: checked
    against `mkfs.xfs -N` given a stripe, at and around each step of its table."""
    from advisor.engine.rules.ag_concurrency import multidisk_agcount
    from advisor.system.mkfs import dry_run

    made = dry_run(device(size), ["-d", "su=64k,sw=4"]).geometry.agcount
    assert multidisk_agcount(size) == made


@pytest.mark.parametrize(("target", "expected"), [
    ("4.18.0-513.el8", "rhel8"), ("5.14.0-362.el9.x86_64", "rhel9"), ("AlmaLinux 8", "rhel8"),
    ("centos7", "rhel7"), ("6.1.0-18-amd64", "6.1"), ("ubuntu-22.04", "ubuntu22.04"),
])
def test_kernel_targets_are_read(target: str, expected: str) -> None:
    assert Workload(must_mount_on_kernel=target).must_mount_on_kernel == expected


@pytest.mark.parametrize("target", ["2.6", "3.2.0-4-amd64", "2.6.32-754.el6"])
def test_a_kernel_that_cannot_mount_v5_is_refused(target: str) -> None:
    from advisor.answers import parse_workload
    from advisor.errors import BadInput

    with pytest.raises(BadInput, match=r"V5 \(CRC\) filesystem .* mounts from 3\.12") as err:
        parse_workload({"must_mount_on_kernel": target})
    assert err.value.exit_code == 2


def test_an_unknown_distribution_release_is_refused(book: RuleBook) -> None:
    from advisor.errors import BadInput

    with pytest.raises(BadInput, match="no feature table for debian9") as err:
        run(book, SSD, must_mount_on_kernel="debian9")
    assert err.value.exit_code == 2


def test_a_rhel8_capture_gets_rhel8_features_without_an_answer(book: RuleBook) -> None:
    """The host being advised runs an el8 kernel: its features, not upstream 4.18's."""
    env = environment().model_copy(update={"kernel": "4.18.0-513.el8.x86_64"})
    p = propose(SSD, Workload(), env=env, rulebook=book)
    d = decision(p, "-m features")
    assert "reflink=1" in d.value and "bigtime=0" in d.value, d.value
    assert "4.18.0-513.el8.x86_64" in d.reason


def test_older_mkfs_is_given_only_option_names_it_knows(book: RuleBook) -> None:
    """xfsprogs 5.0 (RHEL 8's) has no -m bigtime/inobtcount nor -i nrext64 options."""
    p = run(book, SSD, check=False, xfsprogs="5.0.0", must_mount_on_kernel="rhel8")
    d = decision(p, "-m features")
    assert d.options == ["-m", "crc=1,finobt=1,reflink=1,rmapbt=0", "-i", "sparse=1"]


@pytest.mark.parametrize("size", [400 * MiB, 512 * MiB, 513 * MiB, 600 * MiB, 1 * GiB])
def test_more_ags_for_writers_each_still_hold_the_log(book: RuleBook, size: int) -> None:
    """8 writers on a small SSD: the AGs proposed each hold the internal log, so the real dry
    run takes the command (agcount=8 at 512 MiB was refused: "Log size must be at least
    64MB", a bug exit); the count said is the one mkfs.xfs makes."""
    p = run(book, device(size, rotational=False), concurrent_writers=8)
    assert p.check is not None  # a refusal would have raised ProposalBug
    d = decision(p, "-d agcount/agsize")
    made = p.check.geometry.agcount
    g = p.check.geometry
    assert g.agsize_blocks * g.block_size > g.log_bytes
    if d.changed:
        assert f"{made} AGs" in d.reason, d.reason


def test_a_kept_default_is_labelled_with_the_rule_that_applies(book: RuleBook) -> None:
    """A rule that does not apply here (no growth planned, not a DAX device) does not label a
    kept default another rule argued: the AG count kept for concurrency is ag-concurrency's, a
    detected stripe kept is stripe-geometry's, and their reasons come first."""
    p = run(book, device(300 * MiB, rotational=False), concurrent_writers=8,
            writer_activity="metadata")
    d = decision(p, "-d agcount/agsize")
    assert d.rule == "ag-concurrency" and d.reason.startswith("8 concurrent writers")
    d = decision(run(book, MD), "-d su/sw")
    assert d.rule == "stripe-geometry" and d.reason.startswith("mkfs.xfs detects")
