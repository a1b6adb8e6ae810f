"""Live-only facts: libblkid signatures and udev properties. Asked on the running system (as root);
a capture stores them in PROBES_FILE so that a replay sees exactly what the live run saw."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.errors import AdvisorError
from advisor.models.device import Fact
from advisor.system.sysroot import SysRoot

#: File in a capture (beside sys/ and proc/) holding the live-only probe results.
PROBES_FILE = "xfs-advisor-probes.json"
PROBES_VERSION = 1
#: udev properties kept: identity and what udev's own blkid run found.
UDEV_KEYS = ("ID_MODEL", "ID_SERIAL_SHORT", "ID_SERIAL", "ID_WWN", "ID_BUS", "ID_FS_TYPE",
             "ID_PART_TABLE_TYPE")


@dataclass
class Probes:
    """libblkid signatures and udev properties by kernel name; `probed` False when not asked."""

    probed: bool = False
    signatures: dict[str, list[Fact[str]]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    udev: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> str:
        doc = {
            "probes_version": PROBES_VERSION,
            "signatures": {k: [f.model_dump(mode="json") for f in v]
                           for k, v in sorted(self.signatures.items())},
            "errors": dict(sorted(self.errors.items())),
            "udev": dict(sorted(self.udev.items())),
        }
        return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def can_probe(root: SysRoot) -> bool:
    return root.live and os.geteuid() == 0


def probe_live(names: Sequence[str]) -> Probes:
    """Ask libblkid about every device (read-only opens of /dev/NAME), and udev about them."""
    from advisor.system.blkid import probe_signatures

    probes = Probes(probed=True, udev=_udev_properties(set(names)))
    for name in names:
        try:
            probes.signatures[name] = probe_signatures(f"/dev/{name}")
        except AdvisorError as err:
            probes.errors[name] = err.message
    return probes


#: Where udevd keeps device properties; without it (no udevd, a container) there are none.
UDEV_DATA = "/run/udev/data"


def _udev_properties(names: set[str]) -> dict[str, dict[str, str]]:
    if not os.path.isdir(UDEV_DATA):
        return {}
    try:
        import pyudev
    except ImportError:  # udev facts are optional: sysfs and libblkid carry the rest
        return {}
    out: dict[str, dict[str, str]] = {}
    try:
        for dev in pyudev.Context().list_devices(subsystem="block"):
            if dev.sys_name not in names:
                continue
            props = {k: str(dev.properties[k]) for k in UDEV_KEYS if k in dev.properties}
            if props:
                out[dev.sys_name] = props
    except Exception:  # a broken udev database must not stop the inspection
        return out
    return out


def load_probes(root: SysRoot) -> Probes:
    """The probe results stored in a capture, or an empty, unprobed set when there are none."""
    text = root.read(PROBES_FILE)
    if text is None:
        return Probes()
    try:
        doc: Any = json.loads(text)
        if doc.get("probes_version") != PROBES_VERSION:
            return Probes()
        return Probes(
            probed=True,
            signatures={k: [Fact[str].model_validate(f) for f in v]
                        for k, v in doc.get("signatures", {}).items()},
            errors={str(k): str(v) for k, v in doc.get("errors", {}).items()},
            udev={str(k): {str(a): str(b) for a, b in v.items()}
                  for k, v in doc.get("udev", {}).items()},
        )
    except (ValueError, AttributeError, TypeError, RecursionError):
        from advisor.errors import BadInput

        raise BadInput(f"{root.path(PROBES_FILE)} is not a valid probe file") from None
