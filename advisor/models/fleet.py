"""`xfs-advisor fleet DIR --json`: every host's devices, findings and proposals, from the results
the Ansible role (ansible/) stored on the controller, one folder per host."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import Model


class FleetReason(Model):
    """One setting the proposal changes from mkfs.xfs's or mount's default, and why."""

    setting: str
    value: str
    default: str
    rule: str
    reason: str


class FleetWarning(Model):
    """A warning the proposal carries (a mounted partition on the disk, a setting it cannot make
    alone...)."""

    rule: str
    message: str


class FleetFinding(Model):
    """One audit finding of a host, with the rule that made it."""

    rule: str
    """Rule id (`xfs-advisor explain ID`) or audit check (`audit-v4`...)."""
    severity: str
    """breaks, will-break, performance or info (with --kernel: for that kernel)."""
    title: str
    due_kernel: str | None = None
    """For will-break: the first kernel that may refuse it (null: due on a date, or none)."""
    device: str | None
    """The device holding the filesystem (null: an fstab line whose device is not there)."""
    mountpoint: str | None


class FleetObservation(Model):
    """One finding of the host's short `xfs-advisor observe` (its live filesystem under its
    own load), made again here from the figures the host measured."""

    rule: str
    """The rule it concerns (`xfs-advisor explain RULE`)."""
    mountpoint: str
    """The filesystem watched (the host's text)."""
    message: str
    """What was seen and what the rule says about it."""


class FleetObserveRule(Model):
    """One rule's observe findings across the fleet."""

    rule: str
    hosts: list[str]
    findings: int
    """Findings in all (one per filesystem watched)."""
    example: str
    """The message of its first finding."""


class FleetRule(Model):
    """One rule's findings across the fleet: the answer to "which hosts does it hit?"."""

    rule: str
    severity: str
    title: str
    """The title of its first finding."""
    hosts: list[str]
    findings: int
    """Findings in all (a host may have several: one per filesystem or fstab line)."""


class FleetProposal(Model):
    """What the advisor proposes for a device, regenerated from the host's capture with the
    rules of the machine that made the report."""

    mkfs_command: str
    mount_options: list[str]
    fstab: str
    reasons: list[FleetReason] = Field(default_factory=list)
    """The settings that differ from the defaults, each with its rule and reason (empty: the
    defaults are kept)."""
    warnings: list[FleetWarning] = Field(default_factory=list)
    same_as_host: bool | None = None
    """Whether the host's own proposal (made by the tool installed there) was the same mkfs.xfs
    command: false after a rule change, or when the host runs another version. None: the host
    made none."""


class FleetDevice(Model):
    """One device of a host: a top-level device, or one named for a proposal."""

    name: str
    kind: str
    media: str
    """rot, ssd, raid, md, virt, cloud or ? (as `xfs-advisor devices` shows it)."""
    size_bytes: int | None
    sunit_bytes: int | None
    swidth_bytes: int | None
    stripe_source: str
    findings: dict[str, int]
    """Audit findings on filesystems of this device (or of its partitions), by severity."""
    named: bool
    """Named in the host's xfs_advisor_devices: a proposal was asked for."""
    proposal: FleetProposal | None = None
    proposal_error: str | None = None


class FleetHost(Model):
    """One host: complete, or failed with the error that stopped it."""

    host: str
    status: Literal["ok", "failed"]
    error: str | None = None
    collected_at: str | None = None
    """When the host's collection started, by the host's clock (UTC, ISO 8601,
    `2026-01-31T12:00:00Z`); null: not known (a host that failed before it collected)."""
    kernel: str | None = None
    xfsprogs: str | None = None
    """The host's xfsprogs, as its audit read it."""
    tool_version: str | None = None
    shape: str | None = None
    """The host's hardware shape: hosts with the same one have the same devices (kind, media,
    size, sectors, stripe)."""
    devices: list[FleetDevice] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    """The host's audit findings by severity (fstab lines without a device included)."""
    findings: list[FleetFinding] = Field(default_factory=list)
    """Every audit finding, with its rule id and severity."""
    observed_seconds: float | None = None
    """How long the host's `observe` watched (null: not asked, xfs_advisor_observe_for 0)."""
    observe_findings: list[FleetObservation] = Field(default_factory=list)
    """The findings of that observation, per filesystem watched."""
    observe_error: str | None = None
    """Why the observation gave nothing (it failed on the host, or its output is unusable)."""


class FleetShape(Model):
    """Hosts that share a hardware shape, and whether they get the same proposals."""

    shape: str
    devices: str
    """The shape in words: each device's kind, media, size and stripe."""
    hosts: list[str]
    same_proposal: bool
    """Every host of the shape gets the same proposals (mkfs.xfs command and mount options, device
    by device)."""


class FleetRuleChange(Model):
    """One rule whose findings came to or left hosts since the previous collection."""

    rule: str
    severity: str
    title: str
    gained: list[str]
    """Hosts with a finding of this rule now and none before."""
    cleared: list[str]
    """Hosts with none now and one before."""


class FleetProposalChange(Model):
    """A device whose proposal is not what it was in the previous collection."""

    host: str
    device: str
    before: str | None
    """The mkfs.xfs command and mount options (or `none: why`); null: no proposal before."""
    after: str | None
    """The same, now; null: no proposal now."""


class FleetSince(Model):
    """What changed since a previous collection (`fleet --since OLD`). Findings and proposals are
    compared on hosts complete in both; a host that failed in either is in failed or
    recovered instead."""

    previous: str
    """OLD as given: a previous results folder or a saved `fleet --json` file."""
    added: list[str]
    """Hosts in this collection and not in the previous one."""
    removed: list[str]
    """Hosts in the previous collection and not in this one."""
    failed: list[str]
    """Hosts that failed now and were complete before."""
    recovered: list[str]
    """Hosts complete now that failed before."""
    rules: list[FleetRuleChange]
    """By rule id, worst severity first."""
    proposals: list[FleetProposalChange]


class FleetDocument(Model):
    """The fleet report."""

    schema_version: int = 1
    results_dir: str
    rules_dirs: list[str]
    hosts: list[FleetHost]
    shapes: list[FleetShape]
    counts: dict[str, int]
    """hosts, ok, failed."""
    by_rule: list[FleetRule] = Field(default_factory=list)
    """Findings grouped by rule id, worst severity first, then most hosts."""
    observe_by_rule: list[FleetObserveRule] = Field(default_factory=list)
    """The hosts' observe findings grouped by rule id, most hosts first."""
    fail_on: str | None = None
    """The --fail-on severity asked (null: none)."""
    target_kernel: str | None = None
    """--kernel: the kernel the hosts' findings were judged for as well (a will-break finding
    due by it counts as breaks); null: each host's running kernel only."""
    failing_hosts: list[str] = Field(default_factory=list)
    """Hosts with a finding at or above fail_on."""
    since: FleetSince | None = None
    """What changed since a previous collection (--since; null: not asked)."""
