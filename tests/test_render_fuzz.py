"""Generated text through the whole path to the screen: a hand-written host whose device model,
serial, filesystem label, mount point and dm name are generated strings (control characters,
terminal sequences, line breaks of every kind, any printable unicode), and a fleet host whose
error.txt is one. `devices`, `devices DEV`, `propose`, `audit` and `fleet` (text and Markdown)
print none of those characters raw; fio job files take a generated name literally or refuse it.
In-process and without root, so that each example costs a few scans, not a few interpreters."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.bench import jobs
from advisor.cli import main
from advisor.models.workload import Workload
from advisor.render import inert
from tests.conftest import REPO
from tests.inspect.sysfs_builder import Dev, write_tree

GIB = 1 << 30
#: What `audit` reads for an XFS in a capture: a real xfs_info (mkfs.xfs -N) output.
XFS_INFO = REPO / "tests" / "engine" / "data" / "mkfs" / "6.1.0-100g-defaults.txt"

#: Fragments attackers use (as in tests/test_inert.py), without NUL: no file, mount table or
#: sysfs attribute can hold one.
HOSTILE = st.sampled_from([
    "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\ntouch PWNED\n",
    "\x1b[2J", "\x1b]0;title\x07", "\x9b2J", "\x9d0;t\x9c", "\u202e", "\u2066", "\u200f",
    "\ufeff", "'", '"', "`touch PWNED`", "$(touch PWNED)", "\\", ";", ":", "#", "$", "|",
    "<script>", "[x](y)", "*", " ", "\t", "\x7f", "\x01",
])
#: Any character but NUL and lone surrogates, mixed with the fragments.
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
TEXT = st.lists(st.one_of(st.text(CHARS, max_size=10), HOSTILE), max_size=6).map("".join)


def _mountinfo_path(path: str) -> str:
    """A path as the kernel writes it into mountinfo: only space, tab, newline and backslash
    escaped (octal), everything else raw."""
    return (path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
            .replace("\n", "\\012"))


def _host(root: Path, model: str, serial: str, label: str, mountpoint: str, dm: str) -> None:
    """sda: an XFS mounted on `mountpoint`, with that model, serial and label (libblkid's and
    udev's results as a capture stores them); dm-0 (named `dm`) over sdb."""
    mountinfo = (f"30 1 8:0 / {_mountinfo_path(mountpoint)} rw,relatime - xfs /dev/sda "
                 "rw,attr2,inode64,logbufs=8,logbsize=32k,noquota\n")
    write_tree(root, [Dev("sda", 100 * GIB, "8:0", model=model),
                      Dev("sdb", 100 * GIB, "8:16", holders=["dm-0"]),
                      Dev("dm-0", 100 * GIB, "253:0", dm_name=dm, dm_uuid="LVM-fuzz",
                          slaves=["sdb"])], mountinfo=mountinfo)
    probes = {"probes_version": 1, "errors": {},
              "signatures": {"sda": [{"value": "xfs", "source": "blkid",
                                      "raw": f"TYPE=xfs LABEL={label}"}], "sdb": [], "dm-0": []},
              "udev": {"sda": {"ID_MODEL": model, "ID_SERIAL_SHORT": serial}}}
    (root / "xfs-advisor-probes.json").write_text(json.dumps(probes), encoding="utf-8")
    (root / "xfs-advisor-audit").mkdir()
    shutil.copy(XFS_INFO, root / "xfs-advisor-audit" / "sda.xfs_info")


def _run(*argv: str) -> tuple[int, str, str]:
    """main(argv) in this process: exit code, stdout, stderr (bytes decoded strictly: a lone
    surrogate would fail here)."""
    out, err = io.BytesIO(), io.BytesIO()
    to = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    te = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(to), contextlib.redirect_stderr(te):
        code = main(list(argv))
    return code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8")


def _raw(text: str) -> list[str]:
    """The characters a terminal would act on or a reader could not see, but line feeds."""
    return sorted({c for c in text if inert.is_hidden(c) and c != "\n"})


@settings(max_examples=25, deadline=None)
@given(model=TEXT, serial=TEXT, label=TEXT, mountpoint=TEXT, dm=TEXT)
def test_device_text_never_reaches_the_terminal_raw(model: str, serial: str, label: str,
                                                    mountpoint: str, dm: str) -> None:
    with tempfile.TemporaryDirectory(prefix="render-fuzz-") as tmp:
        root = Path(tmp) / "host"
        _host(root, model, serial, label, "/srv/" + mountpoint, dm)
        for argv in (["devices"], ["devices", "sda"], ["devices", "dm-0"],
                     ["propose", "--device", "sda"], ["audit"], ["audit", "sda"]):
            code, out, err = _run("--sysroot", str(root), *argv)
            assert "internal error" not in err and "Traceback" not in err, (argv, err)
            assert code == 0, (argv, err)
            assert _raw(out) == [], (argv, out)
            assert _raw(err) == [], (argv, err)
            if argv == ["devices", "sda"]:  # shown escaped, all of it, on its line
                assert f"model                {inert.terminal(model)}" in out, out
                assert f"sda is mounted on {inert.terminal('/srv/' + mountpoint)}\n" in out
            if argv[0] == "audit":  # the mount table's line was read whatever the path holds
                assert f"/dev/sda on {inert.terminal('/srv/' + mountpoint)} (mounted" in out


@settings(max_examples=25, deadline=None)
@given(error=TEXT, host=st.text(st.characters(whitelist_categories=("L", "N")), min_size=1,
                                max_size=12))
def test_fleet_error_text_never_reaches_the_terminal_raw(error: str, host: str) -> None:
    with tempfile.TemporaryDirectory(prefix="render-fuzz-") as tmp:
        results = Path(tmp) / "results"
        (results / host).mkdir(parents=True)
        (results / host / "error.txt").write_text(error, encoding="utf-8")
        for extra in ((), ("--markdown",)):
            code, out, err = _run("fleet", str(results), *extra)
            assert code == 0, err
            assert _raw(out) == [] and _raw(err) == [], out


@settings(max_examples=200, deadline=None)
@given(name=TEXT)
def test_a_job_file_takes_any_name_literally_or_refuses_it(name: str) -> None:
    """Whatever the mount folder or device name: either ValueError, or a job file whose every
    line is fio syntax and whose directories are that name, character for character."""
    shape = jobs.shape_for(Workload(), measure_seconds=1.0, fs_bytes=1 << 30)
    for mountpoint, device in ((name, None), ("mnt", name)):
        try:
            text = jobs.jobfile(shape, mountpoint, counters_for=device)
        except ValueError:
            continue
        assert _raw(text) == [], text
        for line in text.split("\n"):
            assert line == "" or line.startswith(("[", "#", ";")) or "=" in line or \
                line.isidentifier(), line
        directories = [ln.removeprefix("directory=") for ln in text.split("\n")
                       if ln.startswith("directory=")]
        assert directories and all(d.startswith(f"{mountpoint}/") for d in directories)
