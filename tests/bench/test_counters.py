"""Mechanism counters: XFS's per-mount and the block layer's counters,
snapshotted before each fio phase, give work per operation; on real mounts logbsize=256k writes
the log several times less often for the same directory work, as the logbsize rule says."""

from __future__ import annotations

import os
import random
from pathlib import Path

from advisor.bench import counters, jobs
from advisor.models.bench import MetricResult, SideConfig
from advisor.models.rule import MechanismClaim
from advisor.models.workload import Workload
from tests.conftest import mounted, require_root_tools, sh

STATS = """extent_alloc 1 2 3 4
log 40 2400 0 7 3
trans 0 2031 0
"""
BLOCK = "  10 0 80 5  120 3 900 40  0 50 60  0 0 0 0  9 1\n"


def test_parse_snapshot_reads_the_log_line_and_the_block_fields() -> None:
    got = counters.parse_snapshot(STATS + BLOCK)
    assert got == {"extent_allocs": 1, "log_writes": 40, "log_blocks": 2400, "log_noiclogs": 0,
                   "log_forces": 7,
                   "log_force_sleeps": 3, "write_ios": 120, "write_sectors": 900,
                   "discard_ios": 0, "flush_ios": 9, "transactions": 2031}


def test_values_span_their_phases_per_operation(tmp_path: Path) -> None:
    def snap(phase: str, log_writes: int, log_blocks: int, writes: int, flushes: int) -> None:
        (tmp_path / f"counters.{phase}").write_text(
            f"log {log_writes} {log_blocks} 0 0 0\n"
            f"  0 0 0 0  {writes} 0 0 0  0 0 0  0 0 0 0  {flushes} 0\n")

    snap("create", 0, 0, 0, 0)
    snap("delete", 1, 100, 5, 0)
    snap("refill", 2, 200, 9, 0)
    snap("stat", 12, 2000, 30, 0)   # the sync before the stats pushed the directory work
    snap("syncwrite", 12, 2000, 31, 0)
    snap(counters.END, 112, 2400, 331, 0)  # 200 fsyncs: 100 log writes, 300 device writes
    values = counters.mechanism_values(
        str(tmp_path), ["create", "delete", "refill", "stat", "syncwrite"],
        {"create": 2000, "delete": 200, "refill": 200, "syncwrite": 200})
    assert values == {"log_writes_per_1k_dirops": 12 * 1000 / 2400,
                      "log_kib_per_1k_dirops": 2000 * 500 / 2400,
                      "log_writes_per_fsync": 0.5, "log_kib_per_fsync": 1.0,
                      "device_writes_per_fsync": 1.5,
                      "flushes_per_fsync": 0.0,
                      "device_write_kib_per_fsync": 0.0,  # no sectors in this text
                      "device_write_kib_per_1k_dirops": 0.0,
                      "log_buffer_waits_per_1k_dirops": 0.0,  # noiclogs 0 throughout
                      "discards_per_1k_dirops": 0.0}
    (tmp_path / "counters.refill").unlink()  # a missed snapshot: no figure, not a wrong one
    values = counters.mechanism_values(
        str(tmp_path), ["create", "delete", "refill", "stat", "syncwrite"],
        {"create": 2000, "delete": 200, "refill": 200, "syncwrite": 200})
    assert "log_writes_per_1k_dirops" in values  # spans create..refill: needs create and stat
    (tmp_path / "counters.stat").unlink()
    assert "log_writes_per_1k_dirops" not in counters.mechanism_values(
        str(tmp_path), ["create", "delete", "refill", "stat"], {"create": 2000})


def _fio_round(loop: str, mnt: Path, work: Path, options: list[str], workload: Workload
               ) -> tuple[jobs.Shape, jobs.RoundResult]:
    """mkfs, mount with `options`, one side of a round as validate runs it (the directory
    changes, the unmount and mount for cold stats, the rest) with the counters' snapshots taken
    in `work`; the round's shape and what fio measured."""
    from advisor.bench.side import fio_round

    shape = jobs.shape_for(workload, measure_seconds=1.0, fs_bytes=1 << 30)
    sh("mkfs.xfs", "-q", "-f", "-K", loop)
    work.mkdir()
    name = counters.kernel_name(loop)
    paths = {}
    for part in ("changes", "rest"):
        paths[part] = str(work / f"{part}.fio")
        Path(paths[part]).write_text(jobs.jobfile(shape, str(mnt), counters_for=name,
                                                  part=part))
    with mounted(loop, mnt, *options):
        jobs.prepare(shape, str(mnt))

        def remount() -> None:
            sh("umount", str(mnt))
            sh("mount", *(["-o", ",".join(options)] if options else []), loop, str(mnt))

        measured = fio_round("A", shape, paths, str(work), 300.0, name, remount)
    return shape, measured


def _one_round(loop: str, mnt: Path, work: Path, options: list[str]) -> dict[str, float]:
    shape, _ = _fio_round(loop, mnt, work, options, Workload(
        largest_directory_entries=20_000, fsyncs_per_second=0, median_file_size=4096,
        concurrent_writers=1))
    phases = jobs.phases(shape)
    assert all((work / f"counters.{p}").exists() for p in phases)  # every snapshot was taken
    return counters.mechanism_values(
        str(work), phases, {"create": shape.directory_entries, "delete": shape.churn_entries,
                            "refill": shape.churn_entries})


def test_logbsize_256k_writes_the_log_less_often(tmp_path: Path, loop: str) -> None:
    require_root_tools("fio", "mount")
    small = _one_round(loop, tmp_path / "m32", tmp_path / "w32", ["logbsize=32k"])
    large = _one_round(loop, tmp_path / "m256", tmp_path / "w256", ["logbsize=256k"])
    assert small["log_writes_per_1k_dirops"] > 0 and large["log_writes_per_1k_dirops"] > 0
    # The same directory work, in fewer and larger log writes (measured here: about 1/8).
    assert large["log_writes_per_1k_dirops"] < 0.5 * small["log_writes_per_1k_dirops"], (
        small, large)
    assert 0.5 < large["log_kib_per_1k_dirops"] / small["log_kib_per_1k_dirops"] < 2.0


def _judged(name: str, ci: tuple[float, float]) -> MetricResult:
    return MetricResult(name=name, title=name, unit="x", higher_is_better=False, a=[1.0, 1.0],
                        b=[1.0, 1.0], ratio=(ci[0] + ci[1]) / 2, ci=list(ci), margin=0.05,
                        noise=0.0, verdict="inconclusive")


def test_claims_are_checked_only_for_options_b_adds() -> None:
    claim = MechanismClaim(option="logbsize=", counter="log_writes_per_1k_dirops",
                           expect="less")
    a = SideConfig(label="A")
    b = SideConfig(label="B", mount_options=["logbsize=256k", "noatime"])

    def seen(ci: tuple[float, float] | None) -> str:
        judged = [] if ci is None else [_judged("log_writes_per_1k_dirops", ci)]
        [check] = counters.check_claims([("logbsize", claim)], a, b, judged)
        assert check.option == "logbsize=256k" and check.rule == "logbsize"
        return check.seen

    assert seen((0.11, 0.14)) == "seen"
    assert seen((1.05, 1.2)) == "opposite"
    assert seen((0.9, 1.1)) == "not seen"
    assert seen(None) == "not measured"
    both = SideConfig(label="A", mount_options=["logbsize=256k"])
    assert counters.check_claims([("logbsize", claim)], both, b, []) == []
    su = MechanismClaim(option="-l su=", counter="log_kib_per_fsync", expect="less")
    b_su = SideConfig(label="B", mkfs_options=["-l", "size=64m,su=4k"])
    [check] = counters.check_claims([("log-stripe-unit", su)], a, b_su,
                                    [_judged("log_kib_per_fsync", (0.5, 0.6))])
    assert check.option == "-l su=4k" and check.seen == "seen"


def test_a_figure_b_never_did_is_less_work_by_the_rank_test_at_the_first_look() -> None:
    """noatime: no atime transaction in any round on B, some in every round on A. No log-ratio
    exists; every B round below every A round is an exact rank test, p = 1/C(8, 4) = 1/70 at
    the first look (4 pairs), where a sign test needed 6."""
    four = {"transactions_per_file_read": {"A": [0.5] * 4, "B": [0.0] * 4}}
    (m,) = counters.judge_none_on_b(four, set(), {"transactions_per_file_read": ["noatime"]})
    assert (m.ratio, m.ci, m.verdict, m.geo_mean_a) == (0.0, [0.0, 0.0], "better", 0.5)
    assert m.decided_after == 4 and m.rounds_to_resolve is None
    assert m.primary_for == ["noatime"]
    six = {"transactions_per_file_read": {"A": [0.5] * 6, "B": [0.0] * 6}}
    assert counters.judge_none_on_b(six, set())[0].decided_after == 4
    three = {"transactions_per_file_read": {"A": [1.0] * 3, "B": [0.0] * 3}}
    (early,) = counters.judge_none_on_b(three, set())
    # 3 pairs cannot show it (1/20 alone, 0.070 with the later looks): the pairs it needs.
    assert early.verdict == "inconclusive" and early.rounds_to_resolve == 4
    mixed = {"transactions_per_file_read": {"A": [1.0, 0.0] * 3, "B": [0.0] * 6}}
    assert counters.judge_none_on_b(mixed, set()) == []  # A did none in some round: no figure
    assert counters.judge_none_on_b(six, {"transactions_per_file_read"}) == []


def test_rank_test_p_values_and_their_sum_over_every_look() -> None:
    """The error the docstring promises: 1/C(2n, n) per look, summed over every look from 4 on
    below 0.02 (so below the 0.05 of a primary metric however often a run looks)."""
    assert counters.zero_side_p_value(4) == 1 / 70
    assert counters.zero_side_p_value(3) == 1 / 20
    assert sum(counters.zero_side_p_value(n) for n in range(counters.ZERO_TEST_PAIRS, 300)) \
        < 0.02
    assert sum(counters.zero_side_p_value(n) for n in range(3, 300)) > 0.05


def test_rank_test_false_and_true_calls_by_simulation() -> None:
    """Simulated runs looked at after every ABBA block from 4 to 20 pairs, counting calls.
    No difference: each round's figure is 0 with probability 1/2 on either side (the case most
    likely to put every B round at 0 and every A round above it), so a call is false; 20,000
    runs make at most 2% false calls (the bound: 1.97%). A real structural zero (B none in every
    round, A 0.8-1.2 per read) is called at the first look in every run."""
    rng = random.Random(20140501)
    false_calls = 0
    runs = 20_000
    for _ in range(runs):
        a: list[float] = []
        b: list[float] = []
        for _block in range(10):
            for _pair in range(2):
                a.append(0.0 if rng.random() < 0.5 else rng.uniform(0.5, 1.5))
                b.append(0.0 if rng.random() < 0.5 else rng.uniform(0.5, 1.5))
            found = counters.judge_none_on_b(
                {"transactions_per_file_read": {"A": a, "B": b}}, set())
            if found and found[0].verdict == "better":
                false_calls += 1
                break
    assert false_calls / runs <= 0.02
    first_look = 0
    for _ in range(200):
        a = [rng.uniform(0.8, 1.2) for _ in range(4)]
        (m,) = counters.judge_none_on_b(
            {"transactions_per_file_read": {"A": a, "B": [0.0] * 4}}, set())
        first_look += m.verdict == "better" and m.decided_after == 4
    assert first_look == 200


def _writers_per_ag(loop: str, mnt: Path, agcount: int) -> dict[str, float]:
    sh("mkfs.xfs", "-q", "-f", "-K", "-d", f"agcount={agcount}", loop)
    with mounted(loop, mnt):
        shape = jobs.shape_for(Workload(concurrent_writers=8), measure_seconds=1.0,
                               fs_bytes=1 << 30)
        jobs.prepare(shape, str(mnt))  # the writers' folders, as every round makes them
        return counters.writers_in_busiest_ag(loop, str(mnt), 8)


def test_more_ags_leave_fewer_writers_sharing_one(tmp_path: Path, loop: str) -> None:
    """The ag-concurrency rule's mechanism, from the folders' inode numbers: 8 writers over
    the default 4 AGs share them two by two; with agcount=8 each has its own. xfs_db says the
    same of each folder's inode."""
    require_root_tools("mount", "xfs_db")
    four = _writers_per_ag(loop, tmp_path / "m4", 4)
    eight = _writers_per_ag(loop, tmp_path / "m8", 8)
    assert four == {"writers_in_busiest_ag": 2.0} and eight == {"writers_in_busiest_ag": 1.0}
    with mounted(loop, tmp_path / "m8"):  # the oracle: xfs_db's AG of w0..w7's inodes
        inos = [os.stat(tmp_path / "m8" / f"w{i}").st_ino for i in range(8)]
    ags = {sh("xfs_db", "-r", "-c", f"convert ino {ino} agno", loop).stdout.split()[0]
           for ino in inos}
    assert len(ags) == 8
    assert counters.writers_in_busiest_ag(loop, str(tmp_path), 1) == {}  # one writer: no figure


def _read_back(loop: str, mnt: Path, work: Path, options: list[str]) -> dict[str, float]:
    """One round with an fsync phase (and so the read-back of each writer's file)."""
    shape, measured = _fio_round(loop, mnt, work, options, Workload(
        largest_directory_entries=2000, fsyncs_per_second=50, median_file_size=4096,
        concurrent_writers=3))
    assert measured.operations["readback"] == 3  # one 4 KiB read per writer's file
    return counters.mechanism_values(str(work), jobs.phases(shape), measured.operations)


def test_noatime_spares_the_atime_transaction_of_each_file_read_back(tmp_path: Path,
                                                                     loop: str) -> None:
    """The atime rule's mechanism: relatime (the default) commits one transaction per file read
    after it was written, noatime none."""
    require_root_tools("fio", "mount")
    relatime = _read_back(loop, tmp_path / "m1", tmp_path / "w1", [])
    noatime = _read_back(loop, tmp_path / "m2", tmp_path / "w2", ["noatime"])
    assert relatime["transactions_per_file_read"] == 1.0
    assert noatime["transactions_per_file_read"] == 0.0
