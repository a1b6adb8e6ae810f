"""The device list's styles and every fact with its provenance for the details pane. Pure
functions over the device model (no widgets); the words themselves come from advisor.render.devices,
shared with the command line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.models.device import Device, Fact
from advisor.models.units import human_size
from advisor.render.devices import Badge, unprobed_reason

#: Facts measured in bytes: shown rounded, with the exact byte count beside them.
BYTE_FACTS = frozenset({
    "size_bytes", "discard_granularity", "discard_max_bytes", "logical_sector", "physical_sector",
    "min_io", "opt_io", "alignment_offset", "partition_start", "chunk_bytes",
    "sunit_bytes", "swidth_bytes",
})


def badge_style(badge: Badge, *, no_color: bool) -> str:
    """How a badge is drawn: red, yellow or green; without colour (NO_COLOR), what blocks is in
    reverse video and what warns underlined, so neither turns into grey on grey."""
    if no_color:
        return {"blocks": "bold reverse", "warns": "underline", "free": ""}[badge.kind]
    return {"blocks": "bold red", "warns": "yellow", "free": "green"}[badge.kind]


@dataclass(frozen=True)
class FactLine:
    """One fact for the details pane: its name, value, and where the value came from."""

    name: str
    value: str
    source: str
    origin: str
    """The sysfs path or probe, the raw text when it differs from the value, and any note."""
    help: str


def _show(name: str, value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and name in BYTE_FACTS:
        return f"{human_size(value)} ({value})" if value >= 1024 else f"{value} B"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


def _fact_line(name: str, fact: Fact[Any], help_text: str) -> FactLine:
    parts = [fact.path or ""]
    if fact.raw is not None and fact.raw != str(fact.value):
        parts.append(f"raw {fact.raw!r}")
    if fact.note:
        parts.append(fact.note)
    origin = "; ".join(p for p in parts if p)
    shown = _show(name.rsplit(".", 1)[-1], fact.value)
    return FactLine(name, shown, fact.source, origin, help_text)


def fact_lines(device: Device, *, live: bool = False, as_root: bool = False) -> list[FactLine]:
    """Every fact of the device, in model order, facts with their provenance. `live`, `as_root`:
    to say why libblkid was not asked."""
    lines: list[FactLine] = []
    for name, field in Device.model_fields.items():
        value = getattr(device, name)
        help_text = field.description or ""
        if isinstance(value, Fact):
            lines.append(_fact_line(name, value, help_text))
        elif name == "md" and value is not None:
            for sub, info in type(value).model_fields.items():
                lines.append(_fact_line(f"md.{sub}", getattr(value, sub), info.description or ""))
        elif name == "stripe":
            for sub, info in type(value).model_fields.items():
                shown = _show(sub, getattr(value, sub))
                help_text = info.description or ""
                lines.append(FactLine(f"stripe.{sub}", shown, "derived", "", help_text))
        elif name == "usage":
            usage = device.usage
            lines.append(FactLine("usage.mountpoints", _show("", usage.mountpoints), "mountinfo",
                                  "", "Where it is mounted"))
            lines.append(_fact_line("usage.fstype", usage.fstype, "Filesystem type"))
            lines.append(FactLine("usage.swap", _show("", usage.swap), "swaps", "",
                                  "Listed in /proc/swaps"))
            for i, sig in enumerate(usage.signatures):
                lines.append(_fact_line(f"usage.signature[{i}]", sig, "A signature libblkid found"))
            probed = "probed" if usage.probed else unprobed_reason(device, live=live,
                                                                   as_root=as_root)
            lines.append(FactLine("usage.probed", _show("", usage.probed), "blkid", probed,
                                  "Whether libblkid was asked"))
        elif name == "notes":
            for note in device.notes:
                lines.append(FactLine("note", note, "inspect", "", "Something odd seen"))
        elif value is not None and value != []:
            lines.append(FactLine(name, _show(name, value), "sysfs", "", help_text))
    return lines
