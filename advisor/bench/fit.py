"""The proposal as it can run on the scratch device: a benchmark verdict is only about what the
user was shown if B is that proposal. Where the scratch device (a 4 GiB loop device, say) cannot
take an option the proposal made for a larger device (`-d agsize=80g`), the option is left out and
the report says which and why, before the run and after it.

Whether an option can run is asked of the real mkfs.xfs (`mkfs.xfs -N` on a sparse stand-in of
the scratch device's size, never the device): the whole set first, and only when mkfs.xfs rejects
it, one sub-option at a time, keeping each that still passes with those kept before it."""

from __future__ import annotations

from collections.abc import Callable

from advisor.models.bench import NotApplied, SideConfig

#: `check(mkfs_options)`: None when mkfs.xfs accepts them for the scratch device, else its error.
Check = Callable[[list[str]], str | None]


#: Sub-options mkfs.xfs takes only together (a stripe unit needs its width): tried as one.
COUPLED = ({"su", "sw"}, {"sunit", "swidth"})


def _atoms(options: list[str]) -> list[tuple[str, str]]:
    """`-d agsize=80g,su=64k,sw=4 -l size=64m` -> [(-d, agsize=80g), (-d, su=64k,sw=4),
    (-l, size=64m)]: one per sub-option, coupled ones (COUPLED) together."""
    atoms = []
    for flag, arg in zip(options[::2], options[1::2], strict=True):
        parts = arg.split(",")
        keys = [p.split("=", 1)[0] for p in parts]
        done: set[int] = set()
        for i in range(len(parts)):
            if i in done:
                continue
            group = next((g for g in COUPLED if keys[i] in g), set())
            together = [j for j in range(i, len(parts)) if keys[j] in group] or [i]
            done.update(together)
            atoms.append((flag, ",".join(parts[j] for j in together)))
    return atoms


def _join(atoms: list[tuple[str, str]]) -> list[str]:
    """The inverse of _atoms: sub-options of one flag together again, in their first order."""
    merged: dict[str, list[str]] = {}
    for flag, part in atoms:
        merged.setdefault(flag, []).append(part)
    return [x for flag, parts in merged.items() for x in (flag, ",".join(parts))]


def fit(side: SideConfig, check: Check) -> tuple[SideConfig, list[NotApplied]]:
    """`side` as the scratch device can run it, and what was left out, with mkfs.xfs's reason.
    Mount options all apply (they depend on the filesystem, which B's mkfs then makes)."""
    options = list(side.mkfs_options)
    if len(options) % 2 or check(options) is None:
        return side, []
    kept: list[tuple[str, str]] = []
    left: list[NotApplied] = []
    for atom in _atoms(options):
        error = check(_join([*kept, atom]))
        if error is None:
            kept.append(atom)
        else:
            left.append(NotApplied(option=f"{atom[0]} {atom[1]}", reason=error))
    ran = side.model_copy(update={"mkfs_options": _join(kept)})
    return ran, left
