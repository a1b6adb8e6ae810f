"""What the host runs: parsers on captured text, and the live values on this machine."""

from __future__ import annotations

from pathlib import Path

from advisor.models.environment import Environment, parse_version
from advisor.system.sysroot import SysRoot
from advisor.system.versions import (
    lts_configs,
    parse_cpu_list,
    parse_meminfo,
    parse_mkfs_version,
    read_environment,
)


def test_parsers() -> None:
    assert parse_mkfs_version("mkfs.xfs version 6.1.0\n") == "6.1.0"
    assert parse_mkfs_version("mkfs.xfs version 5.10\n") == "5.10"
    assert parse_mkfs_version("garbage") is None
    assert parse_meminfo("MemTotal:       24684092 kB\nMemFree: 1 kB\n") == 24684092 * 1024
    assert parse_cpu_list("0-3,8,10-11") == 7
    assert parse_cpu_list("0") == 1
    assert parse_cpu_list("x-y") is None
    assert parse_version("6.1.0-18-amd64") == (6, 1)
    assert parse_version("5.10") == (5, 10)
    assert parse_version(None) is None


def test_version_comparison() -> None:
    assert Environment(xfsprogs_version="6.8.0").xfsprogs_at_least(6, 8)
    assert not Environment(xfsprogs_version="6.1.0").xfsprogs_at_least(6, 8)
    assert not Environment().xfsprogs_at_least(1, 0)


def test_lts_configs_sorted_by_kernel(tmp_path: Path) -> None:
    for v in ("6.1", "4.19", "5.10", "5.4"):
        (tmp_path / f"lts_{v}.conf").write_text("[metadata]\n")
    (tmp_path / "dax_x86_64.conf").write_text("")
    assert list(lts_configs(tmp_path)) == ["4.19", "5.4", "5.10", "6.1"]


def test_live_environment() -> None:
    env = read_environment(SysRoot())
    assert env.xfsprogs_version and parse_version(env.xfsprogs_version)
    assert env.kernel and env.memory_bytes and env.memory_bytes > 0
    assert env.cpu_count and env.cpu_count >= 1


def test_captured_environment(tmp_path: Path) -> None:
    (tmp_path / "sys" / "block").mkdir(parents=True)
    (tmp_path / "sys" / "devices" / "system" / "cpu").mkdir(parents=True)
    (tmp_path / "sys" / "devices" / "system" / "cpu" / "online").write_text("0-15\n")
    (tmp_path / "proc" / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel" / "osrelease").write_text("5.10.0-28-amd64\n")
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:  4096 kB\n")
    env = read_environment(SysRoot.open(tmp_path))
    assert (env.kernel, env.memory_bytes, env.cpu_count) == ("5.10.0-28-amd64", 4096 * 1024, 16)


def test_a_capture_s_own_xfsprogs_limits_the_flags(tmp_path: Path) -> None:
    """A RHEL 8 host captured with its xfsprogs 5.0: the feature flags leave out what that
    mkfs.xfs does not know (bigtime, inobtcount since 5.10, nrext64 since 5.19; it rejects
    them), and a warning says the check ran with the local mkfs.xfs."""
    from advisor.advice import propose
    from advisor.models.workload import Workload
    from advisor.system.versions import XFSPROGS_FILE, read_environment
    from tests.engine.helpers import TiB, device

    (tmp_path / "sys/block").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("4.18.0-513.el8.x86_64\n")
    (tmp_path / XFSPROGS_FILE).write_text("mkfs.xfs version 5.0.0\n")
    env = read_environment(SysRoot.open(tmp_path), local_xfsprogs=lambda: "6.1.0")
    assert env.target_xfsprogs == "5.0.0" and env.xfsprogs_version == "6.1.0"
    p = propose(device(1 * TiB, rotational=False), Workload(), env=env)
    assert "bigtime" not in " ".join(p.mkfs_options)
    assert "nrext64" not in " ".join(p.mkfs_options) and "reflink=1" in " ".join(p.mkfs_options)
    [warning] = [w.message for w in p.warnings if w.rule == "kernel-compat"]
    assert "xfsprogs 5.0.0" in warning and "bigtime, inobtcount, nrext64" in warning


def test_a_live_capture_records_its_mkfs_version(tmp_path: Path) -> None:
    import os

    import pytest

    from advisor.inspect.capture import capture
    from advisor.system.versions import XFSPROGS_FILE, xfsprogs_version
    if os.geteuid() != 0 or xfsprogs_version() is None:
        pytest.skip("needs root and mkfs.xfs")
    capture(SysRoot(), tmp_path / "live")
    assert (tmp_path / "live" / XFSPROGS_FILE).read_text() == \
        f"mkfs.xfs version {xfsprogs_version()}\n"
