"""Rule examples made concrete: the device, the workload and the host an example describes, and
whether a proposal's decision matches what the example expects. Used by the tests (every example
of the rule book is run) and by `xfs-advisor explain`."""

from __future__ import annotations

from advisor.models.device import Device, DeviceKind, Fact, MdInfo, StripeGeometry, Usage
from advisor.models.environment import Environment
from advisor.models.proposal import Proposal
from advisor.models.rule import Rule, RuleExample
from advisor.models.units import parse_size
from advisor.models.workload import Workload


def example_device(example: RuleExample) -> Device:
    d = example.device
    size = parse_size(d.size)
    stripe = StripeGeometry()
    if d.stripe_unit and d.data_disks:
        su = parse_size(d.stripe_unit)
        stripe = StripeGeometry(sunit_bytes=su, swidth_bytes=su * d.data_disks,
                                data_disks=d.data_disks, source="md0 (the example's RAID)",
                                used_by_mkfs=d.stripe_hidden_by is None,
                                ignored_reason=None if d.stripe_hidden_by is None else
                                f"{d.stripe_hidden_by} does not report the geometry of md0")
    facts = {"size_bytes": size, "logical_sector": d.logical_sector,
             "physical_sector": d.physical_sector, "rotational": d.rotational,
             "write_cache": d.write_cache, "fua": d.fua, "storage_hint": d.storage_hint,
             "dax": d.dax, "partition_start": d.partition_start, "thin": d.thin,
             "discard_granularity": d.discard_granularity, "discard_below": d.discard_below,
             "read_only": d.read_only, "zoned": d.zoned,
             "alignment_offset": d.alignment_offset or None}
    if d.discard_below:
        facts["discard_max_bytes"] = 0
    name = d.stripe_hidden_by or "sdx"
    kind: DeviceKind = "disk"
    dm_kind = d.dm_kind or ("lvm" if d.stripe_hidden_by else None)
    if d.partition_start is not None:
        name, kind = "sdx1", "part"
    elif dm_kind:
        kind = "dm"
    signatures: list[Fact[str]] = [Fact(value=d.signature, source="blkid",
                                        raw=f"TYPE={d.signature}")] \
        if d.signature else []
    usage = Usage(mountpoints=[d.mounted_on] if d.mounted_on else [], swap=d.swap,
                  signatures=signatures, probed=True, loops=list(d.loops),
                  fstype=Fact(value=d.signature, source="blkid") if d.signature else Fact())
    md = None
    if d.md_level:
        name, kind = "md0", "md"
        facts["storage_hint"] = d.storage_hint or "md-raid"
        md = MdInfo(level=Fact(value=d.md_level, source="example"))
    return Device(name=name if kind in ("part", "md") else "sdx", display_name=name,
                  path=f"/dev/{name}", kind=kind, dm_kind=dm_kind, stripe=stripe, md=md,
                  transport=d.transport,
                  children=[*d.held_by, *(f"sdx{i + 1}" for i in range(d.partitions))],
                  holders=list(d.held_by), usage=usage,
                  **{k: Fact(value=v, source="example") for k, v in facts.items()
                     if v is not None})


def example_workload(example: RuleExample) -> Workload:
    return Workload.model_validate(example.answers)


def example_env(example: RuleExample, lts_configs: dict[str, str]) -> Environment:
    e = example.env
    return Environment(xfsprogs_version=e.xfsprogs, kernel=e.kernel,
                       memory_bytes=parse_size(e.memory), cpu_count=4, lts_configs=lts_configs,
                       page_size=e.page_size)


def mismatches(rule: Rule, example: RuleExample, proposal: Proposal) -> list[str]:
    """What in the proposal differs from what the example expects of `rule` (empty: it holds)."""
    want = example.expect
    problems: list[str] = []
    if want.warning is not None:
        mine = [w.message for w in proposal.warnings if w.rule == rule.id]
        if not any(want.warning in m for m in mine):
            problems.append(f"no warning of {rule.id} says {want.warning!r} (it says {mine})")
    if want.changed is None and want.options is None and want.reason is None:
        return problems
    if rule.setting is None:  # the policy: every setting in the example keeps its default
        changed = [d.setting for d in proposal.decisions if d.changed]
        if want.changed is False and changed:
            problems.append(f"settings changed: {', '.join(changed)}")
        return problems
    decision = next((d for d in proposal.decisions if d.setting == rule.setting), None)
    if decision is None:
        return [*problems, f"no decision for {rule.setting}"]
    if want.changed is not None and decision.changed != want.changed:
        problems.append(f"{rule.setting}: changed={decision.changed}, expected {want.changed}"
                        f" ({decision.value}: {decision.reason})")
    if want.options is not None:
        if decision.options != want.options:
            problems.append(f"{rule.setting}: options {decision.options}, expected "
                            f"{want.options} ({decision.reason})")
        elif decision.rule != rule.id:
            problems.append(f"{rule.setting} was decided by {decision.rule}, not {rule.id}")
    if want.reason is not None and want.reason not in decision.reason:
        problems.append(f"{rule.setting}: reason {decision.reason!r} lacks {want.reason!r}")
    return problems
