"""xfs-advisor: mkfs.xfs and mount advice from the device and the workload, checked by A/B runs."""

from typing import Any

#: The distribution's name, whose installed metadata holds the version (set in pyproject.toml).
DISTRIBUTION = "xfs-advisor"


def __getattr__(name: str) -> Any:
    """`advisor.__version__`: the installed distribution's version, read when first asked for
    (importlib.metadata costs start-up time that `--json` runs should not pay)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # imported from a tree that was never installed
            return "unknown (not installed)"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: Version of every JSON document the advisor prints. Bumped only on an incompatible change.
SCHEMA_VERSION = 1
