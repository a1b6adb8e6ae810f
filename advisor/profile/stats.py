"""Summaries whose memory does not grow with the number of values: a power-of-two histogram, the
N largest items, and a uniform reservoir sample."""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left
from collections.abc import Sequence
from math import exp, floor, log, log1p
from typing import Any, Generic, Protocol, TypeVar

from advisor.models.profile import Bucket, Distribution

#: Bucket b holds the values whose bit_length is b: 0 | 1 | 2-3 | 4-7 | ... (2**(b-1) to 2**b - 1).
BUCKETS = 65
PERCENTILES = (("p10", 0.10), ("p25", 0.25), ("median", 0.50), ("p75", 0.75), ("p90", 0.90),
               ("p99", 0.99))


def bucket_bounds(b: int) -> tuple[int, int]:
    """The smallest and largest value of bucket b."""
    return (0, 0) if b == 0 else (1 << (b - 1), (1 << b) - 1)


class Log2Histogram:
    """Counts, sums and exact extremes per power-of-two bucket of non-negative integers.

    The lists are public so that a hot loop can update them inline (see `add`)."""

    def __init__(self) -> None:
        self.counts = [0] * BUCKETS
        self.totals = [0] * BUCKETS
        self.minimums = [0] * BUCKETS
        self.maximums = [0] * BUCKETS

    def add(self, value: int) -> None:
        b = value.bit_length()
        if self.counts[b] == 0:
            self.minimums[b] = self.maximums[b] = value
        elif value < self.minimums[b]:
            self.minimums[b] = value
        elif value > self.maximums[b]:
            self.maximums[b] = value
        self.counts[b] += 1
        self.totals[b] += value

    def add_sorted(self, values: Sequence[int]) -> None:
        """`add` each of `values` (sorted, smallest first), a bucket at a time: the values of a
        bucket are a run found by bisection, its extremes the run's ends."""
        counts, totals, minimums, maximums = self.counts, self.totals, self.minimums, self.maximums
        start, end = 0, len(values)
        while start < end:
            low = values[start]
            b = low.bit_length()
            stop = bisect_left(values, 1 << b, start, end)
            high = values[stop - 1]
            if counts[b] == 0:
                minimums[b], maximums[b] = low, high
            else:
                if low < minimums[b]:
                    minimums[b] = low
                if high > maximums[b]:
                    maximums[b] = high
            counts[b] += stop - start
            totals[b] += sum(values[start:stop]) if start or stop < end else sum(values)
            start = stop

    def merge(self, other: Log2Histogram) -> None:
        """Add `other`'s values: the histogram of both streams, exactly."""
        for b in range(BUCKETS):
            n = other.counts[b]
            if not n:
                continue
            if self.counts[b] == 0:
                self.minimums[b], self.maximums[b] = other.minimums[b], other.maximums[b]
            else:
                self.minimums[b] = min(self.minimums[b], other.minimums[b])
                self.maximums[b] = max(self.maximums[b], other.maximums[b])
            self.counts[b] += n
            self.totals[b] += other.totals[b]

    def remove_copy(self, value: int) -> None:
        """Take out one of two counts of `value`: the extremes stay right because the other
        count is still there."""
        b = value.bit_length()
        self.counts[b] -= 1
        self.totals[b] -= value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def percentile(self, q: float) -> tuple[int, bool] | None:
        """The nearest-rank q-quantile and whether it is exact; None when empty.

        Within a bucket the rank is interpolated linearly between the bucket's smallest and largest
        value; it is exact when those are equal."""
        n = self.count
        if n == 0:
            return None
        rank = max(1, math.ceil(q * n))
        seen = 0
        for b in range(BUCKETS):
            c = self.counts[b]
            if seen + c >= rank:
                lo, hi = self.minimums[b], self.maximums[b]
                if lo == hi:
                    return lo, True
                position = rank - seen - 1
                return lo + round((hi - lo) * position / (c - 1)), False
            seen += c
        raise AssertionError("rank beyond the histogram")  # pragma: no cover

    def distribution(self) -> Distribution:
        n = self.count
        total = sum(self.totals)
        used = [b for b in range(BUCKETS) if self.counts[b]]
        buckets = [Bucket(low=bucket_bounds(b)[0], high=bucket_bounds(b)[1], count=self.counts[b],
                          total=self.totals[b]) for b in used]
        if not used:
            return Distribution(count=0, total=0)
        values: dict[str, int] = {}
        exact = True
        for name, q in PERCENTILES:
            found = self.percentile(q)
            assert found is not None
            values[name] = found[0]
            exact = exact and found[1]
        return Distribution(count=n, total=total, minimum=self.minimums[used[0]],
                            maximum=self.maximums[used[-1]], mean=total / n,
                            percentiles_exact=exact, buckets=buckets, **values)


def exact_distribution(values: Sequence[int]) -> Distribution:
    """A Distribution of values held in memory (a sample): exact percentiles, log2 buckets."""
    hist = Log2Histogram()
    for v in values:
        hist.add(v)
    dist = hist.distribution()
    if not values:
        return dist
    ordered = sorted(values)
    exact = {name: ordered[max(1, math.ceil(q * len(ordered))) - 1] for name, q in PERCENTILES}
    return dist.model_copy(update={**exact, "percentiles_exact": True})


T = TypeVar("T")


class Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=Ordered)


class _Backwards(Generic[K]):
    """An item that compares the other way round: of two equal keys in the min-heap below, the
    larger item is the one dropped first."""

    __slots__ = ("item",)

    def __init__(self, item: K) -> None:
        self.item = item

    def __lt__(self, other: _Backwards[K]) -> bool:
        return other.item < self.item


class Largest(Generic[K]):
    """The `limit` items with the largest keys seen so far (a min-heap of that size). Equal keys
    are ordered by their items (the smaller first), so the result does not depend on the order
    the items were offered in: two halves of a stream, each kept apart and then merged, give
    what the whole stream gives."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._heap: list[tuple[int, _Backwards[K]]] = []

    def would_take(self, key: int) -> bool:
        """Cheap test before building an item: could `key` enter?"""
        return self.limit > 0 and (len(self._heap) < self.limit or key >= self._heap[0][0])

    def offer(self, key: int, item: K) -> None:
        if not self.would_take(key):
            return
        entry = (key, _Backwards(item))
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, entry)
        elif self._heap[0] < entry:
            heapq.heapreplace(self._heap, entry)

    def items(self) -> list[tuple[int, K]]:
        """Largest first; equal keys by item."""
        return sorted(((k, w.item) for k, w in self._heap), key=lambda e: (-e[0], e[1]))


class Reservoir(Generic[T]):
    """A uniform random sample of at most `limit` items from a stream of unknown length.

    Algorithm L (Li 1994): instead of drawing a random number per item, it draws the index of the
    next item to take, so a caller can skip the call entirely with `if seen == r.next_index`.
    """

    def __init__(self, limit: int, seed: int = 0) -> None:
        self.limit = limit
        self.items: list[T] = []
        self._random = random.Random(seed)
        self._weight = 1.0
        self.next_index = 0 if limit > 0 else -1
        self._seen = 0
        self._limit_bits = limit.bit_length()
        self._draw, self._bits = self._random.random, self._random.getrandbits

    def offer(self, item: T) -> None:
        """Consider the next item of the stream."""
        if self._seen == self.next_index:
            self.take(item)
        self._seen += 1

    def fill(self, items: list[T]) -> None:
        """take() each of `items`, the stream's items from `next_index` on, while the sample is
        not full after them: fewer than `limit` - len(`self.items`) (they draw nothing)."""
        if items and len(items) >= self.limit - len(self.items):
            raise ValueError("fill would fill the sample: the last item goes through take")
        self.items += items
        self.next_index += len(items)

    def take(self, item: T) -> None:
        """Take the item at `next_index` (the caller counts the stream) and draw the next one.

        Called some k * (1 + ln(n / k)) times for a stream of n items (k the limit), so written
        for speed: one method calling the bound methods of random.Random; the slot replaced is
        drawn as randrange(limit) draws it (getrandbits of the limit's bit length until one is
        below it), so that a seed gives the sample it gave before."""
        index, items, limit, draw = self.next_index, self.items, self.limit, self._draw
        if len(items) < limit:
            items.append(item)
            if len(items) < limit:
                self.next_index = index + 1
                return
            weight = exp(log(draw() or 1e-300) / limit)
        else:
            bits, width = self._bits, self._limit_bits
            slot = bits(width)
            while slot >= limit:
                slot = bits(width)
            items[slot] = item
            weight = self._weight * exp(log(draw() or 1e-300) / limit)
        self._weight = weight
        u = draw() or 1e-300
        # weight reaches 1.0 only by rounding; taking the next item is then correct
        self.next_index = (index + 1 if weight >= 1.0
                           else index + floor(log(u) / log1p(-weight)) + 1)


def merge_samples(first: list[T], first_population: int, second: list[T], second_population: int,
                  limit: int, rng: random.Random) -> list[T]:
    """A uniform sample of at most `limit` items of two streams, from a uniform sample of each
    (of min(limit, its population) items). How many come from each stream is drawn the way a
    sample of the two streams together would draw them; below the limit, every item."""
    if first_population + second_population <= limit:
        return first + second
    from_first, left_first, left_second = 0, first_population, second_population
    bits = rng.getrandbits
    for _ in range(limit):
        # rng.randrange(left), drawn as it draws it (see Reservoir.take), at half the cost
        left = left_first + left_second
        width = left.bit_length()
        drawn = bits(width)
        while drawn >= left:
            drawn = bits(width)
        if drawn < left_first:
            from_first += 1
            left_first -= 1
        else:
            left_second -= 1
    return rng.sample(first, from_first) + rng.sample(second, limit - from_first)
