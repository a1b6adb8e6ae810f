"""What `xfs-advisor profile PATH` measured in a tree: the shape of the data (counts, sizes,
directory sizes, extended attributes) and the workload answers it supports. A `--json` contract."""

from __future__ import annotations

from pydantic import Field

from advisor import SCHEMA_VERSION
from advisor.models.base import Model
from advisor.models.workload import WorkloadAnswers


class Bucket(Model):
    """One power-of-two bucket of a histogram: values from `low` to `high`, both inclusive."""

    low: int = Field(ge=0)
    """Smallest value the bucket holds (0, 1, 2, 4, 8...)."""
    high: int = Field(ge=0)
    """Largest value the bucket holds (0, 1, 3, 7, 15...)."""
    count: int = Field(ge=0)
    """How many values fell in the bucket."""
    total: int = Field(ge=0)
    """Sum of the values in the bucket (bytes for file sizes, entries for directory sizes)."""


class Distribution(Model):
    """A streaming summary of many values: power-of-two histogram, exact extremes and mean, and
    percentiles estimated within their bucket (exact when the bucket holds one distinct value)."""

    count: int = Field(ge=0)
    """How many values."""
    total: int = Field(ge=0)
    """Sum of the values."""
    minimum: int | None = None
    """Smallest value (exact); null when there are none."""
    maximum: int | None = None
    """Largest value (exact); null when there are none."""
    mean: float | None = None
    """Exact mean; null when there are none."""
    p10: int | None = None
    """10th percentile (estimated within its power-of-two bucket)."""
    p25: int | None = None
    """25th percentile (estimated within its power-of-two bucket)."""
    median: int | None = None
    """50th percentile (estimated within its power-of-two bucket)."""
    p75: int | None = None
    """75th percentile (estimated within its power-of-two bucket)."""
    p90: int | None = None
    """90th percentile (estimated within its power-of-two bucket)."""
    p99: int | None = None
    """99th percentile (estimated within its power-of-two bucket)."""
    percentiles_exact: bool = True
    """Every percentile above fell in a bucket holding one distinct value: none is estimated."""
    buckets: list[Bucket] = Field(default_factory=list)
    """The non-empty power-of-two buckets, smallest first."""


class DirectorySize(Model):
    """A directory and how many entries it holds."""

    path: str
    """The directory; bytes that are not UTF-8 are shown as backslash escapes (\\xff)."""
    entries: int = Field(ge=0)
    """Entries listed in it, not counting . and .."""


class SpecialFiles(Model):
    """Inodes that are neither files, directories nor symlinks."""

    block_devices: int = Field(default=0, ge=0)
    """Block device nodes."""
    character_devices: int = Field(default=0, ge=0)
    """Character device nodes."""
    fifos: int = Field(default=0, ge=0)
    """Named pipes."""
    sockets: int = Field(default=0, ge=0)
    """Unix domain sockets."""


class HardLinks(Model):
    """Regular files with more than one name: each is counted once, like du does."""

    inodes: int = Field(default=0, ge=0)
    """Files reached through more than one name in the tree."""
    extra_names: int = Field(default=0, ge=0)
    """Names beyond the first for those files (not counted as files again)."""


class Xattrs(Model):
    """Extended attributes of a sample of the files and directories (all of them in small trees).

    Bytes are the name without its namespace prefix (XFS stores `user.`, `security.`... as a flag)
    plus the value: what has to fit in the inode's literal area to stay inline."""

    supported: bool = True
    """The filesystem answered listxattr (false: the xattr answers are unknown, not zero)."""
    population: int = Field(default=0, ge=0)
    """Files and directories seen, the population the sample is drawn from."""
    sample_size: int = Field(default=0, ge=0)
    """Files and directories whose attributes were read (a uniform reservoir sample)."""
    sample_limit: int = Field(default=0, ge=0)
    """Most files and directories the sample may hold (--xattr-sample)."""
    inodes_with_xattrs: int = Field(default=0, ge=0)
    """Sampled files and directories carrying at least one attribute."""
    bytes_per_inode: Distribution = Field(default_factory=lambda: Distribution(count=0, total=0))
    """Attribute bytes per sampled file or directory (name without prefix + value, summed)."""
    attributes_per_inode: Distribution = Field(
        default_factory=lambda: Distribution(count=0, total=0))
    """Attributes per sampled file or directory (each costs 3 bytes of inline space besides its
    name and value)."""
    largest_value: int = Field(default=0, ge=0)
    """Largest single attribute value in the sample, in bytes (over 254 never stays inline)."""
    largest_value_name: str | None = None
    """Name of that attribute, with its namespace prefix."""
    largest_value_path: str | None = None
    """A file carrying that attribute."""


class Problems(Model):
    """What could not be read; none of it stops the scan."""

    unreadable_directories: int = Field(default=0, ge=0)
    """Directories that could not be listed (permission denied, I/O error): content missing."""
    unreadable_entries: int = Field(default=0, ge=0)
    """Entries listed but not examined (lstat failed, and not because they vanished)."""
    vanished: int = Field(default=0, ge=0)
    """Entries deleted between being listed and being examined (a live tree)."""
    other_filesystems_skipped: int = Field(default=0, ge=0)
    """Mount points not descended into because of --one-file-system."""
    examples: list[str] = Field(default_factory=list)
    """A few of the paths concerned, with the reason (at most 20)."""


class MeasuredAnswers(WorkloadAnswers):
    """The workload answers this scan supports; null when the scan could not tell."""

    largest_directory_entries: int | None = Field(default=None, ge=0)
    """Entries in the largest directory seen."""
    median_file_size: int | None = Field(default=None, ge=0)
    """Median regular-file size in bytes."""
    xattr_bytes_per_file: int | None = Field(default=None, ge=0)
    """90th percentile of attribute bytes per file or directory in the sample: nine in ten carry no
    more (a mean would hide the files that push their attributes out of the inode)."""
    xattrs_per_file: int | None = Field(default=None, ge=0)
    """90th percentile of attributes per file or directory in the sample."""
    largest_xattr_value: int | None = Field(default=None, ge=0)
    """Largest attribute value in the sample, in bytes."""


class Profile(Model):
    """What a walk of a tree found (`xfs-advisor profile PATH --json`)."""

    schema_version: int = SCHEMA_VERSION
    """Version of this document's shape; bumped only on an incompatible change."""
    path: str
    """The tree walked (never following symlinks)."""
    partial: bool = False
    """The scan was interrupted (Ctrl-C): every number covers only what was seen before."""
    one_file_system: bool = False
    """Mount points below the path were not descended into (--one-file-system)."""
    elapsed_seconds: float = Field(ge=0)
    """Wall-clock time of the walk and the xattr sample."""
    entries: int = Field(ge=0)
    """Directory entries examined, every name counted (hard links too), plus the path itself."""
    files: int = Field(ge=0)
    """Regular files, each inode counted once."""
    directories: int = Field(ge=0)
    """Directories, including the path itself."""
    symlinks: int = Field(ge=0)
    """Symbolic links (never followed)."""
    special_files: SpecialFiles = Field(default_factory=SpecialFiles)
    """Device nodes, named pipes and sockets."""
    inodes: int = Field(ge=0)
    """Distinct inodes: files, directories, symlinks and special files (du -s --inodes)."""
    apparent_bytes: int = Field(ge=0)
    """Sum of regular-file sizes (st_size)."""
    allocated_bytes: int = Field(ge=0)
    """Space allocated to every inode counted, directories included (du -s -B1)."""
    hard_links: HardLinks = Field(default_factory=HardLinks)
    """Regular files with several names in the tree."""
    sparse_files: int = Field(ge=0)
    """Regular files with fewer bytes allocated than their size (holes, or compression)."""
    file_sizes: Distribution
    """Regular-file sizes in bytes."""
    directory_sizes: Distribution
    """Entries per directory."""
    largest_directories: list[DirectorySize] = Field(default_factory=list)
    """The directories with the most entries, largest first."""
    xattrs: Xattrs = Field(default_factory=Xattrs)
    """Extended attributes, from a sample."""
    problems: Problems = Field(default_factory=Problems)
    """What could not be read."""
    answers: MeasuredAnswers = Field(default_factory=MeasuredAnswers)
    """Workload answers this scan supports (what --write-workload writes)."""
