"""`?`: what each step is for and its keys."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

GENERAL = """\
**Keys everywhere**: `F2` devices, `F3` workload, `F4` proposal, `F5` validate; `?` or `F1` this
help, `q` quit (`F1` and `ctrl+q` inside a text field, where `?` and `q` are typed; `escape` leaves
the field); `ctrl+p` command palette (steps, this screen's actions, theme, keys); `ctrl+t`
light/dark theme; `j`/`k` move in lists as the arrows do. The mouse works too.

**Close this help** with `escape`, `?`, `F1` or `q`.
"""

STEP_HELP = {
    "devices": """\
## Devices
The block devices as they stack (partitions, md, LVM and other dm devices under what they are
built on). Columns: size, HDD/SSD, write cache (`wback` = volatile, flushes sent; `wthru`), FUA,
the stripe mkfs.xfs will use (in brackets when it would ignore it), and the state: `free`, or what
stands in the way (mounted, holds data, misaligned, held by another device).
The right pane shows every fact with where it was read. `Enter` chooses the device (a device in
use asks first), `r` re-reads, `a` audits the XFS filesystem on it (read-only, as `xfs-advisor
audit DEV`), `o` watches its mounted XFS live (rates every second and their plot, findings as
they appear; counters only, read-only: `xfs-advisor observe` also counts tracepoints); in that
view `r` records what the counters show until `r` again, then saves it where asked (the file
`xfs-advisor observe --replay FILE` reports).
""",
    "workload": """\
## Workload
One question per answer the device cannot give. Leave a field empty for "don't know": the advisor
then keeps mkfs.xfs's default for what it drives. Values are checked as you type; the error shows
next to the field. Sizes take `16KiB` (16,384 bytes) or `16k`; `16KB` is decimal (16,000 bytes).
`Tab`/`Enter` go to the next question, `escape` leaves the field (then `q`, `?` work again),
`Enter` goes back in. `ctrl+s` saves the answers to a file (asks before replacing one),
`ctrl+o` loads a file, `ctrl+f` measures a directory of the data to come (as
`xfs-advisor profile` does) and fills in what it can tell.
""",
    "proposal": """\
## Proposal
The mkfs.xfs command and the fstab line, then every decision with its default and reason, warnings,
why old advice is not followed, and what differs from mkfs.xfs's own choices.
`c` sends the mkfs command to the terminal's clipboard (OSC 52: not every terminal takes it),
`f` the fstab line; `s` saves both to a shell script (asks before replacing a file).
""",
    "validate": """\
## Validate
An A/B benchmark: mkfs.xfs defaults against the proposal, on a loop device over a temporary file
(results then reflect the backing storage) or on a scratch device. The target list gives each
device the guard's verdict: usable (erased by the run: confirm by typing its name) or refused and
why (mounted, holding data, swap, read-only, partitions, holders); it is checked again right
before each format.
On a loop device, B is the proposal shown on F4, as far as the loop device can take it (the plan
names what it cannot). `ctrl+r` starts, `escape` cancels cleanly (unmounts and detaches
everything); `q` during a run asks, then cancels the same way before quitting. After a run the
report says what was proposed and what ran, on which device, each metric's margin and where it
came from, the pairs that would likely resolve an inconclusive one, and what the counters saw;
`ctrl+s` saves it (Markdown, or JSON for a `.json` name). A run adds pairs until every metric is
resolved or its budget runs out; `ctrl+e` continues a finished loop-device run with more pairs
(its pairs kept); `ctrl+b`, when offered under the verdict, runs one A/B run per option of B and
says which option moved which figure.
""",
}


class HelpScreen(ModalScreen[None]):
    """The help for the step being shown, then the keys that work everywhere."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q,f1", "dismiss", "Close"),
    ]

    def __init__(self, step: str) -> None:
        super().__init__()
        self.step = step

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Help"
            box.border_subtitle = "escape, ?, F1 or q closes"
            yield Markdown(STEP_HELP.get(self.step, "") + "\n" + GENERAL)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
