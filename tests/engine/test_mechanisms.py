"""Every option a rule can set names the counters that show what it does (a [[mechanism]] entry,
checked by `validate` against advisor.bench.counters), or is listed here with the reason no
counter can: the list can only shrink. What a rule can set is what its examples expect."""

from __future__ import annotations

import pytest

from advisor.bench import counters
from advisor.bench.plan import Plan, primaries
from advisor.engine.rulebook import RuleBook
from advisor.models.bench import SideConfig
from advisor.models.rule import MechanismClaim
from advisor.models.workload import Workload
from advisor.system.argv import BARE_FLAGS, pairs_only

#: Options no counter of a validation round can show, by option prefix, and why.
NO_COUNTER = {
    "-i maxpct=": "a ceiling on the space inodes may take: no work per operation differs until "
                  "a run fills it",
    "-d cowextsize=": "the copy-on-write extent size hint acts on reflinked files; the rounds "
                      "make no reflink copies",
    "-m reflink=": "reflink is a feature bit (kernel-compat, dax-reflink): the rounds make no "
                   "reflink copies",
    "-m bigtime=": "a feature bit chosen for the kernel that must mount it: on-disk format, "
                   "not work per operation",
    "-m crc=": "a feature bit chosen for the kernel that must mount it",
    "-m finobt=": "a feature bit chosen for the kernel that must mount it",
    "-m inobtcount=": "a feature bit chosen for the kernel that must mount it",
    "-i nrext64=": "a feature bit chosen for the kernel that must mount it",
    "-i sparse=": "a feature bit chosen for the kernel that must mount it",
    "-l logdev=": "an external log device: validate refuses options naming another device",
    "logdev=": "an external log device: validate refuses options naming another device",
    "dax": "DAX needs persistent memory, which neither a loop device nor a scratch disk has",
    "inode32": "where new inodes go: on a filesystem under 1 TiB (every validation's) inode32 "
               "and inode64 place them alike",
    "largeio": "changes the st_blksize stat reports; fio's jobs do not read it",
    "-K": "mkfs without discarding the device first: validate always formats with -K, so both "
          "sides run without the discard",
}


def _pieces(options: list[str]) -> list[str]:
    """`["-n", "size=64k"]` -> `["-n size=64k"]`; su and sw as one option, named by su (as
    validate judges them, advisor.bench.attribute.options); mount options as they are."""
    if options and options[0].startswith("-"):
        pairs = pairs_only(options)
        return [f"{flag} {part}" for flag, arg in zip(pairs[::2], pairs[1::2], strict=True)
                for part in arg.split(",")
                if not (part.startswith("sw=") and "su=" in arg)] + [
                    o for o in options if o in BARE_FLAGS]
    return list(options)


def _claims(book: RuleBook) -> list[tuple[str, MechanismClaim]]:
    return [(r.id, c) for r in book.all() for c in r.mechanism]


def test_every_option_a_rule_can_set_names_its_counters(book: RuleBook) -> None:
    claims = _claims(book)
    known = {m.name for m in counters.MECHANISMS}
    assert all(c.counter in known for _, c in claims), "a claim names no counter of a round"
    unnamed, excused = [], set()
    for rule in book.all():
        for example in rule.examples:
            for piece in _pieces(example.expect.options or []):
                if counters.closest_claims(claims, piece):
                    continue
                reasons = [k for k in NO_COUNTER if piece.startswith(k)]
                excused.update(reasons)
                if not reasons:
                    unnamed.append(f"{rule.id}: {piece}")
    assert not unnamed, f"no [[mechanism]] names a counter for: {unnamed}"
    assert excused == set(NO_COUNTER), f"listed but never set: {set(NO_COUNTER) - excused}"


@pytest.mark.parametrize(("mkfs", "counter", "expect"), [
    (["-l", "su=256k"], "log_kib_per_fsync", "more"),  # padded up to 256 KiB
    (["-l", "su=4k"], "log_kib_per_fsync", "less"),  # one block: nothing padded
    (["-i", "size=1024"], "device_write_kib_per_1k_dirops", "more"),
])
def test_an_option_is_decided_by_its_own_counter(book: RuleBook, mkfs: list[str], counter: str,
                                                 expect: str) -> None:
    """The run's primary metric for the option is the counter its closest claim names, and the
    report checks that claim (no "no rule names a counter that shows its mechanism")."""
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B", mkfs_options=mkfs),
                workload=Workload(), device_bytes=1 << 30, claims=_claims(book))
    assert [(p.name, p.rule is not None) for p in primaries(plan)] == [(counter, True)]
    checks = counters.check_claims(plan.claims, plan.a, plan.b, [])
    assert [(c.counter, c.expect, c.seen) for c in checks] == [(counter, expect, "not measured")]


def test_directory_block_size_is_decided_by_its_allocations_and_checked_for_its_log_cost(
        book: RuleBook) -> None:
    """-n size= has two claims: the allocations per directory operation (an exact count, the
    primary metric, claimed first) and the log KiB per directory operation (its cost, checked
    beside it)."""
    plan = Plan(a=SideConfig(label="A"),
                b=SideConfig(label="B", mkfs_options=["-n", "size=64k"]),
                workload=Workload(), device_bytes=1 << 30, claims=_claims(book))
    assert [(p.name, p.rule) for p in primaries(plan)] == [
        ("extent_allocs_per_1k_dirops", "dir-block-size")]
    checks = counters.check_claims(plan.claims, plan.a, plan.b, [])
    assert [(c.counter, c.expect) for c in checks] == [
        ("extent_allocs_per_1k_dirops", "less"), ("log_kib_per_1k_dirops", "more")]
