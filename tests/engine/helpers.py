"""Hand-written devices and a fixed environment, so rule tests state exactly what they assume."""

from __future__ import annotations

from typing import Any

from advisor.models.device import Device, Fact, StripeGeometry
from advisor.models.environment import Environment
from advisor.system.versions import lts_configs

MiB, GiB, TiB = 1 << 20, 1 << 30, 1 << 40

FACT_FIELDS = {"size_bytes", "rotational", "write_cache", "fua", "zoned", "discard_granularity",
               "logical_sector", "physical_sector", "min_io", "opt_io", "alignment_offset",
               "read_only"}


def device(size: int = 100 * GiB, name: str = "sdx", *, stripe: StripeGeometry | None = None,
           **facts: Any) -> Device:
    """A disk of `size` bytes; keyword facts (rotational=False...) become sysfs Facts."""
    fields: dict[str, Any] = {"size_bytes": size, "logical_sector": 512,
                              "physical_sector": 512, **facts}
    plain = {k: v for k, v in fields.items() if k not in FACT_FIELDS}
    return Device(name=name, display_name=name, path=f"/dev/{name}", kind="disk",
                  stripe=stripe or StripeGeometry(),
                  **{k: Fact(value=v, source="sysfs") for k, v in fields.items()
                     if k in FACT_FIELDS},
                  **plain)


def md_stripe(chunk: int, data_disks: int) -> StripeGeometry:
    return StripeGeometry(sunit_bytes=chunk, swidth_bytes=chunk * data_disks,
                          data_disks=data_disks, source="md0 (md raid6)", used_by_mkfs=True)


def environment(xfsprogs: str = "6.1.0", memory: int = 16 * GiB) -> Environment:
    """The Debian 12 host the goldens were made on, with fixed memory and CPUs."""
    return Environment(xfsprogs_version=xfsprogs, kernel="6.1.0-18-amd64", memory_bytes=memory,
                       cpu_count=4, lts_configs=lts_configs())
