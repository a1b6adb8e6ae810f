"""How long one fsync takes on the storage holding DIR: 4 KiB written and fsynced, N times, in a
new file (so each fsync also writes the filesystem's log, as an appending application's does).
The figure behind the `virtual-disk` fsync cost in rules/mkfs/log-stripe-unit.toml and
rules/mount/logbsize.toml.

    python3 scripts/fsync_cost.py /var/tmp [N]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    block = b"x" * 4096
    fd, path = tempfile.mkstemp(dir=folder, prefix="fsync-cost.")
    try:
        start = time.perf_counter()
        for i in range(rounds):
            os.pwrite(fd, block, i * len(block))
            os.fsync(fd)
        took = time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)
    print(f"{rounds / took:.0f} fsync/s, {took / rounds * 1000:.2f} ms each ({rounds} rounds)")


if __name__ == "__main__":
    main()
