"""`xfs-advisor capture DIR`: save what the advisor reads from this machine (sysfs, /proc, and the
libblkid/udev probe results) into DIR, to get advice elsewhere with `--sysroot DIR`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "capture",
        parents=[common],
        help="save this machine's device facts into a folder, for --sysroot elsewhere",
        description="Write exactly the sysfs and /proc files the advisor reads, plus the libblkid "
        "and udev results (asked only as root), into DIR (new or empty). `xfs-advisor --sysroot "
        "DIR devices` then shows the same devices on any machine.",
    )
    p.add_argument("dir", metavar="DIR", help="folder to create (must be new or empty)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from advisor.inspect.capture import capture
    from advisor.models.capture import CaptureDocument
    from advisor.system.sysroot import SysRoot

    source = SysRoot.open(getattr(args, "sysroot", None))
    result = capture(source, Path(args.dir))
    if args.json:
        doc = CaptureDocument(capture=str(result.dest), files=result.files,
                              symlinks=result.symlinks,
                              devices=[d.name for d in result.inventory.devices])
        sys.stdout.write(json.dumps(doc.model_dump(mode="json"), indent=2) + "\n")
    else:
        from advisor.console import out
        from advisor.render.inert import shell_word, terminal

        try:
            where = shell_word(str(result.dest))
        except ValueError:  # a name with control characters: shown escaped, not pasteable
            where = terminal(str(result.dest))
        out(f"captured {len(result.inventory.devices)} devices into {result.dest} "
            f"({result.files} files, {result.symlinks} links); replay with: "
            f"xfs-advisor --sysroot {where} devices\n")
    return 0
