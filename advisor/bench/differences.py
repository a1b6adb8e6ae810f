"""What side B has that side A lacks, one option at a time (every mkfs.xfs sub-option and every
mount option on its own; `su`/`sw` together, as mkfs.xfs takes them): the options attribution
runs one by one, the report names and the counters are chosen for."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.models.bench import SideConfig
from advisor.system.argv import join_atoms, option_atoms


@dataclass(frozen=True)
class Option:
    """One option of B that A lacks, as it goes on top of A."""

    label: str
    mkfs: tuple[tuple[str, str], ...] = ()
    """mkfs.xfs (flag, sub-option) atoms (advisor.system.argv.option_atoms)."""
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
