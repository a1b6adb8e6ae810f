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
