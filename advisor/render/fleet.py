"""The fleet report for people: a terminal table and Markdown, one row per host and device, then
the hosts that share a hardware shape."""

from __future__ import annotations

from advisor.models.fleet import FleetDevice, FleetDocument, FleetHost
from advisor.models.units import human_size
from advisor.render.inert import markdown_cell, terminal

HEADER = ("HOST", "STATUS", "SHAPE", "DEVICE", "KIND", "SIZE", "STRIPE", "FINDINGS", "PROPOSAL")


def _findings(counts: dict[str, int]) -> str:
    """'2 breaks, 1 info' (severity order), '-' for none."""
    from advisor.audit.models import SEVERITIES

    said = [f"{counts[s]} {s}" for s in SEVERITIES if counts.get(s)]
    return ", ".join(said) or "-"


def _proposal(d: FleetDevice) -> str:
    if d.proposal_error:
        return f"none: {d.proposal_error}"
    if d.proposal is None:
        return "-" if not d.named else "none"
    text = d.proposal.mkfs_command
    if d.proposal.mount_options:
        text += f" ; mount -o {','.join(d.proposal.mount_options)}"
    if d.proposal.same_as_host is False:
        text += " (the host proposed otherwise)"
    return text


def _stripe(d: FleetDevice) -> str:
    if d.sunit_bytes and d.swidth_bytes:
        return f"{human_size(d.sunit_bytes)}x{d.swidth_bytes // d.sunit_bytes}"
    return "-"


def rows(doc: FleetDocument) -> list[tuple[str, ...]]:
    """The table's rows: a failed host is one row with its error."""
    out: list[tuple[str, ...]] = []
    for h in doc.hosts:
        if h.status == "failed":
            out.append((h.host, "FAILED", "-", "-", "-", "-", "-", "-", h.error or ""))
            continue
        devices = h.devices or []
        if not devices:
            out.append((h.host, "ok", h.shape or "-", "-", "-", "-", "-",
                        _findings(h.counts), "-"))
        for d in devices:
            out.append((h.host, "ok", h.shape or "-", d.name, f"{d.kind}/{d.media}",
                        human_size(d.size_bytes) if d.size_bytes else "?", _stripe(d),
                        _findings(d.findings), _proposal(d)))
    return out


def _summary(doc: FleetDocument) -> str:
    c = doc.counts
    return f"{c['hosts']} hosts: {c['ok']} complete, {c['failed']} failed"


def _host_totals(h: FleetHost) -> str:
    return f"{h.host}: {_findings(h.counts)}"


def table(doc: FleetDocument) -> str:
    """For a terminal."""
    body = [tuple(terminal(c) for c in r) for r in rows(doc)]
    widths = [max(len(r[i]) for r in [HEADER, *body]) for i in range(len(HEADER) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
             for r in [HEADER, *body]]
    totals = "; ".join(terminal(_host_totals(h)) for h in doc.hosts if h.status == "ok")
    lines += ["", _summary(doc), f"findings by host: {totals or 'none'}"]
    for s in doc.shapes:
        same = "the same proposals" if s.same_proposal else "DIFFERENT proposals"
        lines.append(terminal(f"{s.shape} ({len(s.hosts)} hosts, {same}): {s.devices}: "
                              f"{', '.join(s.hosts)}"))
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A host's text as one Markdown cell: no line break, no markup (advisor.render.inert)."""
    return markdown_cell(text)


def markdown(doc: FleetDocument) -> str:
    """For a wiki or a ticket."""
    lines = ["# XFS fleet report", "", f"{_summary(doc)}; results from {_cell(doc.results_dir)}, "
             f"rules from {', '.join(_cell(d) for d in doc.rules_dirs)}.", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows(doc)]
    lines += ["", "## Hosts that share a hardware shape", ""]
    for s in doc.shapes:
        same = "the same proposals" if s.same_proposal else "**different proposals**"
        lines.append(f"- **{s.shape}** ({len(s.hosts)} hosts, {same}): {_cell(s.devices)}; "
                     f"hosts: {_cell(', '.join(s.hosts))}")
    failed = [h for h in doc.hosts if h.status == "failed"]
    if failed:
        lines += ["", "## Failed hosts", ""]
        lines += [f"- **{_cell(h.host)}**: {_cell(h.error or '')}" for h in failed]
    return "\n".join(lines) + "\n"
