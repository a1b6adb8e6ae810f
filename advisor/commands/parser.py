"""The command line's parser: the subcommands (each `register(subparsers, common)` in
advisor/commands/<name>.py), the options valid before and after a subcommand, `--version`, and the
exit-code table under every `--help`. Command modules import their heavy dependencies inside
`run`, so that building the parser stays cheap.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from advisor.errors import HELP_EXIT_CODES, BadInput

#: Subcommand modules, in the order `--help` lists them.
COMMANDS = ("devices", "capture", "propose", "rules", "explain", "schema", "validate", "profile",
            "observe", "audit", "fleet", "tui", "completion", "manpage")


class Parser(argparse.ArgumentParser):
    """argparse, except that a bad command line is a BadInput like any other: one line (JSON
    under --json) and exit 2, instead of a usage block printed by argparse itself."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("xfs-advisor").strip()
        raise BadInput(f"{command + ': ' if command else ''}{message} (see {self.prog} --help)")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's own, except that the table of exit codes keeps its lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text == HELP_EXIT_CODES:
            return "".join(indent + line + "\n" for line in text.splitlines()).rstrip("\n")
        return super()._fill_text(text, width, indent)


class _Version(argparse.Action):
    """`--version`: the installed package's version (its metadata), read only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the installed version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        import advisor

        print(f"xfs-advisor {advisor.__version__}")
        parser.exit()


def common_options(*, suppress: bool) -> argparse.ArgumentParser:
    """Options valid both before and after the subcommand (`--json devices` = `devices --json`)."""
    default = argparse.SUPPRESS if suppress else None
    p = Parser(add_help=False)
    p.add_argument(
        "--sysroot",
        metavar="DIR",
        default=default,
        help="read DIR/sys and DIR/proc instead of the live system (a captured tree)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print machine-readable JSON on stdout (errors as JSON on stderr)",
    )
    return p


def load(name: str) -> ModuleType:
    """The module of one subcommand."""
    return importlib.import_module(f"advisor.commands.{name}")


def requested_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, if any, found without building the parser."""
    takes_value = {"--sysroot"}
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in takes_value:
            skip = True
        elif not token.startswith("-"):
            return token if token in COMMANDS else None
    return None


def build_parser(only: str | None = None, *, subcommands: bool = True, answers: bool = True
                 ) -> argparse.ArgumentParser:
    """The whole parser, or (with `only`) just the one subcommand being run: importing every
    command module and the workload model costs more than the rest of `devices --json`. Without
    `subcommands`: the options of a run without one (a proposal, the interactive advisor); and
    without `answers` too, not the flag per workload answer (made from the workload model, so
    pydantic), nor abbreviations (`--s` may be an answer's flag as well as --sysroot's)."""
    parser = Parser(
        prog="xfs-advisor",
        description="Propose mkfs.xfs and mount options for a device and a workload, "
        "explain every choice, and validate it with an A/B benchmark.",
        parents=[common_options(suppress=False)],
        epilog=HELP_EXIT_CODES,
        formatter_class=HelpFormatter,
        allow_abbrev=answers,
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = common_options(suppress=True)
    for name in (only,) if only else COMMANDS if subcommands else ():
        load(name).register(sub, common)
    for command in sub.choices.values():
        # Every subcommand's --help ends with the exit codes, unless it has words of its own there.
        if command.epilog is None:
            command.epilog = HELP_EXIT_CODES
            command.formatter_class = HelpFormatter
    if not only:
        # Proposal options are valid without a subcommand too (`xfs-advisor --json --device X`).
        load("propose").add_options(parser, answers=answers)
        load("propose").add_output_options(parser)
    return parser


def _asks_for_help(argv: Sequence[str]) -> bool:
    """-h, --help, or an abbreviation argparse would take for it (--he)."""
    for token in argv:
        if token == "--":
            return False
        if token.startswith(("-h", "--h")):
            return True
    return False


def parse(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command line parsed, by the smallest parser that knows it: its subcommand's alone;
    without a subcommand (a proposal, the interactive advisor: their start-up is what people
    feel), no subcommand module at all, unless help is asked for (it lists them), and no flag
    per answer unless one is given (`xfs-advisor` alone paints its first screen before pydantic
    is loaded). A command line that parser refuses is parsed again by the next larger one, and
    at last by the whole one, whose error names the subcommands. An answer flag not given is
    an attribute the smaller parser leaves out rather than None: advisor.answers reads only
    those given."""
    only = requested_command(argv)
    if only is None and not _asks_for_help(argv):
        for answers in (False, True):
            parser = build_parser(subcommands=False, answers=answers)
            try:
                return parser, parser.parse_args(argv)
            except BadInput:
                pass
    parser = build_parser(only=only)
    return parser, parser.parse_args(argv)
