"""What the allocation rules share: whether the answers describe large files written
sequentially (swalloc, allocsize, largeio), and the size of an extent size hint and the change
that sets it (extszinherit, cowextsize)."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.context import Change, Context, Outcome, round_up
from advisor.models.units import format_size

#: Why the streaming allocation options stay off, per answer other than "sequential".
_NOT_STREAMED = {
    "random": ("files are filled by writes scattered over them (write_pattern = random), not "
               "streamed start to end: fixed large allocations would pad the files written in "
               "place and fragment free space for the small ones"),
    "appending": ("files grow at the end a few KiB at a time with fsync (write_pattern = "
                  "appending): speculative preallocation already grows with such a file, and "
                  "fixed large allocations would pad every file that stays small"),
    "mixed": ("the load is mixed (write_pattern = mixed): what helps the streamed files pads "
              "and fragments the others"),
}


def large_sequential(ctx: Context, min_file_size: int) -> tuple[bool, str]:
    """(True, how the answers say so) when files are streamed start to end and their median
    size is at least `min_file_size`; else (False, why the default stays)."""
    w = ctx.workload
    if w.write_pattern is None:
        return False, "how files are written is not answered (write_pattern)"
    if w.write_pattern != "sequential":
        return False, _NOT_STREAMED[w.write_pattern]
    if w.median_file_size is None:
        return False, "files are streamed, but their size is not answered (median_file_size)"
    if w.median_file_size < min_file_size:
        return False, (f"files are streamed, but a median file of "
                       f"{format_size(w.median_file_size)} is under "
                       f"{format_size(min_file_size)}: small files gain nothing and keep the "
                       "padding")
    return True, (f"files streamed start to end (write_pattern = sequential), median "
                  f"{format_size(w.median_file_size)}")


def hint_bytes(ctx: Context, hint: int) -> int:
    """An extent size hint for this filesystem: `hint`, rounded up to the stripe unit when there
    is one, and to the block size."""
    stripe = ctx.stripe()
    if stripe is not None:
        hint = round_up(hint, stripe[0])
    return round_up(hint, ctx.geometry.block_size)


def hint_outcome(ctx: Context, option: str, hint: int, reason: Callable[[int], str]) -> Outcome:
    """`-d option=` set to a hint of `hint` bytes, in filesystem blocks, for the reason
    `reason(blocks)` gives; or the default kept when the kernel would refuse a hint that large
    (it takes at most half an allocation group)."""
    half = ctx.geometry.agsize_bytes // 2
    if hint > half:
        return Outcome(keep_reason=f"a {format_size(hint)} hint is over half an allocation group "
                       f"({format_size(half)}), more than the kernel takes")
    blocks = hint // ctx.geometry.block_size
    return Outcome(change=Change(f"{option}={blocks}", ["-d", f"{option}={blocks}"],
                                 reason(blocks), values={option: blocks}))
