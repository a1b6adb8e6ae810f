"""The fstab line. The UUID is only known after mkfs.xfs runs, so the line carries the placeholder
`UUID=<uuid-after-mkfs>`: replace it with what `blkid -s UUID -o value /dev/DEV` prints."""

from __future__ import annotations

from collections.abc import Sequence

UUID_PLACEHOLDER = "UUID=<uuid-after-mkfs>"
MOUNT_POINT_PLACEHOLDER = "<mount-point>"


def fstab_line(mount_options: Sequence[str], mount_point: str | None) -> str:
    """`UUID=<uuid-after-mkfs> MOUNTPOINT xfs OPTIONS 0 0` (XFS is never fsck'd at boot: 0)."""
    options = ",".join(mount_options) or "defaults"
    return f"{UUID_PLACEHOLDER} {mount_point or MOUNT_POINT_PLACEHOLDER} xfs {options} 0 0"
