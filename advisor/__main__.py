"""The process entry point, for `xfs-advisor` and `python -m advisor`.

Ctrl-C must be one line and exit 130 from the first moment, also while modules are still being
imported (pydantic alone takes a tenth of a second): until main() takes over, SIGINT ends the
process here, quietly; nothing has been made yet that would need undoing. The handler is installed
when this module is imported, before anything else (`signal` costs 2 ms: site has loaded enum).
Only the interpreter's own start-up comes first.
"""

import os
import signal
import sys
from types import FrameType, ModuleType

from advisor import SCHEMA_VERSION

#: advisor.errors.EXIT_INTERRUPTED, without importing it first.
_EXIT_INTERRUPTED = 130


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    if "--json" in sys.argv:
        line = (f'{{"schema_version": {SCHEMA_VERSION}, "error": {{"kind": "interrupted", '
                f'"message": "interrupted", "exit_code": {_EXIT_INTERRUPTED}}}}}\n')
    else:
        line = "xfs-advisor: interrupted\n"
    os.write(2, line.encode())
    os._exit(_EXIT_INTERRUPTED)


signal.signal(signal.SIGINT, _interrupted_while_starting)


def _no_pydantic_plugins() -> None:
    """The command line runs with pydantic's plugins off, as PYDANTIC_DISABLE_PLUGINS=__all__
    would have it: it uses none, and looking for them imports importlib.metadata and reads the
    entry points of every installed distribution when the first model is built, about 17 ms of
    CPU on every start (a seventh of `devices --json`). pydantic asks its plugin loader one
    thing, get_plugins(); the loader's module is given here as that function finding none.
    Anything that imported the real loader first keeps it."""
    loader = ModuleType("pydantic.plugin._loader", "pydantic plugins: none (xfs-advisor's CLI)")
    loader.__dict__["get_plugins"] = lambda: ()
    sys.modules.setdefault("pydantic.plugin._loader", loader)


#: The options of a plain interactive start (`xfs-advisor`, `xfs-advisor --sysroot DIR`), each
#: with its value.
_INTERACTIVE_OPTIONS = ("--sysroot", "--rules")


def _plain_interactive(argv: list[str]) -> bool:
    """The interactive advisor with nothing chosen: no subcommand, no option but
    _INTERACTIVE_OPTIONS. (A start it does not recognise, such as an abbreviated option, is
    taken for a command: pydantic_core is then loaded first, as for every command.)"""
    rest = iter(argv)
    for token in rest:
        name = token.split("=", 1)[0]
        if name not in _INTERACTIVE_OPTIONS or ("=" not in token and next(rest, None) is None):
            return False
    return True


def entry() -> int:
    """Run the CLI (main() installs its own Ctrl-C handling as it starts). pydantic_core is
    loaded first, under the quiet handler: an interrupt inside its Rust start-up comes out as a
    PanicException (not a KeyboardInterrupt), which no handler could turn into exit 130. Not for
    the plain interactive advisor: its first screen needs no pydantic (5% of its start-up),
    which its first scan of the devices loads after that screen is drawn, in a thread, where no
    Ctrl-C lands (Python runs signal handlers in the main thread only)."""
    _no_pydantic_plugins()
    if not _plain_interactive(sys.argv[1:]):
        import pydantic_core  # noqa: F401  # loaded for its side effect, see above

    from advisor.cli import main

    code = _EXIT_INTERRUPTED
    try:
        code = main()
        # Done: the output is written, and an interrupt now could only turn a finished run into
        # a SIGINT exit status during the interpreter's shutdown.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:  # in the instant between main's return and the line above
        pass
    return code


if __name__ == "__main__":
    raise SystemExit(entry())
