"""What the host runs: parsers on captured text, and the live values on this machine."""

from __future__ import annotations

import os
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


def test_lts_configs_are_listed_again_when_the_folder_changes(tmp_path: Path) -> None:
    (tmp_path / "lts_5.4.conf").write_text("[metadata]\n")
    assert list(lts_configs(tmp_path)) == ["5.4"]
    listed = lts_configs(tmp_path)
    listed["9.9"] = "changed by the caller"
    assert list(lts_configs(tmp_path)) == ["5.4"]  # each caller has its own copy
    (tmp_path / "lts_6.6.conf").write_text("[metadata]\n")
    changed = os.stat(tmp_path).st_mtime_ns
    os.utime(tmp_path, ns=(changed, changed + 1))  # one clock tick may hold both changes
    assert list(lts_configs(tmp_path)) == ["5.4", "6.6"]
    assert lts_configs(tmp_path / "missing") == {}


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


def _captured(tmp_path: Path, target: str) -> Environment:
    """A captured host whose mkfs.xfs reported `target`, read here with the local 6.1.0."""
    from advisor.system.versions import XFSPROGS_FILE

    (tmp_path / "sys/block").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("5.10.0-28-amd64\n")
    (tmp_path / XFSPROGS_FILE).write_text(f"mkfs.xfs version {target}\n")
    return read_environment(SysRoot.open(tmp_path), local_xfsprogs=lambda: "6.1.0")


def test_a_capture_with_an_older_xfsprogs_is_warned_and_gets_its_log_asked(
        tmp_path: Path) -> None:
    """xfsprogs 5.10 on the captured host makes a small log where the local 6.1 makes 512 MiB
    for 1 TiB: the log size is asked for explicitly, and a warning says the check ran locally."""
    from advisor.advice import propose
    from advisor.models.workload import Workload
    from tests.engine.helpers import TiB, device

    p = propose(device(1 * TiB, rotational=False), Workload(), env=_captured(tmp_path, "5.10.0"))
    log = next(d for d in p.decisions if d.setting == "-l size")
    assert log.options == ["-l", "size=512m"], log.reason
    assert "xfsprogs 5.10.0 makes a smaller one" in log.reason
    assert any("older than the local xfsprogs 6.1.0" in w.message for w in p.warnings)


def test_a_capture_with_the_same_xfsprogs_is_not_warned(tmp_path: Path) -> None:
    from advisor.advice import propose
    from advisor.models.workload import Workload
    from tests.engine.helpers import TiB, device

    p = propose(device(1 * TiB, rotational=False), Workload(), env=_captured(tmp_path, "6.1.0"))
    assert not next(d for d in p.decisions if d.setting == "-l size").changed
    assert not any("older than the local" in w.message for w in p.warnings)


def test_concurrency_only_for_a_target_mkfs_that_knows_it() -> None:
    """-d concurrency= is xfsprogs 6.8's: a local 6.8 proposing for a captured 6.1 gives the
    AG count instead."""
    from advisor.advice import propose
    from advisor.models.workload import Workload
    from tests.engine.helpers import GiB, device

    answers = Workload(concurrent_writers=64, writer_activity="metadata")
    options = {}
    for target in (None, "6.1.0"):
        env = Environment(xfsprogs_version="6.8.0", target_xfsprogs=target, cpu_count=4)
        p = propose(device(200 * GiB, rotational=False), answers, env=env, check=False)
        options[target] = next(d for d in p.decisions if d.setting == "-d agcount/agsize").options
    assert options == {None: ["-d", "concurrency=32"], "6.1.0": ["-d", "agcount=32"]}


def test_an_lts_file_of_this_host_is_not_named_for_an_older_captured_mkfs() -> None:
    """`-c options=PATH` names the local xfsprogs' file; for a captured host with an older
    xfsprogs the same features go as explicit flags that mkfs knows."""
    from advisor.engine import draft
    from advisor.engine.rulebook import load_rulebook
    from advisor.models.environment import FeatureSet
    from advisor.models.workload import Workload
    from advisor.system.mkfs import HostMkfs
    from tests.engine.helpers import TiB, device

    dev = device(1 * TiB, rotational=False)
    lts = FeatureSet(version="5.4", path="/usr/share/xfsprogs/mkfs/lts_5.4.conf", features={
        "metadata": {"crc": 1, "finobt": 1, "reflink": 1, "rmapbt": 0, "bigtime": 0,
                     "inobtcount": 0}, "inode": {"sparse": 1}})
    defaults = HostMkfs().defaults(dev).geometry
    chosen = {}
    for target in (None, "5.4.0"):
        env = Environment(xfsprogs_version="6.1.0", target_xfsprogs=target)
        d = draft(dev, Workload(must_mount_on_kernel="5.4"), env=env, defaults=defaults,
                  book=load_rulebook(), feature_sets={"5.4": lts})
        chosen[target] = next(x for x in d.decisions if x.setting == "-m features")
    assert chosen[None].options == ["-c", f"options={lts.path}"]
    assert "-c" not in chosen["5.4.0"].options and "reflink=1" in " ".join(
        chosen["5.4.0"].options)
    assert "bigtime" not in " ".join(chosen["5.4.0"].options), chosen["5.4.0"].options
    assert "may not ship or parse" in chosen["5.4.0"].reason
