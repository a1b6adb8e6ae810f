"""Text perf reports (command names) is untrusted: a writer named to forge a report line or
drive the terminal, or a name longer than any the kernel keeps (a replayed file may hold one),
comes out of observe's page and JSON as one escaped, bounded piece of its own line; perf's
records, read as JSON lines, keep the name exactly (hypothesis)."""

from __future__ import annotations

import json
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from advisor.console import json_text
from advisor.models.observe import (
    RecordedFilesystem,
    RecordedReading,
    RecordedThread,
    Recording,
    Tracing,
)
from advisor.observe.observation import document_from
from advisor.observe.report import COMMAND_SHOWN, render_text
from advisor.observe.tracepoints import WRITER_EVENT, parse_records
from advisor.render.inert import terminal_lines
from tests.test_inert import HOSTILE

NAMES = st.lists(st.one_of(HOSTILE, st.text(max_size=8)), max_size=12).map("".join)
#: A name from the kernel is bytes: decoded, it never holds a high surrogate (undecodable bytes
#: become \udc80-\udcff), and JSON reads a high one followed by a low one as the character the
#: pair encodes. A name with such a pair cannot come back as it went; no record holds one.
SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
#: Characters a terminal acts on or a reader cannot see (C0 but line feed, DEL, C1, bidi).
HIDDEN = {*map(chr, range(0x20)), "\x7f", *map(chr, range(0x80, 0xA0)), "\u202e", "\u2066",
          "\u200f", "\ufeff", "\u2028", "\u2029"} - {"\n"}


def recording(commands: list[str]) -> Recording:
    reading = RecordedReading(xfs={"log.writes": 0, "trans.async": 0}, block={}, at=1.0,
                              wall=1_790_000_000.0)
    later = reading.model_copy(update={"xfs": {"log.writes": 5, "trans.async": 900},
                                       "at": 3.0})
    fs = RecordedFilesystem(
        mountpoint="/srv/data", device="dm-3", maj_min="253:3", before=reading, after=later,
        tracepoints={}, writer_seconds=2.0, writer_period=10, writers_per_second=[2, 2],
        threads=[RecordedThread(command=c, tid=100 + i, transactions=9 - i % 3,
                                kernel_thread=False) for i, c in enumerate(commands)])
    return Recording(seconds=2.0, filesystems=[fs], tracing=Tracing(method="perf-stat"))


def pages(commands: list[str]) -> dict[str, str]:
    doc = document_from(recording(commands))
    return {"text": terminal_lines(render_text(doc)),
            "json": json_text(json.dumps(doc.model_dump(mode="json"), indent=2))}


def test_table_of_hostile_writer_names() -> None:
    """A line break and a report line, terminal sequences, a bidi override, a long name."""
    names = ["x\nlog-size: fo", "\x1b[2J\x1b]0;t\x07", "\u202eevil", "w" * 5000]
    shown = pages(names)
    text = shown["text"]
    writers = next(line for line in text.splitlines() if "metadata writers" in line)
    assert "x\\nlog-size: fo[100]" in writers and "\\e[2J\\e]0;t\\x07[101]" in writers
    assert "\\u202eevil[102]" in writers
    assert "w" * COMMAND_SHOWN + "...[103]" in writers
    assert "w" * (COMMAND_SHOWN + 1) not in text
    assert not any(line.lstrip().startswith("log-size:") for line in text.splitlines())
    for page in shown.values():
        assert not HIDDEN & set(page), page
    doc = json.loads(shown["json"])
    assert {w["command"] for w in doc["filesystems"][0]["writers"]} == set(names)


@settings(max_examples=60, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=4))
def test_any_writer_name_stays_in_its_line(names: list[str]) -> None:
    """Whatever the names, the page has as many lines as with plain ones, no hidden character,
    and the JSON gives the names back exactly."""
    assume(not any(SURROGATE_PAIR.search(name) for name in names))
    plain = pages([f"n{i}" for i in range(len(names))])
    shown = pages(names)
    assert len(shown["text"].splitlines()) == len(plain["text"].splitlines())
    for page in shown.values():
        assert not HIDDEN & set(page)
    writers = json.loads(shown["json"])["filesystems"][0]["writers"]
    assert sorted(w["command"] for w in writers) == sorted(names)


@given(NAMES)
def test_records_keep_a_command_name_exactly(name: str) -> None:
    """perf's Python hook prints each record as one JSON line: any name, line breaks
    included, is one record's name, and no line of it passes for another record."""
    assume(not SURROGATE_PAIR.search(name))
    line = json.dumps({"event": "xfs__xfs_trans_alloc", "tid": 7, "time": 1_500_000_000,
                       "comm": name})
    (record,) = parse_records(line + "\n")
    assert (record.event, record.tid, record.time, record.command) == (
        WRITER_EVENT, 7, 1.5, name)
