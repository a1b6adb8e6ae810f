"""An Ansible connection to a root file system in a folder of this machine (a debootstrap'd
Debian), for the role's bare-host test: ansible-core has no chroot connection (that one is in the
community.general collection). The host's ansible_host is the folder; commands run in it through
chroot(8), files are copied in and out under it. Everything else is the local connection's."""

from __future__ import annotations

import os
import shlex
import shutil

from ansible.plugins.connection.local import DOCUMENTATION as LOCAL_DOCUMENTATION
from ansible.plugins.connection.local import Connection as LocalConnection

CLEAN_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "
             "LANG=C.UTF-8")
DOCUMENTATION = LOCAL_DOCUMENTATION.replace("name: local", "name: chroot_dir", 1)


class Connection(LocalConnection):
    """Commands in the folder through chroot(8)."""

    transport = "chroot_dir"

    def _root(self) -> str:
        root = os.path.realpath(str(self._play_context.remote_addr))
        if not os.path.isfile(os.path.join(root, "etc", "debian_version")):
            raise OSError(f"{root} is not a root file system")
        return root

    def exec_command(self, cmd: str, in_data: bytes | None = None,
                     sudoable: bool = True) -> tuple[int, bytes, bytes]:
        # A clean environment, as an ssh login has: none of this process's (TMPDIR...).
        wrapped = (f"exec chroot {shlex.quote(self._root())} /usr/bin/env -i {CLEAN_ENV} "
                   f"/bin/sh -c {shlex.quote(cmd)}")
        return super().exec_command(wrapped, in_data=in_data, sudoable=sudoable)

    def put_file(self, in_path: str, out_path: str) -> None:
        super().put_file(in_path, self._root() + os.path.normpath("/" + out_path))

    def fetch_file(self, in_path: str, out_path: str) -> None:
        # The local connection's fetch_file is its put_file, which would add the root to out_path.
        shutil.copyfile(self._root() + os.path.normpath("/" + in_path), out_path)
