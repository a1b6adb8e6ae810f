"""Mechanism counters: the work XFS and the block layer did per operation, next to the timings.

XFS keeps per-mount counters in /sys/fs/xfs/<dev>/stats/stats (log writes and blocks, log forces,
transactions) and the block layer per-device ones in /sys/class/block/<dev>/stat (IOs, sectors,
flushes; a partition's are there too, not under /sys/block). They count work, not time, so they
barely depend on the machine's load: they can show what an option does (logbsize=256k: fewer,
larger log writes) where wall-clock throughput is lost in the noise. fio snapshots them before each
phase (`exec_prerun`), the run once fio is done; the difference of consecutive snapshots is one
phase's work.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from advisor.models.bench import MechanismCheck, MetricResult, SideConfig
from advisor.models.rule import MechanismClaim

#: The phases of a round in order (advisor.bench.jobs), then the snapshot taken after fio.
PHASES = ("create", "delete", "refill", "stat", "syncwrite", "readback", "seqwrite",
          "seqread")
END = "end"

#: /sys/fs/xfs/<dev>/stats/stats `log` line: writes, blocks (512 B), noiclogs, force, force_sleep.
_LOG_FIELDS = ("log_writes", "log_blocks", "log_noiclogs", "log_forces", "log_force_sleeps")
#: Extents allocated (extent_alloc's first field, allocx), for the allocation rules.
_ALLOC_LINE = "extent_alloc"
#: /sys/block/<dev>/stat fields (Documentation/block/stat.rst), by position.
_BLOCK_FIELDS = {4: "write_ios", 6: "write_sectors", 11: "discard_ios", 15: "flush_ios"}


@dataclass(frozen=True)
class Mechanism:
    """A work-per-operation figure over a span of phases: lower is less work."""

    name: str
    title: str
    unit: str
    phases: tuple[str, ...]
    """The phases whose work (and operations) it counts, consecutive."""
    counter: str
    scale: float
    """Multiplies counter / operations (1000: per thousand operations; 500: 512 B blocks in KiB
    per thousand)."""


#: Directory work reaches the log when the CIL is pushed, not as each create happens: at the
#: latest by the `sync` before the cold stat phase, which falls in the refill phase's window.
#: So the directory figures span create, delete and refill, per directory operation.
DIRECTORY = ("create", "delete", "refill")

MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("log_writes_per_1k_dirops", "log writes per 1k directory ops", "writes",
              DIRECTORY, "log_writes", 1000.0),
    Mechanism("log_kib_per_1k_dirops", "log KiB per 1k directory ops", "KiB", DIRECTORY,
              "log_blocks", 500.0),
    Mechanism("log_writes_per_fsync", "log writes per fsync", "writes", ("syncwrite",),
              "log_writes", 1.0),
    Mechanism("log_kib_per_fsync", "log KiB per fsync", "KiB", ("syncwrite",), "log_blocks", 0.5),
    Mechanism("device_writes_per_fsync", "device write IOs per fsync", "IOs", ("syncwrite",),
              "write_ios", 1.0),
    Mechanism("flushes_per_fsync", "cache flushes per fsync", "flushes", ("syncwrite",),
              "flush_ios", 1.0),
    # block-size: a block larger than the small synced write makes the device write
    # the whole block (the drive's unit), not the part the write touched.
    # discard: online discard trims as the deletes free extents.
    Mechanism("discards_per_1k_dirops", "discard IOs per 1k directory ops", "IOs", DIRECTORY,
              "discard_ios", 1000.0),
    Mechanism("device_write_kib_per_fsync", "device write KiB per fsync", "KiB", ("syncwrite",),
              "write_sectors", 0.5),
    # Everything the directory work wrote to the device (log and metadata written back): larger
    # inodes write larger inode clusters; a larger log writes the same metadata back less often.
    Mechanism("device_write_kib_per_1k_dirops", "device write KiB per 1k directory ops", "KiB",
              DIRECTORY, "write_sectors", 500.0),
    # Times a log write found no free in-memory log buffer (the `log` line's noiclogs): fewer
    # log buffers (logbufs) wait more often.
    Mechanism("log_buffer_waits_per_1k_dirops", "log buffer waits per 1k directory ops", "waits",
              DIRECTORY, "log_noiclogs", 1000.0),
    # -- extent allocations (extent size hints, swalloc) --
    Mechanism("extent_allocs_per_1k_sync_writes", "allocations per 1k fsync'd writes",
              "allocs", ("syncwrite",), "extent_allocs", 1000.0),
    # Allocations the directory work made (directory blocks, inode chunks, their btree blocks):
    # a larger directory block grows the directory in fewer, larger pieces. A count of calls to
    # the allocator, fixed by the sequence of operations: the load does not move it.
    Mechanism("extent_allocs_per_1k_dirops", "allocations per 1k directory ops", "allocs",
              DIRECTORY, "extent_allocs", 1000.0),
    Mechanism("extent_allocs_per_mib_written", "allocations per MiB written", "allocs",
              ("seqwrite",), "extent_allocs", 1.0),
    # Where the writers work: each writer's folder (made at the start of the round, so the
    # inode64 rotor spreads them over the AGs) and the files in it live in the folder's AG.
    # agcount=8 with 8 writers: one writer per AG instead of two (the ag-concurrency rule). Not
    # a counter span (no phases): taken after fio from the folders' inode numbers.
    Mechanism("writers_in_busiest_ag", "writers sharing the busiest AG", "writers", (),
              "", 1.0),
    # Reading a file written since its last access updates its atime under relatime (the
    # default): one transaction per file read back; noatime: none.
    Mechanism("transactions_per_file_read", "transactions per file read back",
              "trans", ("readback",), "transactions", 1.0),
)


def kernel_name(device: str) -> str:
    """The name XFS and sysfs use for a device node (`/dev/mapper/vg-lv` -> `dm-3`)."""
    return os.path.basename(os.path.realpath(device))


def _files(name: str) -> tuple[str, str]:
    """The counter files of device `name`: XFS's per-mount stats, then the block layer's."""
    return f"/sys/fs/xfs/{name}/stats/stats", f"/sys/class/block/{name}/stat"


def snapshot_command(name: str, path: str) -> str:
    """A shell line saving both counter files of device `name` to `path`."""
    return f"cat {' '.join(_files(name))} > {path}"


def parse_snapshot(text: str) -> dict[str, int]:
    """The counters this module uses from a snapshot (the XFS stats, then the block stat line)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["log"]:
            out.update({k: int(v) for k, v in zip(_LOG_FIELDS, parts[1:], strict=False)})
        elif parts[:1] == [_ALLOC_LINE] and len(parts) > 1 and parts[1].isdigit():
            out["extent_allocs"] = int(parts[1])
        elif parts[:1] == ["trans"] and len(parts) >= 3:
            # sync, async (then empty, which change nothing): metadata transactions committed
            out["transactions"] = int(parts[1]) + int(parts[2])
        elif len(parts) >= 16 and all(p.isdigit() for p in parts):
            out.update({k: int(parts[i]) for i, k in _BLOCK_FIELDS.items()})
    return out


def snapshot_path(folder: str, phase: str) -> str:
    return os.path.join(folder, f"counters.{phase}")


def read_snapshot(folder: str, phase: str) -> dict[str, int] | None:
    try:
        with open(snapshot_path(folder, phase), encoding="utf-8") as f:
            return parse_snapshot(f.read())
    except OSError:
        return None


def take_snapshot(name: str, folder: str, phase: str) -> None:
    """The snapshot after fio, taken here (same content as the phases' shell lines)."""
    parts = []
    for path in _files(name):
        try:
            with open(path, encoding="utf-8") as f:
                parts.append(f.read())
        except OSError:
            return
    with open(snapshot_path(folder, phase), "w", encoding="utf-8") as f:
        f.write("".join(parts))


def mechanism_values(folder: str, phases: list[str],
                     operations: dict[str, float]) -> dict[str, float]:
    """Each mechanism's value for one round: the counter's growth over its phases (from the
    snapshot before the first to the one after the last) per operation of those phases
    (`operations`: phase -> count). A mechanism whose phases did not all run, or whose snapshots
    are missing, is left out."""
    order = [*phases, END]
    snaps = {p: read_snapshot(folder, p) for p in order}
    values: dict[str, float] = {}
    for m in MECHANISMS:
        if not m.phases or not all(p in phases for p in m.phases):
            continue
        ops = sum(operations.get(p, 0.0) for p in m.phases)
        before = snaps[m.phases[0]]
        after = snaps[order[order.index(m.phases[-1]) + 1]]
        if not ops or not before or not after or m.counter not in before \
                or m.counter not in after:
            continue
        grown = after[m.counter] - before[m.counter]
        if grown < 0:
            continue  # a counter reset (never while mounted): no figure rather than a wrong one
        values[m.name] = grown * m.scale / ops
    return values


def writers_in_busiest_ag(device: str, mountpoint: str, writers: int) -> dict[str, float]:
    """The most writers' folders (`w0`..) that share one allocation group, from their inode
    numbers and the superblock's geometry; nothing for a single writer (nothing to share)."""
    from advisor.system.superblock import read_ag_shift

    shift = read_ag_shift(device)
    if writers < 2 or shift is None:
        return {}
    ags: dict[int, int] = {}
    try:
        for i in range(writers):
            ag = os.stat(os.path.join(mountpoint, f"w{i}")).st_ino >> shift
            ags[ag] = ags.get(ag, 0) + 1
    except OSError:
        return {}
    return {"writers_in_busiest_ag": float(max(ags.values()))}


#: Pairs from which a figure B did none of is judged (zero_side_p_value): the first look.
ZERO_TEST_PAIRS = 4


def zero_side_p_value(n: int) -> float:
    """The exact one-sided p-value of "every one of B's n rounds below every one of A's n" when
    the 2n rounds are exchangeable (B no different from A): one ordering of the sides among
    C(2n, n), so 1 / C(2n, n) (1/70 at 4 pairs). It asks nothing of the figure's distribution
    (a rank test: Mann-Whitney's U at its extreme), only that a round's figure does not depend
    on which side it was run as."""
    return 1.0 / math.comb(2 * n, n)


def judge_none_on_b(samples: dict[str, dict[str, list[float]]], judged: set[str],
                    primary: dict[str, list[str]] | None = None) -> list[MetricResult]:
    """Figures B did none of in every round while A did some in every round (noatime: no atime
    transactions at all), which have no log-ratio to judge: B/A is 0 exactly, and the direction
    is an exact rank test over the rounds (zero_side_p_value): "less work" (`better`) from
    ZERO_TEST_PAIRS pairs on, at the first look.

    Error rate: a false "better" needs B's rounds to be all below A's at some look n >= 4. Under
    no difference that has probability 1/C(2n, n) at each n, so at most
    sum over n >= 4 of 1/C(2n, n) = 0.0197 for every look a run could ever take together
    (union bound), below the 0.05 each primary metric is allowed, however often it looks and
    whenever it stops (as the confidence sequences). At 3 pairs it would be 1/20 on its own
    (0.070 with the later looks), so 3 pairs decide nothing. `judged`: names already judged;
    `primary`: name -> the options it is the primary metric of."""
    results = []
    for m in MECHANISMS:
        side = samples.get(m.name)
        if m.name in judged or not side or len(side["A"]) != len(side["B"]):
            continue
        n = len(side["A"])
        if n < 2 or any(b != 0 for b in side["B"]) or any(a <= 0 for a in side["A"]):
            continue
        geo_a = math.exp(sum(math.log(a) for a in side["A"]) / n)
        shown = n >= ZERO_TEST_PAIRS
        results.append(MetricResult(
            name=m.name, title=m.title, unit=m.unit, higher_is_better=False,
            a=[round(x, 3) for x in side["A"]], b=[0.0] * n, ratio=0.0,
            geo_mean_a=round(geo_a, 3), geo_mean_b=0.0, ci=[0.0, 0.0], margin=0.0, noise=0.0,
            verdict="better" if shown else "inconclusive",
            decided_after=ZERO_TEST_PAIRS if shown else None,
            rounds_to_resolve=None if shown else ZERO_TEST_PAIRS,
            primary_for=list((primary or {}).get(m.name, []))))
    return results


def _options(mkfs: list[str], mount: list[str]) -> list[str]:
    """A side's options as `-l su=4k` pairs and mount options, for matching claims."""
    pairs = [f"{flag} {part}" for flag, arg in zip(mkfs[::2], mkfs[1::2], strict=False)
             for part in arg.split(",")]
    return [*pairs, *mount]


def closest_claims(claims: list[tuple[str, MechanismClaim]],
                   option: str) -> list[tuple[str, MechanismClaim]]:
    """The claims that speak for `option`: those whose option is its longest matching prefix,
    so that a claim for one value (`-l su=4k`: one block, nothing padded) stands before the
    claim for every other value (`-l su=`)."""
    matching = [(rule, c) for rule, c in claims if option.startswith(c.option)]
    longest = max((len(c.option) for _, c in matching), default=0)
    return [(rule, c) for rule, c in matching if len(c.option) == longest]


def check_claims(claims: list[tuple[str, MechanismClaim]], a: SideConfig, b: SideConfig,
                 judged: list[MetricResult]) -> list[MechanismCheck]:
    """Each rule's claim (`claims`: (rule id, claim)) whose option B has and A lacks, against the
    judged counters: seen, opposite, not seen (the interval straddles 1) or not measured."""
    mine, theirs = _options(b.mkfs_options, b.mount_options), _options(a.mkfs_options,
                                                                       a.mount_options)
    by_name = {m.name: m for m in judged}
    checks = []
    for rule, claim in claims:
        have = [o for o in mine if o.startswith(claim.option)
                and (rule, claim) in closest_claims(claims, o)]
        if not have or any(o.startswith(claim.option) for o in theirs):
            continue
        m = by_name.get(claim.counter)
        if m is None:
            checks.append(MechanismCheck(option=have[0], rule=rule, counter=claim.counter,
                                         expect=claim.expect, seen="not measured"))
            continue
        lo, hi = m.ci
        below, above = hi < 1.0, lo > 1.0
        wanted, other = (below, above) if claim.expect == "less" else (above, below)
        seen = "seen" if wanted else "opposite" if other else "not seen"
        if m.verdict == "inconclusive" and m.ratio == 0.0:  # B none, before the test shows it
            seen = "not seen"
        checks.append(MechanismCheck(option=have[0], rule=rule, counter=claim.counter,
                                     expect=claim.expect, seen=seen, ratio=m.ratio,
                                     ci=list(m.ci)))
    return checks
