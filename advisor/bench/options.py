"""What `validate` may pass to mkfs.xfs and mount on either side of a run: a list of what is
allowed, not of what is not.

An option that names another device or a path (`-l logdev=`, `-r rtdev=`, `-d name=`, `-p FILE`,
mount `logdev=`) would make mkfs.xfs or the kernel write where the scratch-device guard never
looked, so only options that shape the one filesystem on the checked device pass: every flag,
sub-option and mount option below has a value of a known form (a size, a number, 0/1, a word
from a short list), and none of those forms can hold a `/`. The one path allowed is
`-c options=` naming one of the feature-set files xfsprogs installs (the proposal uses them),
and its content is checked against the same list.

`validate` calls this on the options typed (advisor.commands.validate) and the run checks both
sides again right before anything is made (advisor.bench.run.execute), whoever built the plan.
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import BadInput
from advisor.models.bench import SideConfig

#: Longest option string accepted: real ones are under 200 characters.
MAX_TEXT = 4096
#: Longest single token shown in an error message.
SHOWN = 200

ANOTHER_DEVICE = ("names another device: validate formats only the device it checked and you "
                  "confirmed")
A_PATH = ("names a path: validate formats only the device it checked and you confirmed, and "
          "passes no files")


@dataclass(frozen=True)
class Value:
    """What a sub-option's or mount option's value may be: `pattern` for `key=value` (None: no
    value), `bare` when the key may also stand alone (`-l internal`, `-i sparse`)."""

    pattern: re.Pattern[str] | None
    bare: bool
    wants: str

    def accepts(self, value: str | None) -> bool:
        if value is None:
            return self.bare or self.pattern is None
        return self.pattern is not None and self.pattern.fullmatch(value) is not None


def _value(regex: str, wants: str, *, bare: bool = False) -> Value:
    return Value(re.compile(regex, re.ASCII), bare, wants)


_NUMBER = r"(?:0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})"
# mkfs.xfs's cvtnum: a number with one unit letter (sectors, blocks, KiB ... EiB).
SIZE = _value(_NUMBER + r"[sbkmgtpeKMGTPE]?", "a size (e.g. 4096, 64k, 512m)")
NUMBER = _value(_NUMBER, "a number")
BOOL = _value(r"[01]", "0 or 1")
BOOL_OR_BARE = _value(r"[01]", "0 or 1 (or nothing, meaning 1)", bare=True)
NUMBER_OR_BARE = _value(_NUMBER, "a number (or nothing)", bare=True)
FLAG = Value(None, True, "no value")
UUID = _value(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", "a UUID")
LABEL = _value(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,11}",
               "a label of at most 12 letters, digits, '.', '_', '+' or '-'")
# The kernel's suffix_kstrtoint: a number with k, m or g.
MOUNT_SIZE = _value(r"[0-9]{1,12}[kKmMgG]?", "a size (e.g. 256k)")


def _choice(*words: str) -> Value:
    return _value("|".join(map(re.escape, words)), " or ".join(words))


#: Sub-options per mkfs.xfs flag (mkfs.xfs(8) of xfsprogs 6.1, plus `-d concurrency=`, which the
#: proposal uses from xfsprogs 6.8). Absent on purpose: -d name/file (what to format), -d
#: rtinherit and all of -r (a realtime section lives on another device), -l logdev (so is an
#: external log).
MKFS_SUBOPTIONS: dict[str, dict[str, Value]] = {
    "-b": {"size": SIZE},
    "-m": {"bigtime": BOOL, "crc": BOOL, "finobt": BOOL, "inobtcount": BOOL, "rmapbt": BOOL,
           "reflink": BOOL, "uuid": UUID},
    "-d": {"agcount": NUMBER, "agsize": SIZE, "concurrency": NUMBER_OR_BARE,
           "cowextsize": NUMBER, "size": SIZE, "sunit": NUMBER, "su": SIZE, "swidth": NUMBER,
           "sw": NUMBER, "noalign": FLAG, "projinherit": NUMBER, "extszinherit": NUMBER,
           "daxinherit": BOOL, "sectsize": SIZE},
    "-i": {"size": SIZE, "perblock": NUMBER, "maxpct": NUMBER, "align": BOOL_OR_BARE,
           "attr": _choice("0", "1", "2"), "projid32bit": BOOL_OR_BARE, "sparse": BOOL_OR_BARE,
           "nrext64": BOOL_OR_BARE},
    "-l": {"agnum": NUMBER, "internal": _value("1", "1 (or nothing)", bare=True), "size": SIZE,
           "version": _choice("1", "2"), "sunit": NUMBER, "su": SIZE, "lazy-count": BOOL,
           "sectsize": SIZE},
    "-n": {"size": SIZE, "version": _choice("2", "ci"), "ftype": BOOL},
    "-s": {"size": SIZE},
}

#: Sub-options refused with their reason, looked up as `key=value` first, then `key`.
MKFS_REFUSED: dict[tuple[str, str], str] = {
    ("-l", "logdev"): ANOTHER_DEVICE + " (validate does not support an external log)",
    ("-l", "internal=0"): "asks for an external log, on another device: validate formats only "
                          "the device it checked and you confirmed",
    ("-d", "name"): "names the file or device to format: validate formats only the device it "
                    "checked and you confirmed, and adds it itself",
    ("-d", "file"): "formats a regular file named by -d name=: validate formats only the "
                    "device it checked and you confirmed",
    ("-d", "rtinherit"): "puts files in a realtime section, which lives on another device: "
                         "validate does not support one",
}

#: Flags refused whatever follows them.
MKFS_REFUSED_FLAGS: dict[str, str] = {
    "-N": "is a dry run: mkfs.xfs would make nothing and each round would measure the "
          "filesystem the round before left",
    "-V": "only prints the version: mkfs.xfs would make nothing and each round would measure "
          "the filesystem the round before left",
    "-p": "names a protofile, whose files mkfs.xfs would copy in: validate passes no files "
          "and measures empty filesystems",
    "-r": "makes a realtime section, which lives on another device (-r rtdev=): validate "
          "formats only the device it checked and you confirmed",
}

#: Flags that change how mkfs.xfs runs, not what it makes: validate always runs `-f -K`, and
#: `-q` only quiets its output. Dropped, so a pasted command line still works.
MKFS_DROPPED = frozenset({"-f", "-K", "-q"})

#: The one sub-option of -c, and the sections its files may hold (their keys as on the command
#: line; xfsprogs' own lts_*.conf files put nrext64 under [metadata]).
CONFIG_SECTIONS = {"block": "-b", "metadata": "-m", "data": "-d", "inode": "-i", "log": "-l",
                   "naming": "-n", "sector": "-s"}
CONFIG_EXTRA = {"-m": {"nrext64": BOOL}}
CONFIG_LIMIT = 64 << 10


@dataclass(frozen=True)
class MkfsOption:
    """One mkfs.xfs flag and its value as given (`-d`, `su=64k,sw=4`), with the value's
    sub-options (`su`, `64k`), (`sw`, `4`); a bare sub-option has the value None."""

    flag: str
    value: str
    suboptions: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class MkfsOptions:
    """Checked mkfs.xfs options, in the order given, and the flags dropped (-f, -K, -q)."""

    options: tuple[MkfsOption, ...]
    dropped: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """The options as mkfs.xfs arguments (without -f -K and the device)."""
        return [arg for o in self.options for arg in (o.flag, o.value)]


@dataclass(frozen=True)
class MountOption:
    """One mount option: `noatime` (value None) or `logbsize=256k`."""

    name: str
    value: str | None

    def text(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"


@dataclass(frozen=True)
class MountOptions:
    """Checked mount options, in the order given."""

    options: tuple[MountOption, ...]

    def as_list(self) -> list[str]:
        return [o.text() for o in self.options]


#: Mount options without a value: generic ones that shape no device, then XFS's (xfs(5)).
_MOUNT_FLAGS = (
    "defaults", "rw", "async", "sync", "dirsync", "atime", "noatime", "relatime", "norelatime",
    "strictatime", "nostrictatime", "lazytime", "nolazytime", "diratime", "nodiratime", "dev",
    "nodev", "suid", "nosuid", "exec", "noexec",
    "attr2", "noattr2", "discard", "nodiscard", "grpid", "bsdgroups", "nogrpid", "sysvgroups",
    "filestreams", "ikeep", "noikeep", "inode32", "inode64", "largeio", "nolargeio", "noalign",
    "swalloc", "wsync", "quota", "usrquota", "uquota", "uqnoenforce", "qnoenforce", "grpquota",
    "gquota", "gqnoenforce", "prjquota", "pquota", "pqnoenforce", "noquota",
)

#: Mount options passed: the generic ones that shape no device and XFS's own (xfs(5)).
MOUNT_OPTIONS: dict[str, Value] = {
    **{name: FLAG for name in _MOUNT_FLAGS},
    "logbsize": MOUNT_SIZE, "logbufs": _value("[2-8]", "2 to 8"), "allocsize": MOUNT_SIZE,
    "sunit": NUMBER, "swidth": NUMBER, "dax": _choice("never", "inode"),
}

_CHANGES_A_MOUNT = ("changes an existing mount instead of mounting the new filesystem: "
                    "validate mounts only the device it checked and you confirmed")
_LOOP = "makes mount set up a loop device over a file: validate attaches its own"

#: Mount options refused with their reason (before anything else, so the reason is specific).
MOUNT_REFUSED: dict[str, str] = {
    "logdev": ANOTHER_DEVICE + " (validate does not support an external log)",
    "rtdev": ANOTHER_DEVICE + " (validate does not support a realtime section)",
    "ro": "mounts read-only: the benchmark writes, so every round would fail; leave it out",
    "norecovery": "skips log recovery and needs a read-only mount: the benchmark writes",
    "remount": _CHANGES_A_MOUNT, "bind": _CHANGES_A_MOUNT, "rbind": _CHANGES_A_MOUNT,
    "move": _CHANGES_A_MOUNT,
    "loop": _LOOP, "offset": _LOOP, "sizelimit": _LOOP,
}


def _shown(token: str) -> str:
    """A token fit for a one-line message: control characters and undecodable bytes escaped,
    long ones cut."""
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in token)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _refuse(what: str, shown: str, reason: str) -> BadInput:
    """One line, whatever the option held: the reason may quote parts of it too."""
    return BadInput(f"{what}: {_shown(shown)} {_shown_reason(reason)}")


def _shown_reason(reason: str) -> str:
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in reason)


def _check_text(text: str, what: str) -> None:
    """Refuse what no option contains, before splitting: an overlong string, NUL and other
    control characters, and bytes that were not UTF-8 (surrogate escapes from the command
    line). Spaces, tabs and newlines separate options."""
    if len(text) > MAX_TEXT:
        raise BadInput(f"{what}: {len(text)} characters is longer than any option string "
                       f"({MAX_TEXT} at most)")
    for position, char in enumerate(text):
        if not char.isprintable() and char not in " \t\n":
            raise BadInput(f"{what}: a control character or bytes that are not UTF-8 "
                           f"({ascii(char)[1:-1]} at position {position})")


def parse_mkfs(text: str | None, *, what: str = "--mkfs-options") -> MkfsOptions:
    """mkfs.xfs options typed as one string (split the way a shell would), checked."""
    text = text or ""
    _check_text(text, what)
    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise BadInput(f"{what}: cannot be split as a shell would ({err})") from None
    return check_mkfs(tokens, what=what)


def parse_mount(text: str | None, *, what: str = "--mount-options") -> MountOptions:
    """Mount options typed as one comma-separated string, checked."""
    text = text or ""
    _check_text(text, what)
    return check_mount([o.strip() for o in text.split(",") if o.strip()], what=what)


def check_mkfs(tokens: Sequence[str], *, what: str = "mkfs.xfs options") -> MkfsOptions:
    """Each flag must be one mkfs.xfs takes a value for, written apart from its value (as
    getopt reads it, so nothing is read differently by mkfs.xfs), with every sub-option on the
    list and of the form its key wants. A BadInput names the first one that is not."""
    kept: list[MkfsOption] = []
    dropped: list[str] = []
    i = 0
    while i < len(tokens):
        flag = tokens[i]
        value = tokens[i + 1] if i + 1 < len(tokens) else None
        given = flag if value is None else f"{flag} {value}"
        if flag in MKFS_DROPPED:
            dropped.append(flag)
            i += 1
            continue
        if flag in MKFS_REFUSED_FLAGS:
            raise _refuse(what, given if flag in ("-p", "-r") else flag, MKFS_REFUSED_FLAGS[flag])
        if flag not in MKFS_SUBOPTIONS and flag not in ("-L", "-c"):
            raise _refuse(what, flag, _not_a_flag(flag))
        if value is None:
            raise _refuse(what, flag, "needs a value after it (e.g. -n size=64k)")
        kept.append(_check_value(flag, value, what))
        i += 2
    return MkfsOptions(tuple(kept), tuple(dropped))


def _not_a_flag(token: str) -> str:
    if not token.startswith("-") or token == "-":
        return ("is not an option: validate adds the device it checked itself, and passes no "
                "device or file name")
    if token[:2] in MKFS_SUBOPTIONS or token[:2] in ("-L", "-c"):
        return f"joins a flag and its value: write them apart ({token[:2]} {token[2:]})"
    allowed = " ".join([*MKFS_SUBOPTIONS, "-L", "-c"])
    return f"is not an mkfs.xfs option validate passes (allowed: {allowed}; -f -K -q are ignored)"


def _check_value(flag: str, value: str, what: str) -> MkfsOption:
    given = f"{flag} {value}"
    if flag == "-L":
        if not LABEL.accepts(value):
            raise _refuse(what, given, f"is refused: -L wants {LABEL.wants}")
        return MkfsOption(flag, value, ())
    if flag == "-c":
        return MkfsOption(flag, value, (("options", _check_config(value, what)),))
    suboptions = tuple(_suboption(flag, part, what, given) for part in value.split(","))
    return MkfsOption(flag, value, suboptions)


def _suboption(flag: str, part: str, what: str, given: str,
               allowed: dict[str, Value] | None = None) -> tuple[str, str | None]:
    key, sep, raw = part.partition("=")
    value = raw if sep else None
    reason = MKFS_REFUSED.get((flag, part)) or MKFS_REFUSED.get((flag, key))
    if reason:
        raise _refuse(what, given, reason)
    if "/" in part:
        raise _refuse(what, given, A_PATH)
    table = MKFS_SUBOPTIONS[flag] if allowed is None else allowed
    if not part:
        raise _refuse(what, given, "has an empty sub-option (two commas in a row?)")
    kind = table.get(key)
    if kind is None:
        raise _refuse(what, given, f"has {key}, not a {flag} sub-option validate passes "
                      f"(allowed: {', '.join(table)})")
    if not kind.accepts(value):
        raise _refuse(what, given, f"is refused: {key} wants {kind.wants}")
    return key, value


def _check_config(value: str, what: str) -> str:
    """`-c options=FILE` only for a feature-set file xfsprogs installed (the proposal's
    lts_<kernel>.conf for an older kernel): owned by root in a folder only root can write, and
    holding nothing the command line could not pass."""
    from advisor.system.versions import LTS_DIR, lts_configs

    given = f"-c {value}"
    key, _, path = value.partition("=")
    if key != "options" or path not in lts_configs().values():
        raise _refuse(what, given, f"names a file: only the lts_*.conf feature sets xfsprogs "
                      f"installs in {LTS_DIR} are passed")
    try:
        for place in (path, os.path.dirname(path)):
            info = os.lstat(place)
            if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise _refuse(what, given, f"names a file others can change ({place})")
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > CONFIG_LIMIT:
            raise _refuse(what, given, "names something that is not a small regular file")
        parser = configparser.ConfigParser(inline_comment_prefixes=("#",), interpolation=None)
        parser.read_string(Path(path).read_text(encoding="utf-8"))
    except (OSError, configparser.Error, UnicodeDecodeError) as err:
        raise _refuse(what, given, f"names a file that cannot be read ({err})") from None
    for section in parser.sections():
        flag = CONFIG_SECTIONS.get(section)
        if flag is None:
            raise _refuse(what, given, f"names a file with a [{section}] section, which "
                          "validate does not pass")
        allowed = {**MKFS_SUBOPTIONS[flag], **CONFIG_EXTRA.get(flag, {})}
        for key, setting in parser.items(section):
            _suboption(flag, f"{key}={setting}", what, given, allowed)
    return path


def check_mount(options: Sequence[str], *, what: str = "mount options") -> MountOptions:
    """Each option on the list with a value of its form; one option per item (mount joins them
    with commas)."""
    kept = []
    for option in options:
        name, sep, raw = option.partition("=")
        value = raw if sep else None
        if name in MOUNT_REFUSED:
            raise _refuse(what, option, MOUNT_REFUSED[name])
        if "," in option:
            raise _refuse(what, option, "holds a comma: one option per item")
        if "/" in option:
            raise _refuse(what, option, "names a path: validate mounts only the device it "
                          "checked and you confirmed, on its own mountpoint")
        kind = MOUNT_OPTIONS.get(name)
        if kind is None:
            raise _refuse(what, option, "is not a mount option validate passes (the XFS "
                          "options of xfs(5) and atime, lazytime, sync, nodev, nosuid, noexec "
                          "and the like)")
        if not kind.accepts(value):
            raise _refuse(what, option, f"is refused: {name} wants {kind.wants}")
        kept.append(MountOption(name, value))
    return MountOptions(tuple(kept))


def checked_side(side: SideConfig) -> SideConfig:
    """The side with its options checked (BadInput otherwise) and -f -K -q dropped: what
    advisor.bench.run.execute runs, whoever built the plan."""
    mkfs = check_mkfs(side.mkfs_options, what=f"side {side.label} mkfs.xfs options")
    mount = check_mount(side.mount_options, what=f"side {side.label} mount options")
    return side.model_copy(update={"mkfs_options": mkfs.argv(),
                                   "mount_options": mount.as_list()})
