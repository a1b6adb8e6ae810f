"""Live-only facts: libblkid signatures and udev properties. Asked on the running system (as root);
a capture stores them in PROBES_FILE so that a replay sees exactly what the live run saw."""

from __future__ import annotations

import json
import os
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
class Probed:
    """What the probes say of one device: its signatures (libblkid), whether it was probed, the
    probe's error, its udev properties."""

    signatures: list[Fact[str]]
    probed: bool
    error: str | None
    udev: dict[str, str]


@dataclass
class Probes:
    """libblkid signatures and udev properties by kernel name; `probed` False when not asked.
    Read a device at a time with of(name). Live ones (probe_live) probe each device when it is
    first asked of, and keep every result in the maps only when `keep` (a capture writes them
    all); otherwise only the last device's: a host with 100,000 devices would hold ~1 KB of
    udev properties and signatures for each."""

    probed: bool = False
    signatures: dict[str, list[Fact[str]]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    udev: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Live: probe(name) gives a device's Probed, asked once per device.
    probe: Any = None
    keep: bool = True
    _last: tuple[str, Probed] | None = None

    def of(self, name: str) -> Probed:
        """What the probes say of the device `name`."""
        if self.probe is None:
            return Probed(self.signatures.get(name, []), self.probed and name in self.signatures,
                          self.errors.get(name), self.udev.get(name, {}))
        if self._last is not None and self._last[0] == name:
            return self._last[1]
        found: Probed = self.probe(name)
        self._last = (name, found)
        if self.keep:
            if found.probed:
                self.signatures[name] = found.signatures
            if found.error is not None:
                self.errors[name] = found.error
            if found.udev:
                self.udev[name] = found.udev
        return found

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


def probe_live(*, keep: bool = True) -> Probes:
    """libblkid (a read-only open of /dev/NAME) and udev, asked of each device when it is first
    asked of (Probes.of), on the live system as root."""
    return Probes(probed=True, probe=_LiveProbe(), keep=keep)


class _LiveProbe:
    """One device's libblkid signatures and udev properties, asked now."""

    def __init__(self) -> None:
        self._udev: Any = None  # pyudev's Context, made at the first device (False: none)

    def __call__(self, name: str) -> Probed:
        from advisor.system.blkid import probe_signatures

        try:
            signatures, probed, error = probe_signatures(f"/dev/{name}"), True, None
        except AdvisorError as err:
            signatures, probed, error = [], False, err.message
        return Probed(signatures, probed, error, self._properties(name))

    def _properties(self, name: str) -> dict[str, str]:
        if self._udev is None:
            self._udev = _udev_context()
        if self._udev is False:
            return {}
        return _udev_properties(self._udev, name)


#: Where udevd keeps device properties; without it (no udevd, a container) there are none.
UDEV_DATA = "/run/udev/data"


def _udev_context() -> Any:
    """pyudev's Context; False when there is no udev database (no udevd, a container) or no
    pyudev: udev facts are optional, sysfs and libblkid carry the rest."""
    if not os.path.isdir(UDEV_DATA):
        return False
    try:
        import pyudev
    except ImportError:
        return False
    try:
        return pyudev.Context()
    except Exception:  # a broken udev set-up must not stop the inspection
        return False


def _udev_properties(context: Any, name: str) -> dict[str, str]:
    """The udev properties of the block device `name` that UDEV_KEYS names; none when udev does
    not know it."""
    import pyudev

    try:
        dev = pyudev.Devices.from_name(context, "block", name)
        return {k: str(dev.properties[k]) for k in UDEV_KEYS if k in dev.properties}
    except Exception:  # a broken udev database must not stop the inspection
        return {}


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
