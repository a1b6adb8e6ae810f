"""Untrusted text made inert before it reaches a terminal, a shell script, a fio job file or a
Markdown page.

Device models, serials, labels and mount points, a captured host's files, workload files, reports
and a fleet host's error messages all come from outside: a mount point `/srv/x\\ntouch /tmp/P`
would be a command line in a saved script, a model `Evil\\e]0;title\\a\\e[2J` would retitle and
clear the terminal that prints it, a `;` in a fio `directory=` cuts the path. Every such string
goes through one of these functions on its way out:

- `terminal(text)`: one line for a terminal or a shell comment. Control characters (C0, DEL,
  C1), bidirectional overrides and isolates (which reorder what a person reads), other invisible
  format characters and lone surrogates are shown escaped (`\\n`, `\\e`, `\\x9b`, `\\u202e`);
  nothing in the result can move the cursor, change the terminal or end the line.
- `terminal_lines(text)`: a whole rendered page: the same, except that line feeds and tabs stay.
- `shell_word(text)`: one word of a POSIX shell command line, quoted (shlex.quote); text a shell
  word cannot carry visibly (a control character, a NUL) is refused with ValueError.
- `shell_comment(text)`: the text of a `# ...` comment line: never a line break in it.
- `fio_name(text)`: a name fio takes literally in a job file (`directory=`, `filename=`,
  a device name inside a job's command): plain letters, digits and `._-/+@`; anything fio would
  interpret (`:` separates files, `;` and `#` start a comment, `$` and `${...}` expand, a line
  break starts an option) is refused with ValueError.
- `markdown_cell(text)`: a table cell or list item of a Markdown page: terminal(), and the
  characters Markdown or HTML would read as markup escaped.
"""

from __future__ import annotations

import re
import shlex
import unicodedata

#: Characters shown by name rather than by number.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e", "\x00": "\\0"}

#: Unicode categories never shown raw: controls, format characters (bidi overrides and isolates,
#: zero-width joiners, the BOM), surrogates, unassigned code points, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def is_hidden(char: str) -> bool:
    """True for a character a terminal would act on or a reader could not see."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def terminal(text: str) -> str:
    """`text` on one line, every control, format or invisible character shown escaped."""
    # isprintable() is False for every hidden category (and a few visible spaces): in C, the
    # usual case costs one pass over the text.
    if text.isprintable():
        return text
    return "".join(_escape(c) if is_hidden(c) else c for c in text)


#: The ASCII characters a page may not hold raw (all controls but line feed and tab, and DEL).
_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _clean_page(text: str, keep: str) -> bool:
    """True when `text` holds no hidden character but those in `keep` (cheaply: in C)."""
    if text.isascii():
        return _ASCII_HIDDEN.search(text.replace("\r", "\x00") if "\r" not in keep else text) \
            is None
    for char in keep:
        text = text.replace(char, "")
    return text.isprintable()


def terminal_lines(text: str) -> str:
    """A page of text for a terminal: line feeds and tabs kept, everything else as terminal()."""
    if _clean_page(text, "\n\t"):
        return text
    return "\n".join("\t".join(terminal(part) for part in line.split("\t"))
                     for line in text.split("\n"))


def shell_comment(text: str) -> str:
    """The text of one `# ...` line of a shell script: no line break, nothing a terminal acts on
    when the script is shown with cat or less."""
    return terminal(text)


def shell_word(text: str) -> str:
    """One shell word, quoted. ValueError when the text holds a character a shell word cannot
    carry visibly (inside quotes a line break is literal to the shell, but a person reading the
    script would see two lines)."""
    if any(is_hidden(c) for c in text):
        raise ValueError(f"{terminal(text)!r} holds control characters: not a shell word")
    return shlex.quote(text)


def shell_line(argv: list[str] | tuple[str, ...]) -> str:
    """A command line of quoted words (shell_word), one line whatever the words hold."""
    return " ".join(shell_word(word) for word in argv)


_FIO_NAME = re.compile(r"[A-Za-z0-9._+@/-]+")


def fio_name(text: str) -> str:
    """`text` unchanged when fio reads it as the literal name it is; ValueError otherwise."""
    if not _FIO_NAME.fullmatch(text) or text.startswith("-"):
        raise ValueError(f"{terminal(text)!r} is not a name fio takes literally (letters, "
                         "digits and ._-/+@ only)")
    return text


#: What Markdown or HTML would read as markup: code, emphasis, links, tags, entities, cells.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&])")


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell or list item: one line, markup characters escaped (an HTML
    renderer of the page then shows them as text: no tag, no link, no entity)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", terminal(text))


def json_text(text: str) -> str:
    """A JSON document with every hidden character inside its strings written as a `\\u` escape.
    JSON escapes C0 controls itself (the only ones left are the whitespace between tokens), but
    DEL, a C1 control or a bidi override is otherwise raw UTF-8, which some terminals act on.
    The same data, safe to print."""
    if _clean_page(text, "\n\r\t"):
        return text
    return "\n".join(_json_line(line) for line in text.split("\n"))


def _json_line(line: str) -> str:
    if line.isprintable():
        return line
    out = []
    for c in line:
        if c in "\r\t" or not is_hidden(c):
            out.append(c)
        elif ord(c) > 0xFFFF:  # beyond the BMP (a tag character): a surrogate pair
            high, low = divmod(ord(c) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        else:
            out.append(f"\\u{ord(c):04x}")
    return "".join(out)
