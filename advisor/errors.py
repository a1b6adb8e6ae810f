"""Errors the user sees: one line, and an exit code that says whose problem it is.

Exit codes (part of the --json contract): HELP_EXIT_CODES lists them as `--help` and the manual
page show them; docs/exit-codes.md says the same.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BUG = 1
EXIT_BAD_INPUT = 2
EXIT_DEVICE = 3
EXIT_TOOL = 4
EXIT_FINDINGS = 6
EXIT_INTERRUPTED = 130

#: The exit codes as `--help` lists them (docs/exit-codes.md says the same).
HELP_EXIT_CODES = """exit codes:
  0    ok
  1    internal error (a bug; XFS_ADVISOR_DEBUG=1 shows the traceback)
  2    bad input (malformed file, impossible value, bad command line)
  3    device problem (unknown, vanished, unsafe for a benchmark)
  4    a system tool is missing or failed (mkfs.xfs, fio, mount, losetup)
  5    validate: B was worse than the defaults on some metric
  6    audit: a finding at or above --fail-on
  130  interrupted
With --json, an error is one JSON document on stderr: {"schema_version": 1, "error": {"kind",
"message", "exit_code"}}."""


class AdvisorError(Exception):
    """An error with a one-line message for the user and an exit code."""

    exit_code = EXIT_BUG
    kind = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BadInput(AdvisorError):
    """The user gave something we cannot use: a malformed file, an impossible value, a bad flag."""

    exit_code = EXIT_BAD_INPUT
    kind = "bad-input"


class DeviceProblem(AdvisorError):
    """A device is unknown, vanished, unreadable or unsafe to use."""

    exit_code = EXIT_DEVICE
    kind = "device"


class ToolProblem(AdvisorError):
    """A system tool (mkfs.xfs, fio, mount, losetup...) is missing or failed."""

    exit_code = EXIT_TOOL
    kind = "tool"


class ProposalBug(AdvisorError):
    """The advisor proposed something mkfs.xfs rejects: a bug in a rule, reported as one."""

    exit_code = EXIT_BUG
    kind = "bug"
