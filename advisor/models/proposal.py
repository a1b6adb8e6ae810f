"""The advisor's answer: an mkfs.xfs command, mount options and an fstab line, every choice
explained. A contract (`xfs-advisor --json`): fields may be added, never renamed."""

# No `from __future__ import annotations` here: pydantic then reads the models' annotations as
# the objects they are, instead of evaluating each from its text (ForwardRef) as a class is built.

from typing import Any

from pydantic import Field

from advisor.models.base import Model
from advisor.models.device import Device
from advisor.models.environment import Environment
from advisor.models.workload import Workload


class Alternative(Model):
    """A value another rule wanted for the same setting, and why it lost."""

    rule: str
    """The rule that wanted it."""
    value: str
    """What it wanted."""
    reason: str
    """Its own reason."""


class Decision(Model):
    """One decision per setting: a changed value, or "keep the default" said out loud."""

    setting: str
    """The setting (`-n size`, `-d agcount/agsize`, `mount atime`...)."""
    value: str
    """The value chosen (`64k`, `agcount=32`), or `default` when the default is kept."""
    default: str
    """What mkfs.xfs or the kernel would use on its own."""
    changed: bool
    """True when the proposal sets something (an option appears in the command or fstab)."""
    rule: str
    """Id of the rule that decided (see `xfs-advisor explain RULE`)."""
    reason: str
    """Why, in a sentence or two, with the numbers that drove it."""
    source: str
    """Where the advice comes from (`guide 2.1.1`, `mkfs.xfs(8) -d agcount`,
    `xfs(5): swalloc`...)."""
    changeable_later: str
    """`no (mkfs)`, `yes (remount)`, `yes (mount)`..."""
    options: list[str] = Field(default_factory=list)
    """What it adds: mkfs fragments like `-n size=64k` or mount options like `noatime`."""
    resolution: str | None = None
    """When several rules wanted this setting: how the engine chose."""
    alternatives: list[Alternative] = Field(default_factory=list)
    """The values that lost."""


class Question(Model):
    """An answer not given that would change a setting the proposal keeps at its default: the
    answer decides it, so it is asked rather than guessed."""

    answer: str
    """The workload answer to give (its key in a workload file, `access`...)."""
    setting: str
    """The setting it would change (`-n size`...)."""
    rule: str
    """Id of the rule that asks."""
    message: str
    """What each possible answer would give."""


class ProposalWarning(Model):
    """Something the user must know before running the command."""

    rule: str
    """Id of the rule that raised it."""
    message: str
    """One or two sentences."""


class MkfsGeometry(Model):
    """What `mkfs.xfs -N` reports, parsed (blocks are filesystem blocks unless named bytes)."""

    block_size: int
    """Data block size in bytes (bsize)."""
    sector_size: int
    """Metadata sector size in bytes (sectsz)."""
    inode_size: int
    """isize in bytes."""
    agcount: int
    """Number of allocation groups."""
    agsize_blocks: int
    """Allocation group size in blocks."""
    data_blocks: int
    """Data section size in blocks."""
    sunit_blocks: int
    """Data stripe unit in blocks (0: none)."""
    swidth_blocks: int
    """Data stripe width in blocks (0: none)."""
    naming_block_size: int
    """Directory block size in bytes (-n size)."""
    log_blocks: int
    """Internal log size in blocks."""
    log_sunit_blocks: int
    """Log stripe unit in blocks (0: none)."""
    imaxpct: int | None = None
    """Most of the space inodes may take, in percent (0: no limit; None: not reported)."""
    features: dict[str, int] = Field(default_factory=dict)
    """On/off features: crc, finobt, sparse, rmapbt, reflink, bigtime, inobtcount, nrext64..."""
    mkfs_warnings: list[str] = Field(default_factory=list)
    """What mkfs.xfs printed on stderr (warnings that did not stop it)."""

    @property
    def agsize_bytes(self) -> int:
        return self.agsize_blocks * self.block_size

    @property
    def log_bytes(self) -> int:
        return self.log_blocks * self.block_size

    @property
    def size_bytes(self) -> int:
        return self.data_blocks * self.block_size


class Check(Model):
    """How the proposal was proven valid before it was shown."""

    argv: list[str]
    """The dry run: `mkfs.xfs -N -f OPTIONS` on a sparse file standing in for the device."""
    method: str
    """`sparse file` or `mkfs -d file,size` (when the temp filesystem cannot hold the size)."""
    emulated: list[str] = Field(default_factory=list)
    """Options added only to the dry run so the file looks like the device (sector, stripe)."""
    geometry: MkfsGeometry
    """What mkfs.xfs would build with the proposal."""


class Proposal(Model):
    """The proposal for one device and one workload."""

    mkfs_argv: list[str]
    """`["mkfs.xfs", OPTIONS..., "/dev/DEV"]`: the command to run (never with -f)."""
    mkfs_options: list[str]
    """The options alone, without mkfs.xfs and the device (side B of the A/B validation)."""
    mkfs_command: str
    """mkfs_argv as one shell line."""
    mount_options: list[str]
    """Mount options beyond the defaults (empty: `defaults`)."""
    fstab: str
    """The fstab line; UUID=<uuid-after-mkfs> stands for the UUID mkfs.xfs will print."""
    decisions: list[Decision]
    """One per setting, in a fixed order."""
    warnings: list[ProposalWarning]
    """Things to know before running it."""
    questions: list[Question] = Field(default_factory=list)
    """Answers not given that would change a setting kept at its default (empty: no answer
    missing decides anything)."""
    mkfs_defaults: MkfsGeometry | None
    """What `mkfs.xfs -N` chooses on its own for this device (side A)."""
    check: Check | None = None
    """The dry run that proved the proposal valid (null only when checking was turned off)."""
    rules_dirs: list[str] = Field(default_factory=list)
    """Rule directories used, in order (later ones add or override rules)."""
    disabled_rules: dict[str, str] = Field(default_factory=dict)
    """Rules a site switched off (`enabled = false`): id -> why, and the file that says so."""


class ProposalDocument(Model):
    """What `xfs-advisor --json --device DEV` prints."""

    schema_version: int = 1
    """Version of this document's shape."""
    device: Device
    """The device facts the proposal is based on."""
    workload: Workload
    """The answers (null: not answered)."""
    environment: Environment
    """Tool versions and resources taken into account."""
    proposal: Proposal
    """The proposal."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Run-specific diagnostics, empty unless asked for: `timings_ms` (each phase's wall time)
    with --timings."""
