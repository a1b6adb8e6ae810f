"""The Ansible role as a fleet uses it: ansible-lint's production profile, an install that fails
with its own message in the report, and ansible/playbook.yml run twice against a bare Debian 12
root (debootstrap minbase: no compiler, no pkg-config) installing from a wheelhouse with
--no-index, the second run changing nothing.

The bare root and the wheelhouse's dependencies are made once and kept in XFS_ADVISOR_TEST_CACHE
(default /var/cache/xfs-advisor-tests): debootstrap takes about 3 minutes here, which the suite
pays on its first run only. The root is Debian's minbase plus python3 (Ansible's own need) and
the two packages the role asks the package manager for (python3-venv, xfsprogs): they come from
the Debian mirror when the cache is made, so the playbook's run reaches no network (pip gets
--no-index and the wheelhouse).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, require
from tests.fleet_hosts import BIN, ansible_env, report_hosts, run_playbook

ANSIBLE = REPO / "ansible"
PLUGINS = Path(__file__).resolve().parent / "ansible_plugins" / "connection"
CACHE = Path(os.environ.get("XFS_ADVISOR_TEST_CACHE") or "/var/cache/xfs-advisor-tests")
MIRROR = os.environ.get("XFS_ADVISOR_DEBIAN_MIRROR") or "http://deb.debian.org/debian"
BASE_PACKAGES = "python3,python3-venv,xfsprogs"


def _env(tmp: Path) -> dict[str, str]:
    """Ansible's settings for a bare root reached through the chroot connection plugin."""
    return ansible_env(tmp, ANSIBLE_REMOTE_TEMP="/tmp/.ansible-remote",
                       ANSIBLE_CONNECTION_PLUGINS=str(PLUGINS), ANSIBLE_PIPELINING="1",
                       PATH=f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")


def test_ansible_lint_production_profile(tmp_path: Path) -> None:
    lint = BIN / "ansible-lint"
    require(lint.exists(), "needs ansible-lint (pip install -e .[test])")
    proc = subprocess.run([str(lint), "--profile", "production", "--offline", "--nocolor",
                           "playbook.yml", "roles/xfs_advisor"], cwd=ANSIBLE,
                          capture_output=True, text=True, env=_env(tmp_path), timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.slow
def test_an_install_that_cannot_happen_is_the_hosts_error(tmp_path: Path) -> None:
    """No install source: refused, never a name from a public index; a wheelhouse without the
    tool: pip's own error. Both in the report, and the play goes on."""
    require(shutil.which("apt-get") is not None, "needs Debian's package manager")
    results = tmp_path / "results"
    empty = tmp_path / "empty-wheelhouse"
    empty.mkdir()
    (empty / "README").write_text("no wheels here\n")
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "ansible_become": False, "xfs_advisor_results_dir": str(results),
                 "xfs_advisor_system_packages": []},
        "hosts": {
            "nosource": {"xfs_advisor_venv": str(tmp_path / "venv1")},
            "nowheel": {"xfs_advisor_venv": str(tmp_path / "venv2"),
                        "xfs_advisor_wheelhouse": str(empty),
                        "xfs_advisor_wheel_cache": str(tmp_path / "cache2")},
        }}}
    out, recap = run_playbook(inventory, tmp_path, env=_env(tmp_path), timeout=900)
    assert recap["nosource"]["failed"] == 0 and recap["nowheel"]["failed"] == 0, out
    assert not (tmp_path / "venv1").exists()
    hosts = report_hosts(results)
    assert hosts["nosource"]["error"].startswith("install failed: A source to install from: "
                                                 "no install source: set xfs_advisor_wheelhouse")
    assert hosts["nowheel"]["error"].startswith("install failed: Install xfs-advisor into its "
                                                "virtual environment: ERROR: No matching "
                                                "distribution found for xfs-advisor"), hosts


def _cached_base() -> Path:
    """The bare root as a tarball in the cache, made once with debootstrap."""
    base = CACHE / f"debian12-minbase-{hashlib.sha256(BASE_PACKAGES.encode()).hexdigest()[:8]}.tar"
    if base.exists():
        return base
    require(shutil.which("debootstrap") is not None, "needs debootstrap (apt-get install "
            "debootstrap) to make the bare Debian 12 root once")
    CACHE.mkdir(parents=True, exist_ok=True)
    work = CACHE / f".root-{os.getpid()}"
    try:
        proc = subprocess.run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}",
                               "bookworm", str(work), MIRROR], capture_output=True, text=True,
                              timeout=1800, check=False)
        require(proc.returncode == 0, f"debootstrap failed: {proc.stdout[-300:]}")
        for deb in (work / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            deb.unlink()
        subprocess.run(["tar", "-C", str(work), "-cf", f"{base}.part", "."], check=True)
        os.replace(f"{base}.part", base)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return base


def _wheelhouse(tmp: Path) -> Path:
    """The tool's wheel from this checkout and every dependency's (kept in the cache by the
    dependencies' list: pylibblkid is compiled here, on the build host, once)."""
    key = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:12]
    deps = CACHE / f"wheelhouse-{key}"
    if not deps.exists():
        part = Path(f"{deps}.part-{os.getpid()}")
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(part),
                               str(REPO)], capture_output=True, text=True, timeout=900,
                              check=False)
        require(proc.returncode == 0, f"pip wheel needs the package index once: {proc.stderr}")
        for own in part.glob("xfs_advisor-*.whl"):
            own.unlink()
        os.replace(part, deps)
    house = tmp / "wheelhouse"
    shutil.copytree(deps, house)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(house),
                    str(REPO)], check=True, capture_output=True)
    return house


@pytest.mark.root
@pytest.mark.slow
def test_playbook_installs_on_a_bare_debian_root_from_a_wheelhouse(
        tmp_path: Path, shared_dumps: dict[str, Path]) -> None:
    require(os.geteuid() == 0, "needs root (chroot)")
    require((BIN / "ansible-playbook").exists(), "needs ansible-playbook (pip install -e .[test])")
    base = _cached_base()
    house = _wheelhouse(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    mounts: list[Path] = []
    try:
        subprocess.run(["tar", "-C", str(root), "-xpf", str(base)], check=True)
        # What a booted host has: /proc and /dev (with /dev/pts: the tool's commands run on a
        # pseudo-terminal). /sys stays empty: the host's devices are a capture (below).
        for argv, where in ((["-t", "proc", "proc"], "proc"), (["--rbind", "/dev"], "dev")):
            subprocess.run(["mount", *argv, str(root / where)], check=True)
            mounts.append(root / where)
        _bare_host_runs(root, house, tmp_path, shared_dumps)
    finally:
        for where in reversed(mounts):
            subprocess.run(["umount", "-R", "-l", str(where)], check=False)
        if not any(os.path.ismount(m) for m in mounts):
            shutil.rmtree(root, ignore_errors=True)  # 300 MB


def _bare_host_runs(root: Path, house: Path, tmp_path: Path,
                    shared_dumps: dict[str, Path]) -> None:
    for tool in ("gcc", "cc", "pkg-config", "make"):
        assert not (root / "usr" / "bin" / tool).exists(), f"the bare root has {tool}"
    # The host's device facts: a capture of a real machine, inside the root (a chroot has no
    # /sys of its own).
    shutil.copytree(shared_dumps["simple-nvme"], root / "srv" / "capture", symlinks=True)
    results = tmp_path / "results"
    inventory = {"all": {"vars": {"xfs_advisor_results_dir": str(results)}, "hosts": {"bare": {
        "ansible_connection": "chroot_dir", "ansible_host": str(root),
        "ansible_python_interpreter": "/usr/bin/python3", "ansible_become": False,
        "xfs_advisor_wheelhouse": str(house), "xfs_advisor_sysroot": "/srv/capture",
        "xfs_advisor_devices": ["nvme0n1"], "xfs_advisor_workload": {"concurrent_writers": 8}}}}}
    started = time.monotonic()
    # No network but the wheelhouse: the play runs where no address can be reached.
    play = functools.partial(run_playbook, inventory, tmp_path, offline=True, env=_env(tmp_path),
                             timeout=900)
    out, first = play()
    print(f"first run {time.monotonic() - started:.0f} s")
    assert first["bare"]["changed"] >= 1 and first["bare"]["failed"] == 0, out
    assert first["localhost"]["changed"] == 1, out
    assert "XFS-ADVISOR-PAYLOAD" not in out and "H4sI" not in out  # no archive in the output
    assert (root / "opt" / "xfs-advisor" / "bin" / "xfs-advisor").exists()
    host = report_hosts(results)["bare"]
    assert host["status"] == "ok", host
    [dev] = [d for d in host["devices"] if d["name"] == "nvme0n1"]
    assert dev["proposal"]["mkfs_command"].endswith("/dev/nvme0n1")
    assert dev["proposal"]["same_as_host"] is True  # the bare host's own proposal, the same
    started = time.monotonic()
    out, second = play()
    print(f"second run {time.monotonic() - started:.0f} s")
    assert second["bare"]["changed"] == 0 and second["localhost"]["changed"] == 0, out
    # Uninstall: what the role installed is gone.
    out, third = play("-e", "xfs_advisor_state=absent")
    assert third["bare"]["changed"] == 1, out
    assert not (root / "opt" / "xfs-advisor").exists()
    assert not (root / "var" / "cache" / "xfs-advisor").exists()
