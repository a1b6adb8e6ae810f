"""The text report of an observation: per filesystem, its geometry, the rates with the counter
behind each, the metadata writers, the directory and attribute forms, and the findings. Text
from the system (mount points, command names) is escaped before it reaches the terminal."""

from __future__ import annotations

from advisor.models.observe import ObservedFilesystem, ObserveDocument
from advisor.models.units import human_size
from advisor.profile.report import printable

#: Writers listed by name (the rest are counted).
TOP_WRITERS = 8
#: Up to this many AGs, each AG's figure is listed; past it, the busiest BUSIEST_AGS and the
#: range of the others (a filesystem may have hundreds of AGs).
PER_AG_LISTED = 16
BUSIEST_AGS = 8


def per_ag(counts: list[int], labelled: bool = True) -> str:
    """Each AG's figure (`AG 0 600, AG 1 200...`, or `600, 200...` unlabelled), or past
    PER_AG_LISTED AGs the busiest BUSIEST_AGS, labelled, and the range of the others."""
    if len(counts) <= PER_AG_LISTED:
        return ", ".join(f"AG {i} {n:,}" if labelled else f"{n:,}" for i, n in enumerate(counts))
    busiest = sorted(range(len(counts)), key=lambda i: (-counts[i], i))[:BUSIEST_AGS]
    others = [n for i, n in enumerate(counts) if i not in set(busiest)]
    return (", ".join(f"AG {i} {counts[i]:,}" for i in busiest)
            + f" and {len(others)} other AGs ({min(others):,} to {max(others):,} each)")
#: Characters of a command name shown (the kernel keeps 15; a replayed file may hold more).
COMMAND_SHOWN = 32


def _command(name: str) -> str:
    """A command name for the page: escaped, and cut (with `...`) past COMMAND_SHOWN."""
    cut = name[:COMMAND_SHOWN] + ("..." if len(name) > COMMAND_SHOWN else "")
    return printable(cut)


def _rate(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def _filesystem(fs: ObservedFilesystem) -> list[str]:
    lines = [f"{printable(fs.mountpoint)} ({printable(fs.device)}, {fs.maj_min}), "
             f"{fs.seconds:.1f} s"]
    g = fs.geometry
    if g is not None:
        log = "external" if g.external_log else "internal"
        lines.append(f"  geometry: {g.agcount} AGs, {g.inode_size}-byte inodes, "
                     f"{human_size(g.directory_block_size)} directory blocks, "
                     f"{human_size(g.log_bytes)} {log} log"
                     + (f" (stripe unit {human_size(g.log_stripe_unit_bytes)})"
                        if g.log_stripe_unit_bytes > g.block_size else ""))
    else:
        lines.append("  geometry: xfs_info could not read it (findings skipped)")
    lines.append("  rates (per second; counter: delta over seconds):")
    width = max((len(r.label) for r in fs.rates), default=0)
    for r in fs.rates:
        if not r.evidence.delta:
            continue
        value = human_size(r.per_second) + "/s" if r.name.endswith("bytes") else _rate(
            r.per_second)
        lines.append(f"    {r.label:<{width}}  {value:>12}   {r.evidence.counter}: "
                     f"{r.evidence.delta:,} over {r.evidence.seconds:.2f} s")
    if all(not r.evidence.delta for r in fs.rates):
        lines.append("    (idle: no counter moved)")
    if fs.concurrent_writers is not None:
        users = [w for w in fs.writers if not w.kernel_thread]
        sampled = fs.writer_period > 1
        shown = ", ".join(f"{_command(w.command)}[{w.tid}] {'~' if sampled else ''}"
                          f"{w.transactions:,}" for w in users[:TOP_WRITERS])
        more = f" and {len(users) - TOP_WRITERS} more" if len(users) > TOP_WRITERS else ""
        over = f" in the first {fs.writer_seconds:g} s" if fs.writer_seconds else ""
        how = ("" if not sampled else
               f", estimated from every one in the first {fs.writer_slice_ms} ms of each second"
               if fs.writer_slice_ms else
               f", estimated from one in {fs.writer_period} recorded on each CPU")
        lines.append(f"  metadata writers: {fs.concurrent_writers}"
                     + (f" (transactions{over}{how}: {shown}{more})" if shown else ""))
    if fs.allocations_per_ag and any(fs.allocations_per_ag):
        over = f" of the first {fs.writer_seconds:g} s" if fs.writer_seconds else ""
        how = ("" if fs.allocations_recorded is None else
               f" (estimated: the exact total split as the {fs.allocations_recorded:,} "
               f"recorded in the first {fs.writer_slice_ms} ms of each second{over} were)"
               if fs.writer_slice_ms else
               f" (estimated: the exact total split as the {fs.allocations_recorded:,} "
               f"recorded, one in {fs.writer_period} on each CPU, were)")
        lines.append(f"  extents allocated per AG{how}: {per_ag(fs.allocations_per_ag)}")
    if fs.ag_header_locks:
        waited = fs.ag_header_locks_waited or 0
        lines.append(f"  AG header (AGF, AGI) locks: {fs.ag_header_locks:,}, of which "
                     f"{waited:,} ({100 * waited / fs.ag_header_locks:.1f}%) found the header "
                     "held and waited (for how long is not timed)")
    if fs.forms is not None and (fs.forms.largest_directory_form
                                 or fs.forms.attribute_sets_inline or fs.forms.attribute_spills):
        f = fs.forms
        adds = ", ".join(f"{form} {n:,}" for form, n in f.directory_adds.items() if n)
        if adds:
            lines.append(f"  directory entries added by form: {adds}")
        if f.attribute_sets_inline or f.attribute_spills:
            whole = f.attribute_sets is not None and f.attribute_sets >= max(
                f.attribute_sets_inline, f.attribute_spills)
            lines.append("  attributes: "
                         + (f"{f.attribute_sets:,} set, " if whole else "")
                         + f"{f.attribute_sets_inline:,} added inline, "
                         f"{f.attribute_spills:,} forks moved out of the inode"
                         + (f"; {f.attribute_bytes_per_file:,} B of names and values per file "
                            f"(median of {f.attribute_files:,} recorded from just before "
                            f"the window), the longest value "
                            f"{f.largest_attribute_value or 0:,} B"
                            if f.attribute_bytes_per_file else ""))
        if f.largest_directory_entries_at_least:
            lines.append(f"  largest directory: {f.largest_directory_form} form, so at least "
                         f"{f.largest_directory_entries_at_least:,} entries (a lower bound)")
    if fs.findings:
        lines.append("  findings:")
        for finding in fs.findings:
            lines.append(f"    [{printable(finding.rule)}] {printable(finding.message)}")
    else:
        lines.append("  findings: none")
    return lines


def render_text(doc: ObserveDocument) -> str:
    lines = [f"observed {len(doc.filesystems)} XFS filesystem(s) for {doc.seconds:g} s from "
             f"{doc.started}"]
    if doc.tracing.method == "none":
        lines.append(f"tracepoints: not counted ({printable(doc.tracing.reason or '')}); "
                     "without them it cannot tell:")
        lines += [f"  - {printable(item)}" for item in doc.tracing.findings_not_made]
    else:
        lines.append("tracepoints: counted in the kernel by perf stat")
    if doc.cost:
        lines.append(f"cost: {doc.cost}")
    for fs in doc.filesystems:
        lines.append("")
        lines += _filesystem(fs)
    answers = doc.answers.model_dump(exclude_none=True)
    if answers:
        lines.append("")
        lines.append("measured answers: " + ", ".join(f"{k} = {v}" for k, v in answers.items()))
        if "largest_directory_entries" in answers:
            lines.append("  (largest_directory_entries is a lower bound, from the form the "
                         "largest directory reached and the directory block size)")
    return "\n".join(lines) + "\n"
