"""Fleet results made without Ansible: the role's own collect.sh run on this machine over a
captured tree (XFS_ADVISOR_SYSROOT), its payload stored by the role's store.py, as the playbook
does; then the folder copied under other host names (scripts/bench_fleet.py, tests/test_fleet.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROLE_FILES = REPO / "ansible" / "roles" / "xfs_advisor" / "files"
TOOL = Path(sys.executable).parent / "xfs-advisor"


def collect(results: Path, host: str, sysroot: Path, devices: list[str],
            workload: dict[str, object] | None = None, tool: Path = TOOL,
            observe_for: int = 0, observe: tuple[str, ...] = ()) -> Path:
    """RESULTS/HOST as the playbook leaves it for a host that reads `sysroot` (and, with
    `observe_for`, observes the live mount points `observe` for that many seconds)."""
    env = {**os.environ, "XFS_ADVISOR_TOOL": str(tool), "XFS_ADVISOR_SYSROOT": str(sysroot),
           "XFS_ADVISOR_DEVICES": " ".join(devices),
           "XFS_ADVISOR_WORKLOAD": json.dumps(workload or {}),
           "XFS_ADVISOR_OBSERVE_FOR": str(observe_for), "XFS_ADVISOR_OBSERVE": " ".join(observe)}
    out = subprocess.run(["/bin/sh", str(ROLE_FILES / "collect.sh")], env=env, check=True,
                         capture_output=True, text=True).stdout
    payload = re.search(r"XFS-ADVISOR-PAYLOAD:(\S+)", out)
    assert payload, out
    store(results, host, payload=payload.group(1))
    return results / host


def store(results: Path, host: str, *, payload: str = "", error: str = "") -> str:
    """The role's store.py: 'changed' or 'unchanged'."""
    return subprocess.run([sys.executable, str(ROLE_FILES / "store.py"), str(results), host],
                          input=json.dumps({"payload": payload, "error": error}), check=True,
                          capture_output=True, text=True).stdout.strip()


def replicate(source: Path, results: Path, names: list[str]) -> None:
    """Copies of one host's folder under other names (links kept: a capture is full of them)."""
    for name in names:
        shutil.copytree(source, results / name, symlinks=True)
