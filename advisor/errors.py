"""Errors the user sees: one line, and an exit code that says whose problem it is.

Exit codes (documented in the README and part of the --json contract):
  0 ok, 1 internal error (a bug), 2 bad input, 3 device problem, 4 system tool missing or failing,
  5 a validation run found the proposal worse (validate only), 6 audit findings at or above
  --fail-on (audit and fleet), 130 interrupted.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BUG = 1
EXIT_BAD_INPUT = 2
EXIT_DEVICE = 3
EXIT_TOOL = 4
EXIT_FINDINGS = 6
EXIT_INTERRUPTED = 130


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
