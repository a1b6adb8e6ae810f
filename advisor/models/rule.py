"""A rule of the rule book: one TOML file under rules/, validated by this model.

Thresholds and tables live in `params` (checked against the decider's own parameter model); what
data cannot express is the named Python function in `decide` (advisor.engine.registry).
"""

# No `from __future__ import annotations` here: pydantic then reads the models' annotations as
# the objects they are, instead of evaluating each from its text (ForwardRef) as a class is built.

from typing import Any, Literal

from pydantic import Field

from advisor.models.base import Model
from advisor.models.workload import StorageKind

RuleKind = Literal["policy", "mkfs", "mount", "device", "obsolete"]


class Obsolete(Model):
    """For advice that is obsolete: what it looked like and what is true today."""

    matches: list[str] = Field(min_length=1)
    """Option texts that are this advice (`nobarrier`, `-d unwritten=0`, `crc=0`): never emitted."""
    since: str
    """When it stopped being useful or valid (a kernel or xfsprogs version, or a year)."""
    today: str
    """What happens today instead, in one or two sentences."""


class ExampleDevice(Model):
    """The device of a rule example: a disk with these facts (everything else as a plain disk)."""

    size: str = Field(min_length=1)
    """Size with a unit (`100GiB`, `4TiB`)."""
    rotational: bool | None = None
    write_cache: Literal["write back", "write through"] | None = None
    fua: bool | None = None
    logical_sector: int = 512
    physical_sector: int = 512
    stripe_unit: str | None = None
    """A stripe the device reports and mkfs.xfs uses (md RAID): the chunk, with a unit."""
    data_disks: int | None = Field(default=None, ge=1)
    """With stripe_unit: the data disks of that stripe."""
    stripe_hidden_by: str | None = None
    """With stripe_unit: the stripe is an md array's that this dm device (LVM, dm-crypt) above
    it does not report, so mkfs.xfs cannot see it."""
    partitions: int = Field(default=0, ge=0)
    """Partitions already on the disk."""
    mounted_on: str | None = None
    """Where the disk is mounted (mountinfo)."""
    swap: bool = False
    """In use as swap (/proc/swaps)."""
    held_by: list[str] = Field(default_factory=list)
    """Devices built on the whole disk (LVM, md, dm-crypt, multipath: holders/)."""
    loops: list[str] = Field(default_factory=list)
    """Loop devices bound over the disk (the kernel's loop status: no holders/ entry)."""
    signature: str | None = None
    """A filesystem libblkid finds on it (`ext4`)."""
    read_only: bool | None = None
    zoned: Literal["none", "host-aware"] | None = None
    """queue/zoned (a host-managed device gets no proposal at all)."""
    alignment_offset: int = Field(default=0, ge=0)
    """Bytes the disk starts off its physical alignment (sysfs alignment_offset)."""
    storage_hint: StorageKind | None = None
    """What the device's own facts say the storage is (a RAID controller's driver, virtio...)."""
    md_level: Literal["raid0", "raid1", "raid4", "raid5", "raid6", "raid10", "linear"] | None \
        = None
    """The device is an md array of this level (md/level), with `data_disks` members holding
    data when a stripe is given."""
    # ---- below the filesystem ----
    dax: bool | None = None
    """queue/dax: persistent memory that can be mapped directly (fsdax)."""
    partition_start: int | None = Field(default=None, ge=0)
    """The device is a partition starting at this byte (sdx1)."""
    dm_kind: Literal["lvm", "crypt"] | None = None
    """The device is a dm device of this kind (with stripe_hidden_by: lvm unless given)."""
    thin: Literal["dm-thin", "lbpme"] | None = None
    """Thin provisioning under the device."""
    transport: Literal["fc", "iscsi", "sata", "nvme", "scsi"] | None = None
    """The bus the disk hangs off (fc and iscsi: a SAN LUN)."""
    discard_granularity: int | None = Field(default=None, ge=0)
    """queue/discard_granularity (0: no discard)."""
    discard_below: int | None = Field(default=None, ge=1)
    """A dm device that drops discards the device below takes (its discard_max_bytes)."""


class ExampleEnv(Model):
    """The host of a rule example (defaults: xfsprogs 6.1.0, kernel 6.1, 16 GiB)."""

    xfsprogs: str = "6.1.0"
    kernel: str = "6.1.0-18-amd64"
    memory: str = "16GiB"
    page_size: int = 4096
    """The kernel's page size in bytes (it caps the block size before Linux 6.12)."""


class ExampleExpect(Model):
    """What the rule decides in the example. Every field given must hold."""

    changed: bool | None = None
    """True: the rule changes its setting; False: the setting keeps its default."""
    options: list[str] | None = None
    """The exact options of the decision (`["-d", "agsize=80g"]`, `["noatime"]`)."""
    reason: str | None = None
    """Words the decision's reason contains."""
    warning: str | None = None
    """Words one of the rule's warnings contains."""


class RuleExample(Model):
    """One worked example of a rule, run by the tests exactly as written here, and shown by
    `xfs-advisor explain` and RULES.md."""

    says: str = Field(min_length=3)
    """The example in words, as RULES.md and `explain` show it."""
    device: ExampleDevice
    answers: dict[str, Any] = Field(default_factory=dict)
    """Workload answers, as in a workload file."""
    env: ExampleEnv = Field(default_factory=ExampleEnv)
    expect: ExampleExpect


class MechanismClaim(Model):
    """What a rule's option does that `validate`'s counters can see (advisor.bench.counters)."""

    option: str = Field(min_length=2)
    """The option, as the start of a mount option or of a `FLAG SUBOPTION` mkfs pair
    (`logbsize=`, `-l su=`): the claim is checked when B has it and A does not."""
    counter: str = Field(pattern=r"^[a-z0-9_]+$")
    """The work-per-operation figure that shows it (e.g. `log_writes_per_1k_dirops`)."""
    expect: Literal["less", "more"]
    """Whether B should do less or more of that work than A."""


class RuleSwitch(Model):
    """A site file that switches a rule off: `id = "..."`, `enabled = false` and why."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    """The rule switched off (built in, or from an earlier rules folder)."""
    enabled: Literal[False]
    why: str = Field(min_length=3)
    """Why this site does without it (shown in the proposal)."""


class Rule(Model):
    """One rule: a decision about one setting, a device warning, or a piece of obsolete advice."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    """Stable identifier (kebab-case), used in decisions, warnings and `xfs-advisor explain ID`."""
    title: str = Field(min_length=3)
    """One line saying what the rule does."""
    kind: RuleKind
    """policy (the engine's stance), mkfs, mount, device (warnings only) or obsolete."""
    source: str = Field(min_length=3)
    """Where the rule comes from, as a reader can look it up: `guide 2.1.1` (Chinner 2014), a
    man page (`xfs(5): swalloc`), kernel documentation, an xfsprogs file or a commit."""
    setting: str | None = None
    """The setting it decides (`-n size`, `mount logbsize`...), one of the engine's settings."""
    decide: str | None = None
    """Name of the registered function that applies it (advisor.engine.rules; none: data only)."""
    priority: int = Field(default=50, ge=0, le=100)
    """When two rules want different values for one setting, the higher priority wins."""
    keep_wins: bool = False
    """When this rule keeps the default, no change of a lower-priority rule overrides it (a
    site's "never change this": see the `keep_default` function)."""
    changes: str
    """What it changes, in words."""
    why: str
    """Why: the mechanism behind the advice."""
    when_not: str
    """When not to follow it."""
    example: str | None = None
    """An example in words only (site rules may use it; the rule book's own rules give
    `examples`, which the tests run)."""
    examples: list[RuleExample] = Field(default_factory=list)
    """Worked examples: device, answers and the expected decision; every one is run in a test."""
    references: list[str] = Field(default_factory=list)
    """Documents backing the rule (guide sections, man pages, kernel docs, commits)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Thresholds and tables, validated against the decider's parameter model."""
    obsolete: Obsolete | None = None
    """For kind = obsolete: the advice and what is true today."""
    mechanism: list[MechanismClaim] = Field(default_factory=list)
    """What `validate` can see this rule's option do, checked after every run that has it."""
