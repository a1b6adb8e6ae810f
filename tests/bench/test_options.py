"""The option checker on its own (no device): what it refuses and why, that everything the
proposal can produce passes, and a fuzz of arbitrary and grammar-built option strings whose
result is checked against rules stated apart from the checker's tables."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.advice import propose
from advisor.bench.options import (
    MOUNT_OPTIONS,
    MkfsOptions,
    MountOptions,
    check_mkfs,
    check_mount,
    checked_side,
    parse_mkfs,
    parse_mount,
)
from advisor.engine.rulebook import load_rulebook
from advisor.errors import BadInput
from advisor.models.bench import SideConfig
from advisor.models.workload import Workload
from advisor.system.argv import pairs_only
from advisor.system.versions import lts_configs
from tests.conftest import REPO, require
from tests.engine.helpers import GiB, TiB, device, environment
from tests.engine.strategies import answers

GOLDEN = REPO / "tests" / "golden"

MKFS_REFUSED = [
    ("-l logdev=/dev/loop7,size=64m", "names another device"),
    ("-l size=64m,logdev=/dev/loop7", "names another device"),
    ("-l internal=0", "external log"),
    ("-r rtdev=/dev/loop7", "realtime section"),
    ("-r extsize=64k", "realtime section"),
    ("-d rtinherit=1", "realtime section"),
    ("-d name=/dev/loop7", "names the file or device to format"),
    ("-d file,name=/tmp/x.img,size=1g", "formats a regular file"),
    ("-d file=0", "formats a regular file"),
    ("-p /tmp/protofile", "protofile"),
    ("-N", "dry run"),
    ("-n size=64k -N", "dry run"),
    ("-V", "only prints the version"),
    ("-c options=/etc/mkfs.conf", "only the lts_*.conf"),
    ("-c options=/usr/share/xfsprogs/mkfs/dax_x86_64.conf", "only the lts_*.conf"),
    ("-c options=lts_5.4.conf", "only the lts_*.conf"),
    ("/dev/loop7", "passes no device or file name"),
    ("-n size=64k /dev/loop7", "passes no device or file name"),
    ("-dname=/dev/loop7", "joins a flag and its value"),
    ("-fN", "is not an mkfs.xfs option"),
    ("--", "is not an mkfs.xfs option"),
    ("--dry-run", "is not an mkfs.xfs option"),
    ("-n", "needs a value"),
    ("-n size=/dev/loop7", "names a path"),
    ("-d su=64k,,sw=4", "empty sub-option"),
    ("-d su=64k,bogus=1", "has bogus"),
    ("-d su=lots", "su wants a size"),
    ("-d agcount=-4", "agcount wants a number"),
    ("-m crc=2", "crc wants 0 or 1"),
    ("-n version=1", "version wants 2 or ci"),
    ("-L a/b", "-L wants a label"),
    ("-L waytoolongforxfs", "-L wants a label"),
    ("-L -N", "-L wants a label"),
    ("-n 'size=64k", "cannot be split"),
    ("-n size=64k\x00", "control character"),
    ("-n size=\udcff", "not UTF-8"),
    ("-n size=64k " * 400, "longer than any option string"),
]

MOUNT_REFUSED = [
    ("logdev=/dev/loop7", "names another device"),
    ("rtdev=/dev/loop7", "names another device"),
    ("ro", "mounts read-only"),
    ("noatime,ro", "mounts read-only"),
    ("norecovery", "skips log recovery"),
    ("remount", "changes an existing mount"),
    ("bind", "changes an existing mount"),
    ("loop", "loop device"),
    ("offset=4096", "loop device"),
    ("context=/etc", "names a path"),
    ("x-mount.mkdir", "is not a mount option validate passes"),
    ("nobarrier", "is not a mount option validate passes"),
    ("logbufs=9", "logbufs wants 2 to 8"),
    ("logbsize=huge", "logbsize wants a size"),
    ("noatime=1", "noatime wants no value"),
    ("noatime\x07", "control character"),
]


@pytest.mark.parametrize(("text", "reason"), MKFS_REFUSED)
def test_mkfs_options_refused_with_their_reason(text: str, reason: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_mkfs(text)
    message = str(err.value)
    assert message.startswith("--mkfs-options: ") and reason in message, message
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize(("text", "reason"), MOUNT_REFUSED)
def test_mount_options_refused_with_their_reason(text: str, reason: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_mount(text)
    message = str(err.value)
    assert message.startswith("--mount-options: ") and reason in message, message
    assert "\n" not in message


def test_the_offending_option_is_named() -> None:
    with pytest.raises(BadInput, match=r"-l logdev=/dev/loop7,size=64m names another device"):
        parse_mkfs("-n size=64k -l logdev=/dev/loop7,size=64m")
    with pytest.raises(BadInput, match=r"logdev=/dev/loop7 names another device"):
        parse_mount("noatime,logdev=/dev/loop7")


def test_flags_validate_adds_itself_are_dropped() -> None:
    checked = parse_mkfs("-f -K -q -n size=64k")
    assert checked.argv() == ["-n", "size=64k"]
    assert checked.dropped == ("-f", "-K", "-q")


def test_a_typed_result_keeps_the_options_as_given() -> None:
    checked = parse_mkfs("-d su=64k,sw=4 -i sparse -L scratch")
    assert checked.argv() == ["-d", "su=64k,sw=4", "-i", "sparse", "-L", "scratch"]
    assert checked.options[0].suboptions == (("su", "64k"), ("sw", "4"))
    assert checked.options[1].suboptions == (("sparse", None),)
    mount = parse_mount(" noatime , logbsize=256k,")
    assert mount.as_list() == ["noatime", "logbsize=256k"]
    assert parse_mkfs(None).argv() == [] and parse_mount("").as_list() == []


def test_an_installed_lts_feature_set_passes_and_its_copy_does_not(tmp_path: Path) -> None:
    confs = lts_configs()
    require(bool(confs), "xfsprogs installs no lts_*.conf here")
    path = next(iter(confs.values()))
    assert parse_mkfs(f"-c options={path}").argv() == ["-c", f"options={path}"]
    copy = tmp_path / Path(path).name
    copy.write_text(Path(path).read_text())
    with pytest.raises(BadInput, match="only the lts_"):
        parse_mkfs(f"-c options={copy}")


def test_checked_side_drops_and_refuses() -> None:
    side = SideConfig(label="B", mkfs_options=["-f", "-n", "size=64k"], mount_options=["noatime"])
    assert checked_side(side).mkfs_options == ["-n", "size=64k"]
    with pytest.raises(BadInput, match="side B mount options: noatime,ro holds a comma"):
        checked_side(side.model_copy(update={"mount_options": ["noatime,ro"]}))
    with pytest.raises(BadInput, match=r"side A mkfs\.xfs options: -l logdev=/dev/sdz"):
        checked_side(SideConfig(label="A", mkfs_options=["-l", "logdev=/dev/sdz"]))


# ---- everything the proposal can produce passes ----------------------------------------------

def test_every_golden_proposal_passes() -> None:
    files = sorted(GOLDEN.glob("*.json"))
    assert files
    for path in files:
        proposal = json.loads(path.read_text())["proposal"]
        assert check_mkfs(proposal["mkfs_options"]).argv() == proposal["mkfs_options"], path
        assert check_mount(proposal["mount_options"]).as_list() == proposal["mount_options"]
        line = path.with_suffix(".mkfs").read_text().split()
        assert check_mkfs(line[1:-1]).argv() == line[1:-1], path


def _rule_examples() -> list[list[str]]:
    """The expected options of every rule's worked examples (rules/*/*.toml `[[examples]]`)."""
    found = []
    for path in sorted((REPO / "rules").glob("*/*.toml")):
        for example in tomllib.loads(path.read_text()).get("examples", []):
            options = example.get("expect", {}).get("options")
            if options:
                found.append(options)
    return found


def test_every_rule_example_passes() -> None:
    examples = _rule_examples()
    assert len(examples) >= 10
    for options in examples:
        # refused on purpose (another device; DAX); fit() names them as not applied
        if any("logdev=" in o or o in ("dax", "dax=always") for o in options):
            with pytest.raises(BadInput, match=r"names another device|dax(=always)? is refused"):
                (check_mkfs if options[0].startswith("-") else check_mount)(options)
            continue
        if options[0].startswith("-"):
            # -K is dropped: validate makes every filesystem with it
            assert check_mkfs(options).argv() == pairs_only(options), options
        else:
            assert check_mount(options).as_list() == options, options


sizes = st.one_of(st.integers(1, 64).map(lambda n: n * GiB),
                  st.sampled_from([300 * GiB, 4 * TiB, 17 * TiB, 100 * TiB]))
BOOK = load_rulebook()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=sizes, rotational=st.none() | st.booleans(),
       cache=st.none() | st.sampled_from(["write back", "write through"]),
       xfsprogs=st.sampled_from(["6.1.0", "6.9.0"]), data=answers)
def test_every_random_proposal_passes(size: int, rotational: bool | None, cache: str | None,
                                      xfsprogs: str, data: dict[str, Any]) -> None:
    # xfsprogs 6.9 makes the AG-concurrency rule say `-d concurrency=`; check=False: this host's
    # mkfs.xfs 6.1 would refuse that in its dry run.
    dev = device(size, rotational=rotational, write_cache=cache)
    p = propose(dev, Workload.model_validate(data), env=environment(xfsprogs), rulebook=BOOK,
                check=False)
    assert check_mkfs(p.mkfs_options).argv() == pairs_only(p.mkfs_options)
    assert check_mount(p.mount_options).as_list() == p.mount_options


# ---- fuzz: whatever comes in, what comes out is on the list -----------------------------------

ALLOWED_FLAGS = {"-b", "-m", "-d", "-i", "-l", "-n", "-s", "-L", "-c"}
DEVICE_KEYS = {"logdev", "rtdev", "name", "file", "rtinherit"}


def assert_mkfs_is_safe(checked: MkfsOptions) -> None:
    """Stated apart from the checker's tables: flag/value pairs of known flags only, no
    sub-option that names a device or file, no path but an installed lts_*.conf."""
    args = checked.argv()
    assert len(args) % 2 == 0
    lts = set(lts_configs().values())
    for flag, value in zip(args[::2], args[1::2], strict=True):
        assert flag in ALLOWED_FLAGS, args
        if flag == "-c":
            assert value.removeprefix("options=") in lts, args
            continue
        assert "/" not in value and "\x00" not in value, args
        assert value.isascii() and value.isprintable() and " " not in value, args
        if flag == "-L":
            continue
        for part in value.split(","):
            key = part.partition("=")[0]
            assert key and key not in DEVICE_KEYS and part != "internal=0", args
    assert check_mkfs(args) == MkfsOptions(checked.options)  # checking again changes nothing


def assert_mount_is_safe(checked: MountOptions) -> None:
    for option in checked.as_list():
        assert "/" not in option and "," not in option and option.isascii(), option
        name = option.partition("=")[0]
        assert name in MOUNT_OPTIONS and name not in {"ro", "logdev", "rtdev", "loop", "bind"}


MKFS_WORDS = st.sampled_from([
    "-n size=64k", "-d su=64k,sw=4", "-l size=64m", "-l internal", "-i size=512,sparse=1",
    "-m crc=1,reflink=0", "-L lbl", "-b size=4096", "-s size=4k", "-f", "-K", "-q", "-N", "-V",
    "-p", "-r", "-c", "-d", "-l", "-L", "--", "-fK", "-dname=/dev/sda", "-l logdev=/dev/sda",
    "-r rtdev=/dev/sda", "-d name=/dev/sda", "-d file,name=/tmp/f,size=1g", "-p /tmp/proto",
    "-c options=/etc/passwd", "/dev/sda", "logdev=/dev/sda", "name=x", "internal=0", "size=",
    "su=64k", ",", "=", "'", '"', "\\", " ", "\t", "\n", "#", "$(id)", ";",
])
MOUNT_WORDS = st.sampled_from([
    "noatime", "logbsize=256k", "logbufs=8", "inode64", "discard", "ro", "rw", "norecovery",
    "logdev=/dev/sda", "rtdev=/dev/sda", "loop", "bind", "remount", "x-mount.mkdir", "defaults",
    "dax=never", "offset=1", "", " ", "=", "/", '"', "\\",
])


def _joined(words: st.SearchStrategy[str], sep: str) -> st.SearchStrategy[str]:
    junk = st.text(max_size=8)
    return st.lists(st.one_of(words, words, junk), max_size=8).map(sep.join)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(max_size=200), _joined(MKFS_WORDS, " "), _joined(MKFS_WORDS, "")))
def test_fuzz_mkfs_text(text: str) -> None:
    try:
        checked = parse_mkfs(text)
    except BadInput as err:
        assert "\n" not in str(err) and str(err).startswith("--mkfs-options: ")
        return
    assert_mkfs_is_safe(checked)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(max_size=200), _joined(MOUNT_WORDS, ","), _joined(MOUNT_WORDS, "")))
def test_fuzz_mount_text(text: str) -> None:
    try:
        checked = parse_mount(text)
    except BadInput as err:
        assert "\n" not in str(err) and str(err).startswith("--mount-options: ")
        return
    assert_mount_is_safe(checked)


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.one_of(MKFS_WORDS, st.text(max_size=12)), max_size=8),
       mount=st.lists(st.one_of(MOUNT_WORDS, st.text(max_size=12)), max_size=5))
def test_fuzz_side_lists(tokens: list[str], mount: list[str]) -> None:
    """What run.execute checks: lists, as a plan built elsewhere (the TUI) holds them."""
    try:
        side = checked_side(SideConfig(label="B", mkfs_options=tokens, mount_options=mount))
    except BadInput as err:
        assert "\n" not in str(err)
        return
    assert_mkfs_is_safe(check_mkfs(side.mkfs_options))
    assert_mount_is_safe(check_mount(side.mount_options))


@pytest.mark.parametrize("xfsprogs", ["6.1.0", "6.9.0"])
def test_a_proposal_changing_most_settings_passes(xfsprogs: str) -> None:
    # 200 writers creating files: their log reservations need more than the default log.
    answers = {"concurrent_writers": 200, "writer_activity": "metadata",
               "must_mount_on_kernel": "5.4", "atime_needed": False,
               "largest_directory_entries": 5_000_000, "access": "mixed",
               "xattr_bytes_per_file": 600,
               "storage": {"nonvolatile_write_cache": False}}
    p = propose(device(100 * GiB, rotational=False, write_cache="write back"),
                Workload.model_validate(answers), env=environment(xfsprogs), rulebook=BOOK,
                check=False)
    assert {"-m", "-d", "-i", "-n", "-l"} <= set(p.mkfs_options[::2]), p.mkfs_options
    assert {"noatime", "logbsize=256k"} <= set(p.mount_options), p.mount_options
    assert check_mkfs(p.mkfs_options).argv() == pairs_only(p.mkfs_options)
    assert check_mount(p.mount_options).as_list() == p.mount_options
