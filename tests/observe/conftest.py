"""The observe tests' shared fixture: a fresh XFS on a loop device, mounted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import loop_device, mounted, require_root_tools, sh

#: mkfs.xfs refuses filesystems under 300 MiB.
FS_BYTES = 512 << 20


@pytest.fixture
def xfs(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """A freshly made XFS on a loop device, mounted: (device, mount point). Indirect
    parametrization gives extra mkfs.xfs options."""
    require_root_tools("losetup", "mkfs.xfs", "mount")
    options: list[str] = list(getattr(request, "param", ()))
    with loop_device(tmp_path / "fs.img", FS_BYTES) as dev:
        sh("mkfs.xfs", "-q", "-f", *options, dev)
        # noatime: a process of the host that only reads this filesystem (a scan of every
        # mount, an `ls` of the test's folder) would otherwise log an access-time update, a
        # metadata change observe rightly counts, and the writers' exact truth would move.
        with mounted(dev, tmp_path / "mnt", "noatime") as mnt:
            yield dev, mnt
