"""A Profile as text for a person: counts first, then the distributions, then the answers."""

from __future__ import annotations

from advisor.models.profile import Distribution, Profile
from advisor.models.units import human_size
from advisor.render.inert import terminal

BAR_WIDTH = 30


def printable(text: str) -> str:
    """A file name as it can be shown on a terminal (advisor.render.inert.terminal): newlines,
    escape sequences and other hidden characters become backslash escapes (`\\n`, `\\e`), so a
    crafted name can neither fake report lines nor drive the terminal."""
    return terminal(text)


def _n(value: int) -> str:
    return f"{value:,}"


def _bytes(value: int) -> str:
    return human_size(value) if value >= 1024 else f"{value} B"


def _histogram(dist: Distribution, as_bytes: bool) -> list[str]:
    fmt = _bytes if as_bytes else _n
    widest = max((b.count for b in dist.buckets), default=0)
    lines = []
    for b in dist.buckets:
        if b.low == b.high:
            span = fmt(b.low)
        elif as_bytes:  # rounded sizes: "[1 KiB, 2 KiB)" is clearer than "1 KiB - 2 KiB"
            span = f"[{fmt(b.low)}, {fmt(b.high + 1)})"
        else:
            span = f"{fmt(b.low)} - {fmt(b.high)}"
        bar = "#" * max(1, round(BAR_WIDTH * b.count / widest)) if widest else ""
        lines.append(f"    {span:>23}  {b.count:>12,}  {bar}")
    return lines


def _percentiles(dist: Distribution, as_bytes: bool) -> str:
    fmt = _bytes if as_bytes else _n
    parts = [f"{name} {fmt(v)}" for name, v in (("p10", dist.p10), ("median", dist.median),
                                                  ("p90", dist.p90), ("p99", dist.p99),
                                                  ("max", dist.maximum)) if v is not None]
    how = "" if dist.percentiles_exact else "  (estimated within power-of-two buckets)"
    return "    " + ", ".join(parts) + how


def render_text(p: Profile) -> str:
    out: list[str] = []
    title = f"Profile of {printable(p.path)}"
    if p.partial:
        title += "  [PARTIAL: interrupted, numbers cover only what was seen]"
    out += [title, ""]
    specials = p.special_files
    special_count = (specials.block_devices + specials.character_devices + specials.fifos
                     + specials.sockets)
    out += [
        f"  entries      {_n(p.entries)} in {p.elapsed_seconds:.1f} s"
        + (" (this filesystem only)" if p.one_file_system else ""),
        f"  files        {_n(p.files)}, {_bytes(p.apparent_bytes)} apparent, "
        f"{_bytes(p.allocated_bytes)} allocated (directories included)",
        f"  directories  {_n(p.directories)}",
        f"  symlinks     {_n(p.symlinks)} (not followed)",
        f"  special      {_n(special_count)} (block {specials.block_devices}, character "
        f"{specials.character_devices}, fifo {specials.fifos}, socket {specials.sockets})",
        f"  hard links   {_n(p.hard_links.inodes)} files with several names "
        f"({_n(p.hard_links.extra_names)} extra names, each file counted once)",
        f"  sparse       {_n(p.sparse_files)} files with fewer bytes allocated than their size",
        "",
    ]
    if p.largest_directories:
        out.append("Largest directories (entries):")
        out += [f"  {d.entries:>12,}  {printable(d.path)}" for d in p.largest_directories]
        out.append("")
    if p.directory_sizes.count:
        out.append("Entries per directory:")
        out += _histogram(p.directory_sizes, as_bytes=False)
        out += [_percentiles(p.directory_sizes, as_bytes=False), ""]
    if p.file_sizes.count:
        out.append("File sizes:")
        out += _histogram(p.file_sizes, as_bytes=True)
        out += [_percentiles(p.file_sizes, as_bytes=True), ""]
    x = p.xattrs
    if not x.supported:
        out += ["Extended attributes: not supported by this filesystem (answers left unknown)", ""]
    elif x.sample_size:
        scope = ("all" if x.sample_size >= x.population
                 else f"a random sample of {_n(x.sample_size)} of")
        out.append(f"Extended attributes ({scope} {_n(x.population)} files and directories):")
        out.append(f"  with attributes  {_n(x.inodes_with_xattrs)} of {_n(x.sample_size)}")
        d = x.bytes_per_inode
        out.append(f"  bytes per inode  median {d.median}, p90 {d.p90}, max {d.maximum} "
                   "(names without namespace prefix + values)")
        n = x.attributes_per_inode
        out.append(f"  attributes       median {n.median}, p90 {n.p90}, max {n.maximum} per inode")
        if x.largest_value_name:
            out.append(f"  largest value    {x.largest_value} B ({printable(x.largest_value_name)} "
                       f"on {printable(x.largest_value_path or '')})")
        out.append("")
    pr = p.problems
    if pr.unreadable_directories or pr.unreadable_entries or pr.vanished \
            or pr.other_filesystems_skipped:
        out.append("Not measured:")
        if pr.unreadable_directories:
            out.append(f"  {_n(pr.unreadable_directories)} unreadable directories "
                       "(their content is missing)")
        if pr.unreadable_entries:
            out.append(f"  {_n(pr.unreadable_entries)} entries that could not be examined")
        if pr.vanished:
            out.append(f"  {_n(pr.vanished)} entries vanished during the scan")
        if pr.other_filesystems_skipped:
            out.append(f"  {_n(pr.other_filesystems_skipped)} mount points skipped "
                       "(--one-file-system)")
        out += [f"    {printable(e)}" for e in pr.examples]
        out.append("")
    out.append("Workload answers (--write-workload FILE to save them):")
    for key, value in p.answers.model_dump().items():
        out.append(f"  {key} = {'unknown' if value is None else value}")
    return "\n".join(out) + "\n"
