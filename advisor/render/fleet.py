"""The fleet report for people: a terminal table and Markdown, one row per host and device, then
the hosts that share a hardware shape."""

from __future__ import annotations

from advisor.models.fleet import FleetDevice, FleetDocument, FleetHost
from advisor.models.units import human_size
from advisor.render.inert import markdown_cell, terminal

HEADER = ("HOST", "STATUS", "SHAPE", "DEVICE", "KIND", "SIZE", "STRIPE", "FINDINGS", "COLLECTED",
          "PROPOSAL")


def _findings(counts: dict[str, int]) -> str:
    """'2 breaks, 1 info' (severity order), '-' for none."""
    from advisor.models.audit import SEVERITIES

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
    text += "".join(f" [warning: {w.message}]" for w in d.proposal.warnings)
    return text


def _stripe(d: FleetDevice) -> str:
    if d.sunit_bytes and d.swidth_bytes:
        return f"{human_size(d.sunit_bytes)}x{d.swidth_bytes // d.sunit_bytes}"
    return "-"


def rows(doc: FleetDocument) -> list[tuple[str, ...]]:
    """The table's rows: a failed host is one row with its error."""
    out: list[tuple[str, ...]] = []
    for h in doc.hosts:
        when = h.collected_at or "-"
        if h.status == "failed":
            out.append((h.host, "FAILED", "-", "-", "-", "-", "-", "-", when, h.error or ""))
            continue
        devices = h.devices or []
        if not devices:
            out.append((h.host, "ok", h.shape or "-", "-", "-", "-", "-",
                        _findings(h.counts), when, "-"))
        for d in devices:
            out.append((h.host, "ok", h.shape or "-", d.name, f"{d.kind}/{d.media}",
                        human_size(d.size_bytes) if d.size_bytes else "?", _stripe(d),
                        _findings(d.findings), when, _proposal(d)))
    return out


def _summary(doc: FleetDocument) -> str:
    c = doc.counts
    return f"{c['hosts']} hosts: {c['ok']} complete, {c['failed']} failed"


def _host_totals(h: FleetHost) -> str:
    return f"{h.host}: {_findings(h.counts)}"


def _hosts(names: list[str], most: int = 20) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                      else "")


def _rule_groups(groups: list[tuple[str, str, list[str], int, str]], none: str) -> list[str]:
    """Two lines a rule, from (rule, tag, hosts, findings, what it says): the rule with its
    counts, then its hosts; `none` when there is no rule."""
    lines = []
    for rule, tag, hosts, findings, what in groups:
        lines += [f"{rule} [{tag}] {len(hosts)} hosts, {findings} findings: {what}",
                  f"    {_hosts(hosts)}"]
    return lines or [none]


def rules_view(doc: FleetDocument) -> str:
    """Findings grouped by rule id: severity, hosts and findings, worst first."""
    lines = [f"{_summary(doc)}; findings by rule (xfs-advisor explain RULE tells more):"]
    lines += _rule_groups([(r.rule, r.severity, r.hosts, r.findings, r.title)
                           for r in doc.by_rule], "no findings")
    lines += _observed(doc)
    lines += _gate(doc)
    return "\n".join(lines) + "\n"


def _observed(doc: FleetDocument) -> list[str]:
    """The hosts' observe findings by rule, and the observations that failed (nothing when no
    host was asked to observe)."""
    asked = [h for h in doc.hosts if h.observed_seconds is not None or h.observe_error]
    if not asked:
        return []
    lines = [f"observed under load on {len(asked)} hosts; observe findings by rule:"]
    lines += _rule_groups([(r.rule, "observed", r.hosts, r.findings, r.example)
                           for r in doc.observe_by_rule], "no observe findings")
    lines += [f"{h.host}: {h.observe_error}" for h in asked if h.observe_error]
    return lines


def proposals_view(doc: FleetDocument) -> str:
    """Proposals grouped by what they decide: the command, the settings changed from the
    defaults with their reasons, the warnings, and the hosts and devices that get it."""
    groups: dict[str, tuple[FleetDevice, list[str]]] = {}
    for h in doc.hosts:
        for d in h.devices:
            if d.proposal is None:
                continue
            key = "\0".join([
                ",".join(f"{r.setting}={r.value}" for r in d.proposal.reasons),
                ",".join(d.proposal.mount_options), *(w.message for w in d.proposal.warnings)])
            groups.setdefault(key, (d, []))[1].append(f"{h.host}:{d.name}")
    lines = [f"{_summary(doc)}; {len(groups)} distinct proposals:"]
    for d, where in sorted(groups.values(), key=lambda g: -len(g[1])):
        if d.proposal is None:
            continue
        p = d.proposal
        kind = "non-default" if p.reasons or p.mount_options else "the defaults kept"
        lines.append(f"{len(where)} devices, {kind}: {p.mkfs_command}"
                     + (f" ; mount -o {','.join(p.mount_options)}" if p.mount_options else ""))
        lines += [f"    {r.setting} {r.value} (default {r.default}), rule {r.rule}: {r.reason}"
                  for r in p.reasons]
        lines += [f"    warning ({w.rule}): {w.message}" for w in p.warnings]
        lines.append(f"    {_hosts(where)}")
    return "\n".join(lines) + "\n"


def since_view(doc: FleetDocument) -> str:
    """What changed since the previous collection (--since): hosts added, removed, failed and
    recovered; rules whose findings came to or left hosts; proposals that changed."""
    d = doc.since
    if d is None:
        return ""
    lines = [f"{_summary(doc)}; since {d.previous}: {len(d.added)} hosts added, "
             f"{len(d.removed)} removed, {len(d.failed)} failed, {len(d.recovered)} recovered; "
             f"{len(d.rules)} rules with findings gained or cleared; {len(d.proposals)} "
             "proposals changed"]
    failed = {h.host: " ".join((h.error or "").split()) for h in doc.hosts}
    for title, hosts in (("hosts added", d.added), ("hosts removed", d.removed),
                         ("hosts recovered", d.recovered)):
        if hosts:
            lines.append(f"{title}: {_hosts(hosts)}")
    if d.failed:
        lines.append("hosts failed:")
        lines += [f"    {h}: {failed.get(h, '')}" for h in d.failed]
    for r in d.rules:
        lines.append(f"{r.rule} [{r.severity}]: {r.title}")
        if r.gained:
            lines.append(f"    gained on {len(r.gained)} hosts: {_hosts(r.gained)}")
        if r.cleared:
            lines.append(f"    cleared on {len(r.cleared)} hosts: {_hosts(r.cleared)}")
    for p in d.proposals:
        lines += [f"proposal for {p.host}:{p.device}", f"    before: {p.before or 'none'}",
                  f"    now:    {p.after or 'none'}"]
    if not (d.added or d.removed or d.failed or d.recovered or d.rules or d.proposals):
        lines.append("nothing changed")
    lines += _gate(doc)
    return "\n".join(lines) + "\n"


def _gate(doc: FleetDocument) -> list[str]:
    if not doc.fail_on:
        return []
    return [f"--fail-on {doc.fail_on}: {len(doc.failing_hosts)} hosts fail"
            + (f": {_hosts(doc.failing_hosts)}" if doc.failing_hosts else "")]


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
    lines += [terminal(f"{r.rule} [{r.severity}]: {len(r.hosts)} hosts, {r.findings} findings")
              for r in doc.by_rule]
    lines += [terminal(line) for line in _observed(doc)]
    lines += [terminal(line) for line in _gate(doc)]
    return "\n".join(lines) + "\n"


def csv_text(doc: FleetDocument) -> str:
    """For a spreadsheet: the table's rows (one per host and device, a failed host with its
    error) as CSV, then one row per finding (its rule id and severity)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*HEADER, "KERNEL", "TOOL_VERSION"])
    kernels = {h.host: (h.kernel or "", h.tool_version or "") for h in doc.hosts}
    for row in rows(doc):
        writer.writerow([*(_spreadsheet_safe(c) for c in row), *kernels.get(row[0], ("", ""))])
    writer.writerow([])
    writer.writerow(["HOST", "RULE", "SEVERITY", "DEVICE", "MOUNTPOINT", "TITLE"])
    for h in doc.hosts:
        for f in h.findings:
            writer.writerow([_spreadsheet_safe(c) for c in (h.host, f.rule, f.severity,
                                                              f.device or "", f.mountpoint or "",
                                                              f.title)])
    return out.getvalue()


def _spreadsheet_safe(text: str) -> str:
    """A cell a spreadsheet shows as text: one starting with =, +, - or @ would be a formula
    (host names and errors come from the hosts)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") and text != "-" else text


#: The HTML report's script: sort by a header's click, filter rows by the text typed. Inline, so
#: the page works offline and from a mail attachment (no CDN, no other file).
_HTML_SCRIPT = """
const table = document.getElementById("rows");
const body = table.tBodies[0];
document.getElementById("filter").addEventListener("input", (e) => {
  const words = e.target.value.toLowerCase().split(/\\s+/).filter(Boolean);
  for (const row of body.rows) {
    const text = row.textContent.toLowerCase();
    row.hidden = !words.every((w) => text.includes(w));
  }
});
table.tHead.rows[0].querySelectorAll("th").forEach((th, i) => {
  th.addEventListener("click", () => {
    const up = th.dataset.order !== "up";
    th.dataset.order = up ? "up" : "down";
    const rows = Array.from(body.rows);
    rows.sort((a, b) => a.cells[i].textContent.localeCompare(
      b.cells[i].textContent, undefined, {numeric: true}) * (up ? 1 : -1));
    rows.forEach((r) => body.appendChild(r));
  });
});
"""


def html(doc: FleetDocument) -> str:
    """One self-contained page: the table (click a header to sort, type to filter), the findings
    by rule and the shapes. Every text from the hosts is escaped."""
    from html import escape

    def cells(tag: str, values: tuple[str, ...] | list[str]) -> str:
        return "<tr>" + "".join(f"<{tag}>{escape(v)}</{tag}>" for v in values) + "</tr>"

    body = "\n".join(cells("td", r) for r in rows(doc))
    rules = "\n".join(cells("td", [r.rule, r.severity, str(len(r.hosts)), str(r.findings),
                                    r.title, ", ".join(r.hosts)]) for r in doc.by_rule)
    shapes = "\n".join(cells("td", [s.shape, str(len(s.hosts)), "yes" if s.same_proposal
                                     else "NO", s.devices, ", ".join(s.hosts)])
                        for s in doc.shapes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>XFS fleet report</title>
<style>body{{font-family:sans-serif}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;vertical-align:top}}
th{{cursor:pointer;background:#eee}}</style>
</head><body>
<h1>XFS fleet report</h1>
<p>{escape(_summary(doc))}; results from {escape(doc.results_dir)}.</p>
<p><label>Filter rows: <input id="filter" type="search"></label> (click a header to sort)</p>
<table id="rows"><thead>{cells("th", list(HEADER))}</thead><tbody>
{body}
</tbody></table>
<h2>Findings by rule</h2>
<table><thead>{cells("th", ["RULE", "SEVERITY", "HOSTS", "FINDINGS", "TITLE", "WHICH"])}</thead>
<tbody>{rules}</tbody></table>
<h2>Hosts that share a hardware shape</h2>
<table><thead>{cells("th", ["SHAPE", "HOSTS", "SAME PROPOSALS", "DEVICES", "WHICH"])}</thead>
<tbody>{shapes}</tbody></table>
<script>{_HTML_SCRIPT}</script>
</body></html>
"""


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
    observed = _observed(doc)
    if observed:
        lines += ["", "## Observed under load", ""]
        lines += [f"- {_cell(line.strip())}" for line in observed]
    failed = [h for h in doc.hosts if h.status == "failed"]
    if failed:
        lines += ["", "## Failed hosts", ""]
        lines += [f"- **{_cell(h.host)}**: {_cell(h.error or '')}" for h in failed]
    return "\n".join(lines) + "\n"
