"""ansible/playbook.yml as an operator drives it, run for real with ansible-playbook (connection
local) on inventory hosts that stand for other machines by reading captured trees: a run with
only some tags, variables of the wrong type, and the gate play."""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fleet_hosts import BIN, PLAYBOOK, report_hosts, run_playbook

#: An fstab line with an option Linux 4.0 removed (a 'breaks' finding) for a disk not there.
OLD_FSTAB = "UUID=0000-gone /srv/old xfs delaylog,nofail 0 0\n"


def _inventory(results: Path, hosts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Hosts that read a captured tree with this checkout's tool (no install)."""
    return {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "ansible_become": False, "xfs_advisor_results_dir": str(results),
                 "xfs_advisor_install": False, "xfs_advisor_command": str(BIN / "xfs-advisor")},
        "hosts": hosts}}


@pytest.mark.slow
def test_a_run_without_the_collection_keeps_the_stored_results(
        tmp_path: Path, shared_dumps: dict[str, Path]) -> None:
    """A rerun with nothing changed is changed=0 (though the collection time is new); --tags
    install fetches nothing: the hosts' stored results stay, none reads "not reached"."""
    results = tmp_path / "results"
    inventory = _inventory(results, {"lvmhost": {
        "xfs_advisor_sysroot": str(shared_dumps["simple-lvm"]), "xfs_advisor_devices": ["sda"]}})
    out, first = run_playbook(inventory, tmp_path)
    assert first["localhost"]["changed"] == 1, out
    stored = (results / "lvmhost" / "audit.out").read_text()
    when = (results / "lvmhost" / "collected_at").read_text()
    time.sleep(1.1)
    # Nothing changed on the host: changed=0, with the time of this collection kept.
    out, again = run_playbook(inventory, tmp_path)
    assert again["localhost"]["changed"] == 0 and again["lvmhost"]["changed"] == 0, out
    assert (results / "lvmhost" / "collected_at").read_text() > when
    out, second = run_playbook(inventory, tmp_path, "--tags", "install")
    assert "TASK [xfs_advisor : Store every host's results]" in out  # the store ran
    assert second["localhost"]["changed"] == 0, out
    assert not (results / "lvmhost" / "error.txt").exists()
    assert (results / "lvmhost" / "audit.out").read_text() == stored
    assert report_hosts(results)["lvmhost"]["status"] == "ok"


@pytest.mark.slow
def test_a_string_where_a_list_is_typed_is_a_failed_host(
        tmp_path: Path, shared_dumps: dict[str, Path]) -> None:
    """`xfs_advisor_devices: sdb` is not proposals for s, d and b: the host fails, by name."""
    results = tmp_path / "results"
    sysroot = str(shared_dumps["simple-lvm"])
    inventory = _inventory(results, {
        "stringhost": {"xfs_advisor_sysroot": sysroot, "xfs_advisor_devices": "sda"},
        "auditstring": {"xfs_advisor_sysroot": sysroot, "xfs_advisor_audit": "/srv/data",
                        "xfs_advisor_pip_args": "--no-deps,--quiet"},
        "listhost": {"xfs_advisor_sysroot": sysroot, "xfs_advisor_devices": ["sda"]}})
    out, _ = run_playbook(inventory, tmp_path)
    hosts = report_hosts(results)
    assert hosts["listhost"]["status"] == "ok", hosts["listhost"]
    assert hosts["stringhost"]["status"] == "failed"
    assert hosts["stringhost"]["error"] == (
        "bad variables: xfs_advisor_devices must be a list (YAML: [a, b], or one '- item' a "
        'line), not the string "sda"'), out
    error = hosts["auditstring"]["error"]
    assert "xfs_advisor_audit must be a list" in error and "xfs_advisor_pip_args must" in error
    assert not (results / "stringhost" / "proposals").exists()


@pytest.mark.slow
def test_tags_serial_and_the_gate(tmp_path: Path, shared_dumps: dict[str, Path]) -> None:
    """The play's serial and max_fail_percentage are there and honoured; with
    xfs_advisor_fail_on the last play is a gate: a host with findings at or above it fails, and
    so does one whose collection failed (nothing to judge is not a pass); --tags collect still
    stores and gates; --tags install collects nothing and fails only the hosts with an error."""
    import yaml

    play = yaml.safe_load(PLAYBOOK.read_text())[0]
    assert play["serial"] == "{{ xfs_advisor_serial | default('100%') }}"
    assert play["max_fail_percentage"] == "{{ xfs_advisor_max_fail_percentage | default(100) }}"
    # Copies: other tests give the shared captures an fstab of their own.
    clean, old = tmp_path / "clean", tmp_path / "old-fstab"
    for tree, fstab in ((clean, ""), (old, OLD_FSTAB)):
        shutil.copytree(shared_dumps["simple-nvme"], tree, symlinks=True)
        (tree / "xfs-advisor-audit").mkdir(exist_ok=True)
        (tree / "xfs-advisor-audit" / "fstab").write_text(fstab)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    results = tmp_path / "results"
    inventory = _inventory(results, {
        "cleanhost": {"xfs_advisor_sysroot": str(clean)},
        "breakhost": {"xfs_advisor_sysroot": str(old)},
        "garbagehost": {"xfs_advisor_sysroot": str(garbage)},
        "stringhost": {"xfs_advisor_sysroot": str(old), "xfs_advisor_audit": "/srv/old"}})
    gate = ("-e", "xfs_advisor_fail_on=breaks")
    out, recap = run_playbook(inventory, tmp_path, *gate, "-e", "xfs_advisor_serial=2", rc=2)
    assert out.count("PLAY [Audit and advise XFS on each host]") == 2, out  # two batches
    assert {h: recap[h]["failed"] for h in ("cleanhost", "breakhost", "garbagehost",
                                            "stringhost")} == {
        "cleanhost": 0, "breakhost": 1, "garbagehost": 1, "stringhost": 1}, out
    assert "audit findings at or above breaks on breakhost" in out
    assert "no audit to judge on stringhost: bad variables: xfs_advisor_audit must be" in out
    assert re.search(r"no audit to judge on garbagehost: the audit did not run to its end "
                     r"\(exit [0-9]+\)", out), out
    hosts = report_hosts(results)
    assert set(hosts) == {"cleanhost", "breakhost", "garbagehost", "stringhost"}
    assert hosts["breakhost"]["counts"]["breaks"] == 1
    # Only the collection (and, always, the store and the gate).
    out, recap = run_playbook(inventory, tmp_path, *gate, "--tags", "collect", rc=2)
    assert "TASK [xfs_advisor : Store every host's results]" in out
    assert recap["breakhost"]["failed"] == 1 and recap["garbagehost"]["failed"] == 1, out
    assert recap["cleanhost"]["failed"] == 0 and recap["localhost"]["changed"] == 0, out
    # Only the install: nothing collected, nothing to judge but the errors this run met.
    out, recap = run_playbook(inventory, tmp_path, *gate, "--tags", "install", rc=2)
    assert "TASK [xfs_advisor : Capture, audit and propose]" not in out
    assert {h: recap[h]["failed"] for h in ("cleanhost", "breakhost", "garbagehost",
                                            "stringhost")} == {
        "cleanhost": 0, "breakhost": 0, "garbagehost": 0, "stringhost": 1}, out
    assert report_hosts(results)["breakhost"]["counts"]["breaks"] == 1  # kept
