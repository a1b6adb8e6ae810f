"""The Linux console (TERM=linux): its fonts hold the IBM PC character set (cp437: single and
double lines, half blocks, a few arrows) and little else, so rounded corners, eighth blocks,
ellipses, dashes and braille come out as diamonds. A line filter swaps each for its nearest
cp437 character, on every screen, whatever widget drew it."""

from __future__ import annotations

from functools import lru_cache

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

#: What a console font shows: the characters of cp437 (ASCII included).
CONSOLE_CHARS = frozenset(bytes(range(256)).decode("cp437"))

#: Nearest console character for what Textual and Rich draw; anything else not in the font
#: becomes "?".
NEAREST = {
    "╭": "┌", "╮": "┐", "╰": "└", "╯": "┘",
    "━": "─", "┃": "│", "┏": "┌", "┓": "┐", "┗": "└", "┛": "┘", "┣": "├", "┫": "┤",
    "▔": "─", "▁": " ", "▂": " ", "▃": "▄", "▅": "▄", "▆": "█", "▇": "█",
    "▉": "█", "▊": "█", "▋": "▌", "▍": "▌", "▎": " ", "▏": " ",
    "…": "~", "\u2014": "-", "\u2013": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"',
    "\u201d": '"',
    "⏎": "<", "⭘": "o", "✓": "v", "✔": "v", "✗": "x", "✘": "x", "⚠": "!", "●": "o",
    "◆": "*", "⋮": ":",
}


@lru_cache(maxsize=4096)
def console_text(text: str) -> str:
    """`text` with every character a console font lacks replaced (braille by dots)."""
    if all(c in CONSOLE_CHARS for c in text):
        return text
    return "".join(c if c in CONSOLE_CHARS else _nearest(c) for c in text)


def _nearest(char: str) -> str:
    if "\u2800" <= char <= "\u28ff":  # braille (plots): a dot where any dot is set
        return "." if char != "\u2800" else " "
    return NEAREST.get(char, "?")


class ConsoleFont(LineFilter):
    """Keeps every character drawn within a console font."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [Segment(console_text(text), style, control)
                for text, style, control in segments]
