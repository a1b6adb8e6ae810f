"""Random workload answers for the property tests: every answer optional, each drawn from values
the rules tell apart."""

from __future__ import annotations

from hypothesis import strategies as st

KiB = 1 << 10

answers = st.fixed_dictionaries({}, optional={
    "largest_directory_entries": st.integers(0, 50_000_000),
    "access": st.sampled_from(["read-heavy", "write-heavy", "mixed"]),
    "fsyncs_per_second": st.floats(0, 10_000),
    "concurrent_writers": st.integers(1, 512),
    "xattr_bytes_per_file": st.integers(0, 4000),
    "largest_xattr_value": st.integers(0, 1000),
    "growth_factor": st.floats(1, 500),
    "atime_needed": st.booleans(),
    "nfs_32bit_clients": st.booleans(),
    "must_mount_on_kernel": st.sampled_from(
        ["3.12", "4.19", "5.4", "5.12", "5.15", "6.1", "6.9"]),
    "storage": st.fixed_dictionaries({}, optional={
        "nonvolatile_write_cache": st.booleans(),
    }) | st.builds(lambda su, n: {"raid_stripe_unit": su, "raid_data_disks": n},
                   st.sampled_from([16 * KiB, 64 * KiB, 256 * KiB, 1024 * KiB]),
                   st.integers(1, 24)),
})
