"""The proposal as it can run on the scratch device: a benchmark verdict is only about what the
user was shown if B is that proposal. Where the scratch device (a 4 GiB loop device, say) cannot
take an option the proposal made for a larger device (`-d agsize=80g`), the option is left out and
the report says which and why, before the run and after it.

Whether an option can run is asked of the real mkfs.xfs (`mkfs.xfs -N` on a sparse stand-in of
the scratch device's size, never the device): the whole set first, and only when mkfs.xfs rejects
it, one sub-option at a time, keeping each that still passes with those kept before it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from advisor.models.bench import NotApplied, SideConfig
from advisor.models.differences import join_atoms, option_atoms

if TYPE_CHECKING:
    from advisor.models.proposal import MkfsGeometry

#: `check(mkfs_options)`: None when mkfs.xfs accepts them for the scratch device, else its error.
Check = Callable[[list[str]], str | None]
#: `geometry(mkfs_options)`: what mkfs.xfs -N makes with them on the scratch device.
Geometry = Callable[[list[str]], "MkfsGeometry"]


#: Why an external log never runs in validate (the proposal's `-l logdev=` and `logdev=`).
EXTERNAL_LOG = ("an external log is a second device: validate formats only the device it "
                "checked and you confirmed, so B runs with an internal log (the log-write "
                "figures then show the log sharing the data device, as A's does)")


#: Why validate never runs DAX (options.py refuses `dax=always` and `dax`).
DAX = ("DAX needs persistent memory: validate's scratch device (a loop device, say) is not "
       "DAX-capable, where the kernel would mount with dax=never anyway")


def _not_run(option: str) -> str | None:
    """Why validate never passes this mount option of a proposal (None: it may)."""
    if option.startswith("logdev="):
        return EXTERNAL_LOG
    if option in ("dax", "dax=always"):
        return DAX
    return None


def without_external_log(side: SideConfig) -> tuple[SideConfig, list[NotApplied]]:
    """`side` without `-l logdev=` and mount `logdev=` (and DAX, _not_run), and those
    named as not applied: an option naming another device never reaches validate's mkfs or
    mount (advisor.bench.options refuses them too)."""
    given = list(side.mkfs_options)
    if len(given) % 2:
        return side, []  # not flag/argument pairs: the checks after this refuse it
    options: list[str] = []
    left: list[NotApplied] = []
    for flag, arg in zip(given[::2], given[1::2], strict=True):
        parts = arg.split(",")
        logdev = [p for p in parts if flag == "-l" and p.startswith("logdev=")]
        left += [NotApplied(option=f"-l {p}", reason=EXTERNAL_LOG) for p in logdev]
        rest = ",".join(p for p in parts if p not in logdev)
        if rest:
            options += [flag, rest]
    mount = [m for m in side.mount_options if _not_run(m) is None]
    left += [NotApplied(option=m, reason=reason) for m in side.mount_options
             if (reason := _not_run(m)) is not None]
    if not left:
        return side, []
    return side.model_copy(update={"mkfs_options": options, "mount_options": mount}), left


def fit(side: SideConfig, check: Check) -> tuple[SideConfig, list[NotApplied]]:
    """`side` as the scratch device can run it, and what was left out, with mkfs.xfs's reason.
    Mount options all apply (they depend on the filesystem, which B's mkfs then makes), except
    an external log's `logdev=`, left out with its mkfs option (without_external_log)."""
    side, external = without_external_log(side)
    options = list(side.mkfs_options)
    if len(options) % 2 or check(options) is None:
        return side, external
    kept: list[tuple[str, str]] = []
    left: list[NotApplied] = []
    for atom in option_atoms(options):
        error = check(join_atoms([*kept, atom]))
        if error is None:
            kept.append(atom)
        else:
            left.append(NotApplied(option=f"{atom[0]} {atom[1]}", reason=error))
    ran = side.model_copy(update={"mkfs_options": join_atoms(kept)})
    return ran, external + left


def same_as_defaults(side: SideConfig, geometry: Geometry,
                     scratch: str) -> tuple[SideConfig, list[NotApplied]]:
    """`side` without its mkfs options when, on the scratch device (`scratch`: how to name it),
    mkfs.xfs makes with them the very filesystem it makes without any (a proposal's
    `-d agsize=1g` for a 2 GiB disk, run on a 4 GiB loop device that has 1 GiB AGs anyway): the
    run would measure the defaults against themselves and call it the proposal. They are
    named, as options the scratch device cannot run are."""
    if not side.mkfs_options:
        return side, []
    made, default = geometry(side.mkfs_options), geometry([])
    if made.model_dump(exclude={"mkfs_warnings"}) != default.model_dump(exclude={"mkfs_warnings"}):
        return side, []
    reason = (f"on {scratch} mkfs.xfs makes the same filesystem without it (agcount="
              f"{default.agcount}, agsize {default.agsize_blocks} blocks, log "
              f"{default.log_blocks} blocks): B would be the defaults again")
    left = [NotApplied(option=f"{flag} {value}", reason=reason)
            for flag, value in option_atoms(side.mkfs_options)]
    return side.model_copy(update={"mkfs_options": []}), left
