"""What side B has that side A lacks, one option at a time (every mkfs.xfs sub-option and every
mount option on its own; `su`/`sw` together, as mkfs.xfs takes them): the options attribution
runs one by one, the report names and the counters are chosen for; and the sub-options
(atoms) a proposal is fitted to a scratch device by. Pure: side configurations in, lists out."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.models.bench import SideConfig

#: Sub-options mkfs.xfs takes only together (a stripe unit needs its width): tried as one.
COUPLED = ({"su", "sw"}, {"sunit", "swidth"})


def option_atoms(options: list[str]) -> list[tuple[str, str]]:
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


def join_atoms(atoms: list[tuple[str, str]]) -> list[str]:
    """The inverse of option_atoms: sub-options of one flag together again, in their first order."""
    merged: dict[str, list[str]] = {}
    for flag, part in atoms:
        merged.setdefault(flag, []).append(part)
    return [x for flag, parts in merged.items() for x in (flag, ",".join(parts))]


@dataclass(frozen=True)
class Option:
    """One option of B that A lacks, as it goes on top of A."""

    label: str
    mkfs: tuple[tuple[str, str], ...] = ()
    """mkfs.xfs (flag, sub-option) atoms (option_atoms)."""
    mount: tuple[str, ...] = ()


def options(a: SideConfig, b: SideConfig) -> list[Option]:
    """B's options that A does not have, one per mkfs sub-option (su/sw together) and per mount
    option, in B's order."""
    theirs = set(option_atoms(a.mkfs_options))
    found = [Option(f"{flag} {part}", mkfs=((flag, part),))
             for flag, part in option_atoms(b.mkfs_options) if (flag, part) not in theirs]
    found += [Option(o, mount=(o,)) for o in b.mount_options if o not in a.mount_options]
    return found


def side_for(a: SideConfig, option: Option) -> SideConfig:
    """A with `option` added: side B of that option's run."""
    mkfs = join_atoms([*option_atoms(a.mkfs_options), *option.mkfs])
    return SideConfig(label="B", mkfs_options=mkfs,
                      mount_options=[*a.mount_options, *option.mount],
                      source=f"attribution: {option.label} alone on top of A")
