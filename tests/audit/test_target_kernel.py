"""`audit --kernel X.Y`: the kernel the host is moving to. A will-break finding due by it (attr2
and ikeep: Linux 6.18 still mounts with them, any later kernel may refuse them) is breaks, and
--fail-on breaks says whether the new kernel refuses the host's fstab."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main

FSTAB = "UUID=0000-gone /srv/old xfs attr2,nofail 0 0\n"


def _audit(root: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    (root / "sys" / "block").mkdir(parents=True, exist_ok=True)
    (root / "fstab").write_text(FSTAB)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--sysroot", str(root), "audit", "--json", "--fstab", str(root / "fstab"),
                     *args])
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def _attr2(doc: dict[str, Any]) -> dict[str, Any]:
    [found] = [f for fs in doc["filesystems"] for f in fs["findings"] if f["rule"] == "attr2"]
    return found


@pytest.mark.parametrize(("kernel", "severity", "code"), [
    (None, "will-break", 0),
    ("6.18", "will-break", 0),
    ("6.18.44-fc-v669", "will-break", 0),
    ("debian12", "will-break", 0),  # its kernel, 6.1
    ("6.19", "breaks", 6),
    ("7.0", "breaks", 6),
])
def test_a_finding_due_by_the_target_kernel_breaks(tmp_path: Path, kernel: str | None,
                                                    severity: str, code: int) -> None:
    got, doc, err = _audit(tmp_path, "--fail-on", "breaks",
                           *(["--kernel", kernel] if kernel else []))
    assert (got, err) == (code, "")
    found = _attr2(doc)
    assert found["severity"] == severity and found["due_kernel"] == "6.19"
    assert doc["counts"][severity] == 1
    if severity == "breaks":
        assert found["when"].startswith(f"due from Linux 6.19; the target kernel is {kernel}; ")
        assert doc["target_kernel"] == kernel


@pytest.mark.parametrize(("kernel", "message"), [
    ("soon", "--kernel soon: give a kernel version"),
    ("rhel99", "--kernel rhel99: no kernel known for rhel99 (known: debian10,"),
])
def test_a_kernel_that_is_not_one_is_one_line(tmp_path: Path, kernel: str, message: str) -> None:
    code, _, err = _audit(tmp_path, "--kernel", kernel)
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
