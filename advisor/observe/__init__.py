"""`xfs-advisor observe`: watch live XFS filesystems read-only, relate what the kernel counts to
their geometry and to the guide's rules, and measure workload answers."""
