"""Writes small sysfs/proc trees from explicit values, shaped like the kernel's (sys/block/NAME is a
link into sys/devices/...), so hand-written hosts have known answers."""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

SWAPS_HEADER = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


@dataclass
class Part:
    name: str
    start_sectors: int
    size_bytes: int
    alignment_offset: int = 0
    holders: list[str] = field(default_factory=list)


@dataclass
class Dev:
    """One /sys/block entry. `files` overrides or adds attributes (a path under the device; the
    value None deletes the file), for garbage and missing attributes."""

    name: str
    size_bytes: int
    maj_min: str
    devpath: str = "virtual"
    rotational: int = 1
    logical: int = 512
    physical: int = 512
    min_io: int | None = None
    opt_io: int = 0
    alignment_offset: int = 0
    write_cache: str = "write back"
    fua: int = 0
    zoned: str = "none"
    discard_granularity: int = 0
    discard_max_bytes: int = 0
    nr_requests: int = 64
    scheduler: str = "[mq-deadline] none"
    queue_depth: int | None = None
    hw_queues: int = 1
    nr_tags: int = 64
    model: str | None = None
    md: dict[str, str] | None = None
    dm_name: str | None = None
    dm_uuid: str | None = None
    slaves: list[str] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)
    partitions: list[Part] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def write_tree(root: Path, devices: list[Dev], *, mountinfo: str = "", swaps: str = "") -> Path:
    """Create root/sys and root/proc for `devices`; returns root."""
    (root / "sys" / "block").mkdir(parents=True, exist_ok=True)
    for dev in devices:
        parent = "virtual/block" if dev.devpath == "virtual" else f"{dev.devpath}/block"
        real = root / "sys" / "devices" / parent / dev.name
        real.mkdir(parents=True)
        os.symlink(f"../devices/{parent}/{dev.name}", root / "sys" / "block" / dev.name)
        devno = root / "sys" / "dev" / "block"
        devno.mkdir(parents=True, exist_ok=True)
        os.symlink(f"../../devices/{parent}/{dev.name}", devno / dev.maj_min)
        attrs = {
            "dev": dev.maj_min, "size": str(dev.size_bytes // 512), "ro": "0", "removable": "0",
            "alignment_offset": str(dev.alignment_offset),
            "queue/rotational": str(dev.rotational), "queue/nr_requests": str(dev.nr_requests),
            "queue/write_cache": dev.write_cache, "queue/fua": str(dev.fua), "queue/dax": "0",
            "queue/zoned": dev.zoned, "queue/scheduler": dev.scheduler,
            "queue/discard_granularity": str(dev.discard_granularity),
            "queue/discard_max_bytes": str(dev.discard_max_bytes),
            "queue/logical_block_size": str(dev.logical),
            "queue/physical_block_size": str(dev.physical),
            "queue/minimum_io_size": str(dev.min_io if dev.min_io is not None else dev.physical),
            "queue/optimal_io_size": str(dev.opt_io),
        }
        for q in range(dev.hw_queues):
            attrs[f"mq/{q}/nr_tags"] = str(dev.nr_tags)
        if dev.queue_depth is not None:
            attrs["device/queue_depth"] = str(dev.queue_depth)
        if dev.model is not None:
            attrs["device/model"] = dev.model
        if dev.md is not None:
            attrs.update({f"md/{k}": v for k, v in dev.md.items()})
        if dev.dm_name is not None:
            attrs["dm/name"] = dev.dm_name
            attrs["dm/uuid"] = dev.dm_uuid or ""
        attrs.update(dev.files)
        for rel, text in attrs.items():
            if text is not None:
                _write(real / rel, text)
        for sub, names in (("slaves", dev.slaves), ("holders", dev.holders)):
            (real / sub).mkdir()
            for n in names:
                os.symlink(f"../../{n}", real / sub / n)
        major, minor = dev.maj_min.split(":")
        for i, part in enumerate(dev.partitions, start=1):
            pdir = real / part.name
            for rel, text in {
                "partition": str(i), "start": str(part.start_sectors),
                "size": str(part.size_bytes // 512), "ro": "0",
                "alignment_offset": str(part.alignment_offset),
                "dev": f"{major}:{int(minor) + i}",
            }.items():
                _write(pdir / rel, text)
            os.symlink(f"../../devices/{parent}/{dev.name}/{part.name}",
                       devno / f"{major}:{int(minor) + i}")
            (pdir / "holders").mkdir()
            for n in part.holders:
                os.symlink(f"../../../{n}", pdir / "holders" / n)
    _write(root / "proc" / "self" / "mountinfo", mountinfo.rstrip("\n"))
    (root / "proc" / "swaps").write_text(SWAPS_HEADER + swaps)
    return root


def unpack_dumps(src: Path, out: Path) -> dict[str, Path]:
    """The sysfs captures (*.tar.xz) in src unpacked under out, by name; each value is the
    capture's root (a tarball may hold one top folder or sys/ and proc/ directly)."""
    dumps: dict[str, Path] = {}
    for tarball in sorted(src.glob("*.tar.xz")):
        name = tarball.name.removesuffix(".tar.xz")
        dest = out / name
        dest.mkdir()
        with tarfile.open(tarball) as tf:
            # Extraction filters came with Python 3.11.4; Debian 12's 3.11.2 has none (the
            # captures are the project's own files).
            if hasattr(tarfile, "tar_filter"):
                tf.extractall(dest, filter="tar")
            else:
                tf.extractall(dest)
        inner = [p for p in dest.iterdir() if p.is_dir()]
        dumps[name] = dest if (dest / "sys").is_dir() else (inner[0] if len(inner) == 1 else dest)
    return dumps
