"""xfs-advisor: mkfs.xfs and mount advice from the device and the workload, checked by A/B runs."""

__version__ = "0.1.0"

#: Version of every JSON document the advisor prints. Bumped only on an incompatible change.
SCHEMA_VERSION = 1
