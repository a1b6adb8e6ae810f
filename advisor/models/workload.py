"""Workload answers: what the device cannot tell. A contract: the same keys in TOML, JSON and as
command-line flags; unknown keys are an error; every answer is optional (null = "don't know")."""

# No `from __future__ import annotations` here: pydantic then reads the models' annotations as
# the objects they are, instead of evaluating each from its text (ForwardRef) as a class is built.

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from advisor.models.base import Model
from advisor.models.units import ByteSize, parse_count, parse_rate

Access = Literal["read-heavy", "write-heavy", "mixed"]
#: What the storage under the device is, when the device cannot say (rotational=1 is reported
#: by single disks, hardware RAID LUNs, virtual disks and loop devices alike).
StorageKind = Literal["single-disk", "hardware-raid", "md-raid", "ssd", "virtual-disk",
                      "cloud-volume", "unknown"]
#: What the concurrent writers do: create/delete/rename files and set xattrs (space management,
#: guide 2.1.2), write into files that already exist (databases, VM images), or both.
WriterActivity = Literal["metadata", "data", "both"]
#: How files get their data (streaming and extent size hints): streamed start to end
#: once, sparse files filled by writes scattered over them, files grown at the end a few KiB at a
#: time with fsync and rewritten in place, or a mix.
WritePattern = Literal["sequential", "random", "appending", "mixed"]


#: Distribution targets: name -> the family and version the kernel-compat rule's table knows.
_DISTRO = re.compile(r"(rhel|redhat|alma|almalinux|rocky|centos|oracle|ol|ubuntu|debian|sles)"
                     r"[\s_-]?(\d{1,2}(?:\.04)?)")
_RHEL_CLONES = {"redhat", "alma", "almalinux", "rocky", "centos", "oracle", "ol"}


#: The oldest upstream kernel that mounts a V5 filesystem as today's mkfs.xfs makes it: CRCs
#: always come with the directory entry file type ("Directory ftype field always enabled on CRC
#: enabled filesystems"), an incompatible feature merged for Linux 3.12 (xfs-for-linus-v3.12-rc1,
#: "add directory entry file type support"; 3.10 and 3.11 refuse to mount it).
V5_MOUNTS_FROM = (3, 12)


def mount_target(text: str) -> str | None:
    """A kernel target as the rules read it: "X.Y" for a kernel version or an upstream `uname
    -r`, "rhelN" for an Enterprise Linux kernel (`...elN...`) or clone, "ubuntuYY.04",
    "debianN", "slesN"; None when it is none of these."""
    text = text.strip()
    if re.fullmatch(r"[2-9]\.\d{1,2}", text):
        return text
    uname = re.fullmatch(r"([2-9]\.\d{1,2})\.\d+(?:-([A-Za-z0-9._+~-]+))?", text)
    if uname:
        el = re.search(r"(?:^|[._])el(\d+)(?:[._]|$)", uname[2] or "")
        return f"rhel{el[1]}" if el else uname[1]
    distro = _DISTRO.fullmatch(text.lower())
    if distro:
        family = "rhel" if distro[1] in _RHEL_CLONES else distro[1]
        return f"{family}{distro[2]}"
    return None


def _not_bool(value: Any) -> Any:
    """`largest_directory_entries = true` is a mistake, not 1: numbers refuse true/false (flags and
    the TUI still give "123" as text, which the number fields accept)."""
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


def _count(value: Any) -> Any:
    """Counts as people write them: 5000000, "5,000,000", "5M", "1e6" (advisor.models.units)."""
    return None if value is None else parse_count(value)


def _rate(value: Any) -> Any:
    """A rate written like a count ("2k", "1e3"), fractions allowed."""
    return None if value is None else parse_rate(value)


#: Widest stripe mkfs.xfs accepts, in bytes (it keeps the width in a signed 32-bit integer).
MAX_STRIPE_WIDTH = (1 << 31) - 1


class Storage(Model):
    """What the device hides: hardware RAID geometry and a protected controller cache."""

    # ---- below the filesystem: an external log ----
    log_device: str | None = Field(default=None, max_length=4095)
    """A faster device available for the XFS log, as its /dev path (an SSD or NVMe partition, a
    mirrored pair): fsync-heavy work on disk RAID may put the log there. The filesystem cannot
    be mounted or repaired without it, so it must be as safe as the data (mirrored)."""
    # ---- end: external log ----

    raid_stripe_unit: ByteSize | None = Field(default=None, gt=0, le=1 << 30)
    """Hardware RAID stripe unit (chunk) in bytes or a size like "256KiB"."""
    raid_data_disks: int | None = Field(default=None, ge=1, le=1024)
    """Data disks per stripe in the hardware RAID (RAID6 of 10 disks: 8)."""
    nonvolatile_write_cache: bool | None = None
    """The controller or drive cache is battery- or flash-backed (survives power loss)."""
    kind: StorageKind | None = None
    """single-disk, hardware-raid, md-raid, ssd, virtual-disk, cloud-volume or unknown (AG count,
    fsync cost); the device's own hint is shown as a fact when it has one."""

    # ---- external log ----
    @field_validator("log_device")
    @classmethod
    def _device_path(cls, v: str | None) -> str | None:
        if v is not None and (not re.fullmatch(r"/dev/[A-Za-z0-9._+:/-]+", v) or ".." in v):
            raise ValueError("must be a device path like /dev/nvme0n1p3 or "
                             "/dev/disk/by-id/NAME (letters, digits, . _ + : - /)")
        return v
    # ---- end: external log ----

    _counts = field_validator("raid_data_disks", mode="before")(_count)

    @model_validator(mode="after")
    def _geometry_pairs(self) -> "Storage":
        if (self.raid_stripe_unit is None) != (self.raid_data_disks is None):
            raise ValueError("give raid_stripe_unit and raid_data_disks together")
        if self.raid_stripe_unit and self.raid_data_disks \
                and self.raid_stripe_unit * self.raid_data_disks > MAX_STRIPE_WIDTH:
            raise ValueError("the stripe width (raid_stripe_unit x raid_data_disks) must stay "
                             "under 2GiB, the most mkfs.xfs accepts")
        return self


class Workload(Model):
    """Answers about the workload. Missing means "don't know": the rules keep the default then."""

    largest_directory_entries: int | None = Field(default=None, ge=0, le=10**12)
    """Most entries any one directory will hold (drives the directory block size, -n size)."""
    access: Access | None = None
    """read-heavy, write-heavy or mixed (moves the directory-size thresholds)."""
    fsyncs_per_second: float | None = Field(default=None, ge=0, le=1e9, allow_inf_nan=False)
    """fsync/fdatasync calls per second on the whole filesystem (log stripe unit, logbsize)."""
    concurrent_writers: int | None = Field(default=None, ge=1, le=1_000_000)
    """Processes or threads modifying the filesystem at once (allocation groups, log size)."""
    writer_activity: WriterActivity | None = None
    """What those writers do: metadata (create/delete/rename files, set xattrs), data (write
    into existing files: databases, VM images) or both. Only metadata work needs more AGs and
    log."""
    median_file_size: ByteSize | None = None
    """Typical file size, in bytes or as "16KiB" (benchmark shape; streaming, extent size hints
    and inode space)."""
    xattr_bytes_per_file: int | None = Field(default=None, ge=0, le=1 << 30)
    """Extended-attribute bytes per file: SELinux, Samba, Ceph... (inode size)."""
    xattrs_per_file: int | None = Field(default=None, ge=0, le=1 << 20)
    """Extended attributes per file (each costs 3 bytes of inline space besides its name and
    value; without it the inode-size rule assumes one per 32 bytes and says the range)."""
    largest_xattr_value: ByteSize | None = Field(default=None, le=1 << 16)
    """Largest single xattr value in bytes (over 254 never goes inline)."""
    eventual_size: ByteSize | None = Field(default=None, gt=0)
    """Planned size after growth, in bytes or as "40TiB" (allocation group size)."""
    growth_factor: float | None = Field(default=None, ge=1, le=1000, allow_inf_nan=False)
    """Planned eventual size / initial size (alternative to eventual_size)."""
    atime_needed: bool | None = None
    """Something relies on access times (mail readers, tmp cleaners, HSM)."""
    nfs_32bit_clients: bool | None = None
    """32-bit NFS clients or 32-bit applications use the filesystem (inode32)."""
    mount_point: str | None = Field(default=None, max_length=4095)
    """Where it will be mounted (for the fstab line)."""
    must_mount_on_kernel: str | None = None
    """Oldest kernel that must mount it: "5.10", a `uname -r` like "4.18.0-513.el8", or a
    distribution: rhel7-9 (alma, rocky, centos, oracle alike), ubuntu18.04-24.04, debian10-12,
    sles12, sles15 (rescue media, an older distro)."""
    # ---- thin provisioning ----
    deleted_per_day: ByteSize | None = None
    """Data deleted (or replaced) per day, in bytes or as "50GiB": on thin-provisioned storage
    it decides between online discard and how often fstrim must run."""
    # ---- end: thin provisioning ----
    # -- streaming, extent size hints, quotas, inode space, rmapbt --
    write_pattern: WritePattern | None = None
    """How files get their data: sequential (streamed start to end once: backups, media, logs),
    random (sparse files filled by writes scattered over them: VM images), appending (grown at
    the end a few KiB at a time with fsync, then rewritten in place: database tables and
    journals) or mixed (swalloc, allocsize, largeio; extent size hints)."""
    reflink_clones: bool | None = None
    """Files are cloned with reflink (cp --reflink, VM snapshots, container layers) and the
    clones then written in place (copy-on-write extent size hint, -d cowextsize)."""
    per_tenant_quotas: bool | None = None
    """Directory trees (containers, tenants, projects) each need their own space limit (project
    quotas: the prjquota mount option)."""
    file_count: int | None = Field(default=None, ge=0, le=10**13)
    """Files and directories the filesystem will hold at its planned size (inode space, -i
    maxpct)."""
    online_scrub: bool | None = None
    """Metadata should be checkable (and, where the kernel allows, repairable) while mounted,
    with xfs_scrub (the reverse-mapping btree, -m rmapbt=1)."""
    storage: Storage = Field(default_factory=Storage)
    """What the device cannot tell about itself."""

    _numbers = field_validator("xattr_bytes_per_file", "growth_factor", mode="before")(_not_bool)
    _counts = field_validator("largest_directory_entries", "concurrent_writers", "file_count",
                              "xattrs_per_file", mode="before")(_count)
    _rates = field_validator("fsyncs_per_second", mode="before")(_rate)

    @field_validator("mount_point")
    @classmethod
    def _absolute(cls, v: str | None) -> str | None:
        if v is not None and (not v.startswith("/")
                              or any(c.isspace() or not c.isprintable() for c in v)):
            raise ValueError("must be an absolute path without spaces or control characters")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Workload":
        entries, files = self.largest_directory_entries, self.file_count
        if entries is not None and files is not None and entries > files:
            raise ValueError(
                f"largest_directory_entries ({entries:,}) is more than file_count ({files:,}): "
                "one directory cannot hold more entries than the filesystem holds files; "
                "correct one of them")
        count, size = self.xattrs_per_file, self.xattr_bytes_per_file
        if count is not None and size is not None and (count > size or (size and not count)):
            raise ValueError(
                f"xattrs_per_file ({count:,}) does not fit xattr_bytes_per_file ({size:,}): "
                "every attribute has a name of at least one byte, and bytes need at least one "
                "attribute; correct one of them")
        return self

    @field_validator("must_mount_on_kernel")
    @classmethod
    def _kernel(cls, v: str | None) -> str | None:
        if v is None:
            return None
        target = mount_target(v)
        if target is None:
            raise ValueError('must be a kernel version ("5.10"), a `uname -r` ("4.18.0-513.el8")'
                             ' or a distribution (rhel8, alma9, rocky9, centos7, ubuntu22.04, '
                             'debian12, sles15)')
        kernel = re.match(r"(\d+)\.(\d+)", v.strip())
        backported = target == "rhel7"  # its 3.10 carries the file type and more
        if kernel and (int(kernel[1]), int(kernel[2])) < V5_MOUNTS_FROM and not backported:
            raise ValueError(
                f"kernel {v} cannot mount what mkfs.xfs makes: a V5 (CRC) filesystem always "
                "carries the directory entry file type (an incompatible feature upstream Linux "
                "mounts from 3.12), and the V4 format (crc=0) is deprecated advice this tool "
                "does not give; format it with that system's own mkfs.xfs (RHEL/CentOS 7, whose "
                "3.10 has the backports: answer rhel7)")
        return target

    @model_validator(mode="after")
    def _one_growth_key(self) -> "Workload":
        if self.eventual_size is not None and self.growth_factor is not None:
            raise ValueError("give eventual_size or growth_factor, not both")
        return self

    def answered(self) -> set[str]:
        """Names of the answers given (storage answers as storage.NAME)."""
        top = {k for k, v in self if k != "storage" and v is not None}
        return top | {f"storage.{k}" for k, v in self.storage if v is not None}


class WorkloadAnswers(Model):
    """Answers measured on a host (observe, profile): the fields they share with Workload, null
    where not measured."""

    #: Answers measured as a lower bound (observe sees the form a directory reached, not its
    #: size): a larger answer already given stays.
    lower_bounds: ClassVar[frozenset[str]] = frozenset()

    def changes_to(self, workload: Workload) -> dict[str, Any]:
        """The measured answers that replace `workload`'s own: every one measured, but a lower
        bound only above the answer already given."""
        given = workload.model_dump(exclude_none=True)
        return {k: v for k, v in self.model_dump(exclude_none=True).items()
                if k not in self.lower_bounds or k not in given or v > given[k]}

    def merged_into(self, workload: Workload) -> Workload:
        """`workload` with these answers replacing its own (changes_to), other answers kept as
        they are."""
        data = workload.model_dump(exclude_none=True)
        data.update(self.changes_to(workload))
        return Workload.model_validate(data)
