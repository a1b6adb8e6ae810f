"""The fstab line. The UUID is only known after mkfs.xfs runs, so the line carries the placeholder
`UUID=<uuid-after-mkfs>`: replace it with what `blkid -s UUID -o value /dev/DEV` prints."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.render.inert import is_hidden

UUID_PLACEHOLDER = "UUID=<uuid-after-mkfs>"
MOUNT_POINT_PLACEHOLDER = "<mount-point>"


def fstab_field(text: str) -> str:
    """One fstab field as fstab(5) writes it: a space, tab, line break, backslash or any control
    character as an octal escape (`/srv/a b` -> `/srv/a\\040b`), so that the line stays one line
    of six fields."""
    return "".join(f"\\{ord(c):03o}" if c in " \\" or is_hidden(c) or c.isspace() else c
                   for c in text)


def fstab_line(mount_options: Sequence[str], mount_point: str | None) -> str:
    """`UUID=<uuid-after-mkfs> MOUNTPOINT xfs OPTIONS 0 0` (XFS is never fsck'd at boot: 0)."""
    options = ",".join(mount_options) or "defaults"
    where = fstab_field(mount_point) if mount_point else MOUNT_POINT_PLACEHOLDER
    return f"{UUID_PLACEHOLDER} {where} xfs {fstab_field(options)} 0 0"
