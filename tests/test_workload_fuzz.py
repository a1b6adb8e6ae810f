"""Property-based fuzz of workload files: TOML and JSON text built from the real keys of
advisor.models.workload with junk values (wrong types, huge and non-finite numbers, control
characters, deep nesting, bytes that are not UTF-8). `load_workload` either returns a Workload or
raises BadInput; through the CLI a proposal never exits 1, never hangs, and every error is one
JSON document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from _pytest.tmpdir import TempPathFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.answers import load_workload
from advisor.errors import BadInput
from advisor.models.workload import Storage, Workload
from tests.conftest import REPO

HOST = str(REPO / "tests" / "engine" / "data" / "hosts" / "nvme-100g.json")
TOP_KEYS = [k for k in Workload.model_fields if k != "storage"]
STORAGE_KEYS = list(Storage.model_fields)
KEYS = st.one_of(st.sampled_from(TOP_KEYS), st.sampled_from(["colour", "x", "", "storage"]))

# ---- values, as TOML and JSON source text (tokens, so that numbers can be any length) ----

digits = st.integers(1, 6000).map(lambda n: "9" * n)
sane_numbers = st.one_of(st.integers(-10, 10**7).map(str),
                         st.sampled_from(["0", "1", "1024", "65536", "30000", "5e3", "1.5"]))
floats = st.sampled_from(["1e308", "-1e308", "1e-308", "0.0", "-0.0", "3.5", "1e19"])
sizes = st.sampled_from(['"16KiB"', '"1.5GiB"', '"12 parsecs"', '"-4k"', '"9999999PiB"',
                         '"' + "9" * 70 + '"', '"1e9"', '"64 MB"', '"0"'])
choices = st.sampled_from(['"mixed"', '"read-heavy"', '"write-heavy"', '"sometimes"', '"5.10"',
                           '"6.1"', '"/srv/data"', '"srv"', '"/srv/a b"'])
control = st.sampled_from(["\\u0000", "\\u001b[2J", "\\n", "\\t", "\\u202e", "\\u0007"])
strings = st.one_of(
    choices,
    st.builds(lambda a, c: f'"/srv/{a}{c}"', st.text("abc/", max_size=5), control),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters='"\\'),
            max_size=20).map(lambda t: f'"{t}"'))
scalars = st.one_of(sane_numbers, floats, sizes, strings, digits,
                    st.sampled_from(["true", "false"]))


def _nested(base: st.SearchStrategy[str], pair: Callable[[str, str], str],
            depth: int) -> st.SearchStrategy[str]:
    """`base` values, arrays and inline tables of them (a key and its value written by `pair`),
    nested `depth` times more."""
    if depth == 0:
        return base
    inner = _nested(base, pair, depth - 1)
    return st.one_of(base, st.lists(inner, max_size=3).map(lambda v: f"[{', '.join(v)}]"),
                     st.lists(st.tuples(st.sampled_from([*STORAGE_KEYS, "a"]), inner),
                              max_size=3).map(
                         lambda kv: "{" + ", ".join(pair(k, v) for k, v in kv) + "}"))


def toml_value(depth: int) -> st.SearchStrategy[str]:
    """A TOML value: scalars, arrays and inline tables, nested `depth` times more."""
    base = st.one_of(scalars, st.sampled_from(["inf", "-inf", "nan", "1979-05-27",
                                               "07:32:00", "0x_1"]))
    return _nested(base, lambda k, v: f"{k} = {v}", depth)


def json_value(depth: int) -> st.SearchStrategy[str]:
    """A JSON value (with the non-standard numbers Python's parser takes), nested likewise."""
    base = st.one_of(scalars, st.sampled_from(["null", "NaN", "Infinity", "-Infinity"]))
    return _nested(base, lambda k, v: f"{json.dumps(k)}: {v}", depth)


deep = st.integers(500, 60_000).map(lambda n: "[" * n + "]" * n)


@st.composite
def toml_text(draw: st.DrawFn) -> str:
    lines = [f"{draw(KEYS)} = {draw(st.one_of(toml_value(2), deep))}"
             for _ in range(draw(st.integers(0, 6)))]
    if draw(st.booleans()):
        lines.append("[storage]")
        storage_keys = st.sampled_from([*STORAGE_KEYS, "battery"])
        lines += [f"{draw(storage_keys)} = {draw(toml_value(1))}"
                  for _ in range(draw(st.integers(0, 3)))]
    return "\n".join(lines) + "\n"


@st.composite
def json_text(draw: st.DrawFn) -> str:
    pairs = [f"{json.dumps(draw(KEYS))}: {draw(st.one_of(json_value(2), deep))}"
             for _ in range(draw(st.integers(0, 6)))]
    if draw(st.booleans()):
        inner = [f"{json.dumps(draw(st.sampled_from(STORAGE_KEYS)))}: {draw(json_value(1))}"
                 for _ in range(draw(st.integers(0, 3)))]
        pairs.append('"storage": {' + ", ".join(inner) + "}")
    return "{" + ", ".join(pairs) + "}"


@st.composite
def workload_file(draw: st.DrawFn) -> tuple[str, bytes]:
    """(suffix, content): TOML or JSON text, sometimes cut short or with bytes that are not
    UTF-8 spliced in."""
    suffix, text = draw(st.one_of(st.tuples(st.just(".toml"), toml_text()),
                                  st.tuples(st.just(".json"), json_text()),
                                  st.tuples(st.just(".answers"), json_text()),
                                  st.tuples(st.just(".answers"), toml_text())))
    data = text.encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none", "none", "cut", "bytes"]))
    if damage == "cut" and data:
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif damage == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])) \
            + data[at:]
    return suffix, data


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=workload_file())
def test_load_workload_returns_answers_or_raises_bad_input(tmp_path_factory: TempPathFactory,
                                                           case: tuple[str, bytes]) -> None:
    suffix, data = case
    path = tmp_path_factory.mktemp("w") / f"answers{suffix}"
    path.write_bytes(data)
    try:
        workload = load_workload(path)
    except BadInput as err:
        assert "\n" not in err.message and len(err.message) < 2000
    else:
        assert isinstance(workload, Workload)
        if workload.mount_point is not None:
            assert workload.mount_point.isprintable() and " " not in workload.mount_point


# ---- through the CLI: fewer examples, each a fresh interpreter with a timeout ----

def near(*bounds: int | float) -> list[int | float]:
    """The bounds themselves and their neighbours: where a limit that is one off shows."""
    return [v + d for v in bounds for d in (-1, 0, 1)]


#: Answers inside their bounds: a proposal must come out of any mix of them (exit 0), or a
#: refusal of a combination (exit 2 or 3).
valid = st.fixed_dictionaries({}, optional={
    "largest_directory_entries": st.integers(0, 10**12),
    "access": st.sampled_from(["read-heavy", "write-heavy", "mixed"]),
    "fsyncs_per_second": st.floats(0, 1e9),
    "concurrent_writers": st.integers(1, 1_000_000),
    "median_file_size": st.one_of(st.integers(0, 1 << 63), st.sampled_from(["4KiB", "1.5GiB"])),
    "xattr_bytes_per_file": st.integers(0, 1 << 30),
    "largest_xattr_value": st.integers(0, 1 << 16),
    "growth_factor": st.floats(1, 1000),
    "atime_needed": st.booleans(),
    "nfs_32bit_clients": st.booleans(),
    "mount_point": st.sampled_from(["/srv/data", "/", "/a/b/c"]),
    "must_mount_on_kernel": st.sampled_from(["3.12", "5.4", "6.9"]),
})
storage = st.one_of(st.just({}), st.fixed_dictionaries({
    "raid_stripe_unit": st.one_of(st.integers(1, 1 << 30), st.sampled_from(["64KiB", "1GiB"])),
    "raid_data_disks": st.integers(1, 1024)}, optional={"nonvolatile_write_cache": st.booleans()}))
#: One answer at, just inside or just beyond a bound, or of a wrong kind.
edges = st.one_of(
    st.tuples(st.just("largest_directory_entries"), st.sampled_from([*near(10**12), True, "1e3"])),
    st.tuples(st.just("fsyncs_per_second"), st.sampled_from([*near(1e9), 1e308, -1e-9])),
    st.tuples(st.just("concurrent_writers"), st.sampled_from([*near(1_000_000), 0, 2.5])),
    st.tuples(st.just("median_file_size"), st.sampled_from([*near(1 << 63), "8EiB", "1e3"])),
    st.tuples(st.just("xattr_bytes_per_file"), st.sampled_from(near(1 << 30))),
    st.tuples(st.just("largest_xattr_value"), st.sampled_from(near(1 << 16))),
    st.tuples(st.just("eventual_size"), st.sampled_from([*near(1 << 63), 0, "40TiB"])),
    st.tuples(st.just("growth_factor"), st.sampled_from([*near(1000), 1e300, 0.999])),
    st.tuples(st.just("mount_point"), st.sampled_from(["/srv/\x00x", "/srv/\x1b[31m", "rel",
                                                       "/" + "a" * 5000])),
    st.tuples(st.just("must_mount_on_kernel"), st.sampled_from(["10.1", "5", "5.10\n"])),
    st.tuples(st.just("storage"), st.builds(
        lambda su, n: {"raid_stripe_unit": su, "raid_data_disks": n},
        st.sampled_from([*near(1 << 30, 1 << 28, 1 << 21), 3, 512, "1023"]),
        st.sampled_from([*near(1024, 2, 8), 0]))),
)


@st.composite
def plausible(draw: st.DrawFn) -> dict[str, object]:
    answers: dict[str, object] = {**draw(valid), "storage": draw(storage)}
    if draw(st.booleans()):
        key, value = draw(edges)
        answers[key] = value
    if "eventual_size" in answers:
        answers.pop("growth_factor", None)
    return answers


#: Each example is a fresh interpreter and real dry runs (~1.2 s): 20 in the suite keep it near
#: 25 s; set XFS_ADVISOR_CLI_FUZZ to run more (e.g. 500 before a release).
CLI_EXAMPLES = int(os.environ.get("XFS_ADVISOR_CLI_FUZZ", "20"))


@settings(max_examples=CLI_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(answers=plausible(), as_toml=st.booleans())
def test_cli_proposal_never_exits_1_or_hangs(tmp_path: Path, answers: dict[str, object],
                                             as_toml: bool) -> None:
    """Answers near and beyond every bound, written as a file, go all the way to a proposal (and
    its mkfs.xfs -N check) or are refused: exit 0, 2 or 3, never 1, within the timeout."""
    if as_toml:
        lines = [f"{k} = {json.dumps(v)}" for k, v in answers.items() if k != "storage"]
        storage = answers.get("storage") or {}
        assert isinstance(storage, dict)
        lines += ["[storage]"] + [f"{k} = {json.dumps(v)}" for k, v in storage.items()]
        text, name = "\n".join(lines) + "\n", "answers.toml"
    else:
        text, name = json.dumps(answers), "answers.json"
    path = tmp_path / name
    path.write_text(text)
    env = {**os.environ}
    env.pop("XFS_ADVISOR_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "advisor", "--json", "--device-file", HOST,
                           "--workload", str(path)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=60)
    assert proc.returncode in (0, 2, 3), (text, proc.stderr)
    assert "Traceback" not in proc.stderr
    if proc.returncode == 0:
        assert json.loads(proc.stdout)["proposal"]["mkfs_argv"][0] == "mkfs.xfs"
    else:
        error = json.loads(proc.stderr)["error"]
        assert error["exit_code"] == proc.returncode and "\n" not in error["message"]
