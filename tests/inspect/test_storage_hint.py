"""The storage-kind hint: what a device's own sysfs facts say the storage is, with the file that
says so, and never "single disk" from rotational=1 (RAID LUNs, virtio disks and loop devices all
report it). Hand-written sysfs trees shaped like the kernel's, and the live loop devices."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.engine.rulebook import load_rulebook
from advisor.inspect.devices import find_device, inspect_devices
from advisor.models.device import Inventory, media_label
from advisor.models.workload import Workload
from advisor.system.sysroot import SysRoot
from tests.conftest import loop_device, require_root_tools
from tests.engine.helpers import environment
from tests.inspect.sysfs_builder import Dev, Part, write_tree

TiB = 1 << 40
RAID_HOST = "pci0000:00/0000:00:02.0/host2"
SATA_HOST = "pci0000:00/0000:00:1f.2/ata1/host0"
VIRTIO_SCSI_HOST = "pci0000:00/0000:00:05.0/virtio2/host3"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    root = tmp_path_factory.mktemp("hint-host")
    write_tree(root, [
        Dev("sda", 4 * TiB, "8:0", devpath=f"{RAID_HOST}/target2:2:0/2:2:0:0",
            partitions=[Part("sda1", 2048, 2 * TiB, holders=["dm-0"])]),
        Dev("sdb", 4 * TiB, "8:16", devpath=f"{SATA_HOST}/target0:0:0/0:0:0:0"),
        Dev("sdc", 1 * TiB, "8:32", devpath=f"{VIRTIO_SCSI_HOST}/target3:0:0/3:0:0:0"),
        Dev("sdd", 1 * TiB, "8:48", devpath=f"{SATA_HOST}/target0:0:1/0:0:1:0",
            model="PersistentDisk"),
        Dev("vda", 1 * TiB, "254:0", devpath="pci0000:00/0000:00:04.0/virtio1"),
        Dev("nvme0n1", 1 * TiB, "259:0", rotational=0,
            devpath="pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0"),
        Dev("dm-0", 2 * TiB, "253:0", dm_name="vg0-data", dm_uuid="LVM-abc", slaves=["sda1"]),
        Dev("loop0", 1 * TiB, "7:0", files={"loop/backing_file": "/var/tmp/scratch.img"}),
    ])
    for host_path, driver in ((RAID_HOST, "megaraid_sas"), (SATA_HOST, "ahci"),
                              (VIRTIO_SCSI_HOST, "virtio_scsi")):
        name = host_path.rsplit("/", 1)[1]
        proc = root / "sys" / "devices" / host_path / "scsi_host" / name / "proc_name"
        proc.parent.mkdir(parents=True)
        proc.write_text(driver + "\n")
    return inspect_devices(SysRoot(root), probe=False)


@pytest.mark.parametrize(("name", "kind", "path", "raw"), [
    ("sda", "hardware-raid", f"sys/devices/{RAID_HOST}/scsi_host/host2/proc_name",
     "megaraid_sas"),
    ("sda1", "hardware-raid", f"sys/devices/{RAID_HOST}/scsi_host/host2/proc_name",
     "megaraid_sas"),
    ("vg0-data", "hardware-raid", f"sys/devices/{RAID_HOST}/scsi_host/host2/proc_name",
     "megaraid_sas"),
    ("sdc", "virtual-disk", f"sys/devices/{VIRTIO_SCSI_HOST}/scsi_host/host3/proc_name",
     "virtio_scsi"),
    ("sdd", "cloud-volume", "sys/block/sdd/device/model", "PersistentDisk"),
    ("vda", "virtual-disk", "sys/block/vda",
     "../devices/pci0000:00/0000:00:04.0/virtio1/block/vda"),
    ("nvme0n1", "ssd", "sys/block/nvme0n1", None),
    ("loop0", "virtual-disk", "sys/block/loop0/loop/backing_file", "/var/tmp/scratch.img"),
])
def test_hint_names_its_source(host: Inventory, name: str, kind: str, path: str,
                               raw: str | None) -> None:
    hint = find_device(host, name).storage_hint
    assert hint.value == kind
    assert hint.path == path
    if raw is not None:
        assert hint.raw == raw


def test_a_rotational_disk_on_a_plain_hba_has_no_hint(host: Inventory) -> None:
    sdb = find_device(host, "sdb")
    assert sdb.rotational.value is True
    assert sdb.storage_hint.value is None
    assert sdb.storage_hint.note == "nothing in sysfs says what the storage is"


def _ag_reason(dev_name: str, host: Inventory, **answers: object) -> str:
    device = find_device(host, dev_name)
    workload = Workload.model_validate({"concurrent_writers": 16,
                                        "writer_activity": "metadata", **answers})
    proposal = propose(device, workload, env=environment(), rulebook=load_rulebook())
    decision = next(d for d in proposal.decisions if d.setting == "-d agcount/agsize")
    return f"{decision.value}: {decision.reason}"


def test_rotational_alone_is_not_a_single_disk(host: Inventory) -> None:
    reason = _ag_reason("sdb", host)
    assert "a single spinning disk" not in reason
    assert reason.startswith("agcount=32: ")
    assert "storage of unknown kind" in reason and "guide 2.1.2" in reason


def test_raid_lun_gets_its_ags_and_names_the_driver(host: Inventory) -> None:
    reason = _ag_reason("sda", host)
    assert reason.startswith("agcount=32: ")
    assert "hardware-raid storage" in reason and "megaraid_sas" in reason


def test_answered_single_disk_keeps_the_default(host: Inventory) -> None:
    reason = _ag_reason("sdb", host, storage={"kind": "single-disk"})
    assert reason.startswith("default: ") and "single spinning disk (the answers)" in reason


def test_live_loop_device_is_not_a_spinning_disk(tmp_path: Path) -> None:
    require_root_tools("losetup")
    backing = tmp_path / "hint.img"
    with loop_device(backing, 4 * TiB) as dev:
        inv = inspect_devices(SysRoot(Path("/")), probe=False)
        loop = find_device(inv, dev)
        assert loop.rotational.value is True  # what the kernel reports for a loop device
        assert loop.storage_hint.value == "virtual-disk"
        assert loop.storage_hint.raw == str(backing)
        assert media_label(loop) == "virt"  # not "hdd" in device lists
        reason = _ag_reason(loop.name, inv)
    assert "spinning disk" not in reason
    assert str(backing) in reason
