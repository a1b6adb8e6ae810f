"""What sits below the filesystem, on a hand-written sysfs tree (md and dm do not
exist on this machine): thin provisioning (an LVM thin volume, an LBPME SCSI LUN), dm layers that
drop discards, a partition off the full stripe; and what the proposal says about each."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.inspect.devices import find_device, inspect_devices
from advisor.models.device import Inventory
from advisor.models.workload import Workload
from advisor.system.sysroot import SysRoot
from tests.engine.helpers import environment
from tests.inspect.sysfs_builder import Dev, Part, write_tree

GiB, TiB, KiB = 1 << 30, 1 << 40, 1 << 10
SAS = "pci0000:00/0000:00:02.0/host2/target2:0:0/2:0:0:0"
NVME = "pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0"
DISCARD = {"discard_granularity": 512, "discard_max_bytes": 2199023255040}


@pytest.fixture(scope="module")
def below(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    ssd = dict(rotational=0, **DISCARD)
    devs = [
        # LVM thin: nvme0n1 <- pool_tdata (dm-0) <- pool-tpool (dm-1) <- thin volume (dm-2),
        # a pool without discard passdown: the layers above the SSD take none.
        Dev("nvme0n1", 1 * TiB, "259:0", devpath=NVME, holders=["dm-0"], **ssd),
        Dev("dm-0", 1 * TiB, "253:0", slaves=["nvme0n1"], holders=["dm-1"], rotational=0,
            dm_name="vg-pool_tdata", dm_uuid="LVM-vgUUIDpoolUUID-tdata"),
        Dev("dm-1", 1 * TiB, "253:1", slaves=["dm-0"], holders=["dm-2"], rotational=0,
            dm_name="vg-pool-tpool", dm_uuid="LVM-vgUUIDpoolUUID-tpool"),
        Dev("dm-2", 500 * GiB, "253:2", slaves=["dm-1"], rotational=0, dm_name="vg-thin",
            dm_uuid="LVM-vgUUIDthinUUID"),
        # A thin-provisioned SAN LUN (LBPME), with a partition.
        Dev("sdb", 2 * TiB, "8:16", devpath=SAS, discard_granularity=4096,
            discard_max_bytes=4194304, partitions=[Part("sdb1", 2048, 2 * TiB - (2 << 20))],
            files={"device/scsi_disk/2:0:0:0/thin_provisioning": "1",
                   "device/scsi_disk/2:0:0:0/provisioning_mode": "unmap"}),
        # dm-crypt over an SSD that takes discards, opened without --allow-discards.
        Dev("sdc", 1 * TiB, "8:32", devpath=SAS, holders=["dm-3"], **ssd),
        Dev("dm-3", 1 * TiB, "253:3", slaves=["sdc"], rotational=0, dm_name="secret",
            dm_uuid="CRYPT-LUKS2-0123456789abcdef-secret"),
        # md RAID6 of 6 disks, 512 KiB chunk (2 MiB stripe), partitioned at 1 MiB.
        Dev("md0", 8 * TiB, "9:0", min_io=512 * KiB, opt_io=2048 * KiB,
            md={"level": "raid6", "chunk_size": str(512 * KiB), "raid_disks": "6",
                "layout": "2"},
            partitions=[Part("md0p1", 2048, 8 * TiB - (4 << 20))]),
    ]
    root = write_tree(tmp_path_factory.mktemp("below"), devs)
    return inspect_devices(SysRoot.open(root), probe=False)


def test_thin_provisioning_is_seen(below: Inventory) -> None:
    thin = find_device(below, "vg-thin")
    assert thin.thin.value == "dm-thin" and thin.thin.path == "sys/block/dm-1/dm/uuid"
    lun = find_device(below, "sdb")
    assert lun.thin.value == "lbpme" and lun.thin.note == "provisioning_mode = unmap"
    assert find_device(below, "sdb1").thin.value == "lbpme"
    assert find_device(below, "sdc").thin.value is None
    assert find_device(below, "vg-pool-tpool").thin.value is None  # the pool is not thin itself


def test_a_dm_layer_dropping_discards_is_seen(below: Inventory) -> None:
    assert find_device(below, "secret").discard_below.value == DISCARD["discard_max_bytes"]
    thin = find_device(below, "vg-thin")  # two dm layers down to the SSD
    assert thin.discard_below.value == DISCARD["discard_max_bytes"]
    assert thin.discard_below.path == "sys/block/nvme0n1/queue/discard_max_bytes"
    assert find_device(below, "sdc").discard_below.value is None  # not a dm device


def _warnings(below: Inventory, name: str, rule: str, **answers: object) -> list[str]:
    p = propose(find_device(below, name), Workload.model_validate(answers),
                env=environment())
    return [w.message for w in p.warnings if w.rule == rule]


def test_the_proposal_warns_and_decides_from_them(below: Inventory) -> None:
    [crypt] = _warnings(below, "secret", "discard-passdown")
    assert "cryptsetup open --allow-discards" in crypt
    [thin] = _warnings(below, "vg-thin", "discard-passdown")
    assert "lvchange --discards passdown" in thin
    [part] = _warnings(below, "md0p1", "stack-alignment")
    # 1 MiB is not a multiple of the 2 MiB stripe (512 KiB x 4 data disks): start at 2 MiB.
    assert "starting at sector 4096 (2m)" in part and "2m (512k x 4" in part
    p = propose(find_device(below, "sdb1"), Workload(deleted_per_day=200 * GiB),
                env=environment())
    discard = next(d for d in p.decisions if d.setting == "mount discard")
    assert discard.changed and discard.options == ["discard"], discard.reason
    assert "a thin-provisioned LUN (LBPME)" in discard.reason


def test_a_capture_keeps_the_page_size_for_the_block_size_rule(tmp_path: Path) -> None:
    from advisor.inspect.capture import capture
    from advisor.models.environment import PAGE_SIZE_FILE
    from advisor.system.versions import read_environment

    root = write_tree(tmp_path / "arm64", [Dev("nvme0n1", 1 * TiB, "259:0", devpath=NVME)])
    (root / PAGE_SIZE_FILE).parent.mkdir(parents=True)
    (root / PAGE_SIZE_FILE).write_text("33554432\n")  # a 32 MiB PMD: 16 KiB pages
    capture(SysRoot.open(root), tmp_path / "captured")
    assert read_environment(SysRoot.open(tmp_path / "captured")).page_size == 16384
