"""Fleet results made without Ansible: the role's own collect.sh run on this machine over a
captured tree (XFS_ADVISOR_SYSROOT), its payload stored by the role's store.py, as the playbook
does; then the folder copied under other host names (scripts/bench_fleet.py, tests/test_fleet.py).
And with Ansible: ansible/playbook.yml run on an inventory, and the report over what it stored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import require

REPO = Path(__file__).resolve().parent.parent
ROLE_FILES = REPO / "ansible" / "roles" / "xfs_advisor" / "files"
PLAYBOOK = REPO / "ansible" / "playbook.yml"
BIN = Path(sys.executable).parent
TOOL = BIN / "xfs-advisor"
#: A playbook run's recap: the counts (ok, changed, failed, ...) by host.
Recap = dict[str, dict[str, int]]


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


def ansible_env(tmp: Path, **more: str) -> dict[str, str]:
    """What ansible-playbook runs with in a test: its home and temporary folders under `tmp`,
    no colours, no retry files, no deprecation warnings; `more` set on top."""
    home = tmp / "ansible-home"
    return {**os.environ, "ANSIBLE_HOME": str(home), "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
            "ANSIBLE_REMOTE_TEMP": str(home / "remote-tmp"), "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_DEPRECATION_WARNINGS": "0", **more}


def run_playbook(inventory: dict[str, Any], tmp: Path, *extra: str, rc: int = 0,
                 env: dict[str, str] | None = None, offline: bool = False,
                 timeout: float = 600) -> tuple[str, Recap]:
    """Run ansible/playbook.yml on `inventory` (written to TMP/inventory.json), which must end
    with exit code `rc`: its output and the recap's counts by host. `env`: instead of
    ansible_env(tmp). `offline`: in a network namespace of its own (`unshare -n`: only a
    loopback that is down), so that nothing the play runs can reach a network."""
    require((BIN / "ansible-playbook").exists(), "needs ansible-playbook (pip install -e .[test])")
    path = tmp / "inventory.json"
    path.write_text(json.dumps(inventory))
    argv = [str(BIN / "ansible-playbook"), "-i", str(path), str(PLAYBOOK), *extra]
    if offline:
        argv = ["unshare", "--net", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env or ansible_env(tmp),
                          timeout=timeout, check=False)
    assert proc.returncode == rc, proc.stdout[-6000:] + proc.stderr[-2000:]
    recap: Recap = {}
    for host, counts in re.findall(r"^(\S+)\s+: (ok=.*)$", proc.stdout, re.M):
        recap[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
    return proc.stdout, recap


def report_hosts(results: Path) -> dict[str, dict[str, Any]]:
    """`xfs-advisor fleet --json RESULTS`, run as a process: each host's entry, by name."""
    proc = subprocess.run([str(TOOL), "fleet", "--json", str(results)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return {h["host"]: h for h in json.loads(proc.stdout)["hosts"]}
