"""The signals that end the advisor, named once for the command line, the runner, the benchmark's
clean-up and the TUI (which may import nothing of the system layer, so this sits at the bottom)."""

from __future__ import annotations

import signal

#: Signals that end the process the way Ctrl-C does: a `kill`, a closed terminal (an SSH drop),
#: SIGQUIT. Each must let the clean-up run first.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

#: Ctrl-C and the ending signals: what a clean-up holds off and a fork defers.
STOPPING_SIGNALS = (signal.SIGINT, *ENDING_SIGNALS)
