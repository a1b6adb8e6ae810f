"""`xfs-advisor fleet DIR --json`: every host's devices, findings and proposals, from the results
the Ansible role (ansible/) stored on the controller, one folder per host."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import Model


class FleetProposal(Model):
    """What the advisor proposes for a device, regenerated from the host's capture with the
    rules of the machine that made the report."""

    mkfs_command: str
    mount_options: list[str]
    fstab: str
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


class FleetShape(Model):
    """Hosts that share a hardware shape, and whether they get the same proposals."""

    shape: str
    devices: str
    """The shape in words: each device's kind, media, size and stripe."""
    hosts: list[str]
    same_proposal: bool
    """Every host of the shape gets the same proposals (mkfs.xfs command and mount options, device
    by device)."""


class FleetDocument(Model):
    """The fleet report."""

    schema_version: int = 1
    results_dir: str
    rules_dirs: list[str]
    hosts: list[FleetHost]
    shapes: list[FleetShape]
    counts: dict[str, int]
    """hosts, ok, failed."""
