"""The bounded-memory summaries: histogram percentiles, the N largest, the reservoir sample."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.profile.stats import (
    Largest,
    Log2Histogram,
    Reservoir,
    bucket_bounds,
    exact_distribution,
    merge_samples,
)


def test_buckets_are_powers_of_two() -> None:
    assert [bucket_bounds(b) for b in range(5)] == [(0, 0), (1, 1), (2, 3), (4, 7), (8, 15)]
    hist = Log2Histogram()
    for v in (0, 1, 2, 3, 4, 4096, 4097, 8191):
        hist.add(v)
    dist = hist.distribution()
    assert [(b.low, b.high, b.count) for b in dist.buckets] == [
        (0, 0, 1), (1, 1, 1), (2, 3, 2), (4, 7, 1), (4096, 8191, 3)]
    assert dist.count == 8 and dist.total == sum((0, 1, 2, 3, 4, 4096, 4097, 8191))
    assert (dist.minimum, dist.maximum) == (0, 8191)


def test_identical_values_give_exact_percentiles() -> None:
    hist = Log2Histogram()
    for _ in range(1000):
        hist.add(4096)
    hist.add(10)
    dist = hist.distribution()
    assert dist.median == 4096 and dist.p10 == 4096 and dist.p99 == 4096
    assert dist.percentiles_exact


def test_spread_values_are_estimated_within_their_bucket() -> None:
    hist = Log2Histogram()
    for v in range(1, 1001):
        hist.add(v)
    dist = hist.distribution()
    assert not dist.percentiles_exact
    assert dist.median is not None and 256 <= dist.median <= 511  # true median 500
    assert abs(dist.median - 500) <= 20
    assert dist.p90 is not None and 512 <= dist.p90 <= 1000
    assert dist.mean == 500.5


def test_exact_distribution_of_a_sample() -> None:
    dist = exact_distribution(list(range(1, 101)))
    assert (dist.median, dist.p90, dist.p99, dist.maximum) == (50, 90, 99, 100)
    assert dist.percentiles_exact
    assert exact_distribution([]).count == 0


def test_largest_keeps_the_top_n_largest_first() -> None:
    top: Largest[str] = Largest(3)
    for n in (5, 1, 9, 7, 3, 9, 2):
        top.offer(n, f"d{n}")
    assert [k for k, _ in top.items()] == [9, 9, 7]
    assert not top.would_take(6)
    assert Largest[str](0).items() == []


def test_reservoir_keeps_everything_below_its_limit() -> None:
    r: Reservoir[int] = Reservoir(10)
    for i in range(7):
        r.offer(i)
    assert r.items == list(range(7))


def test_reservoir_is_uniform() -> None:
    trials, population, limit = 2000, 100, 10
    seen: Counter[int] = Counter()
    for seed in range(trials):
        r: Reservoir[int] = Reservoir(limit, seed)
        for i in range(population):
            r.offer(i)
        assert len(r.items) == limit and len(set(r.items)) == limit
        seen.update(r.items)
    expected = trials * limit / population  # 200, standard deviation about 13.4
    assert set(seen) == set(range(population))
    assert all(abs(seen[i] - expected) < 60 for i in range(population)), seen.most_common(3)
    # The first and the last items are as likely as the middle ones.
    assert abs(sum(seen[i] for i in range(10)) - sum(seen[i] for i in range(90, 100))) < 150


def test_reservoir_skips_ahead_on_long_streams() -> None:
    r: Reservoir[int] = Reservoir(100, seed=1)
    taken = 0
    for i in range(100_000):
        if i == r.next_index:
            r.take(i)
            taken += 1
    assert len(r.items) == 100
    # Algorithm L takes about k(1 + ln(n/k)) items, not n.
    assert taken < 100 * 12
    assert max(r.items) > 50_000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=1 << 40), min_size=1, max_size=300),
       st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9, 0.99]))
def test_estimated_percentiles_stay_in_the_true_bucket(values: list[int], q: float) -> None:
    hist = Log2Histogram()
    for v in values:
        hist.add(v)
    found = hist.percentile(q)
    assert found is not None
    estimate, exact = found
    true = sorted(values)[max(1, math.ceil(q * len(values))) - 1]
    assert estimate.bit_length() == true.bit_length()  # same power-of-two bucket
    assert min(values) <= estimate <= max(values)
    if exact:
        assert estimate == true


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=500), st.integers(min_value=0, max_value=50),
       st.integers(min_value=0, max_value=2**32))
def test_reservoir_holds_distinct_items_of_the_stream(n: int, limit: int, seed: int) -> None:
    r: Reservoir[int] = Reservoir(limit, seed)
    for i in range(n):
        r.offer(i)
    assert len(r.items) == min(n, limit)
    assert len(set(r.items)) == len(r.items)
    assert all(0 <= i < n for i in r.items)


def test_two_halves_merged_are_the_whole() -> None:
    rng = random.Random(7)
    values = [rng.choice((0, 1, 3, 4096, rng.randrange(1 << 30))) for _ in range(5000)]
    whole, first, second = Log2Histogram(), Log2Histogram(), Log2Histogram()
    for i, v in enumerate(values):
        whole.add(v)
        (first if i % 3 else second).add(v)
    first.merge(second)
    assert first.distribution() == whole.distribution()
    first.add(values[10])
    first.remove_copy(values[10])
    assert first.distribution() == whole.distribution()


def test_largest_does_not_depend_on_the_order_items_come_in() -> None:
    items = [(n % 5, f"d{n:03d}") for n in range(200)]
    orders = [items, items[::-1], sorted(items, key=lambda e: e[1][::-1])]
    found = []
    for order in orders:
        top: Largest[str] = Largest(7)
        for key, item in order:
            top.offer(key, item)
        found.append(top.items())
    assert found[0] == found[1] == found[2]
    assert found[0][:2] == [(4, "d004"), (4, "d009")]
    halves: list[Largest[str]] = [Largest(7), Largest(7)]
    for i, (key, item) in enumerate(items):
        halves[i % 2].offer(key, item)
    for key, item in halves[1].items():
        halves[0].offer(key, item)
    assert halves[0].items() == found[0]


def test_merged_samples_are_uniform() -> None:
    hits = [0] * 30
    for seed in range(3000):
        rng = random.Random(seed)
        first = rng.sample(range(10), 5)  # a uniform sample of 5 of the stream 0-9
        second = rng.sample(range(10, 30), 5)  # and of 5 of the stream 10-29
        for x in merge_samples(first, 10, second, 20, 5, rng):
            hits[x] += 1
    # Each of the 30 items is in a sample of 5 one time in 6: 500 of 3000.
    assert all(400 < h < 600 for h in hits), hits
    assert merge_samples([1, 2], 2, [3], 1, 5, random.Random(0)) == [1, 2, 3]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=1 << 40), max_size=300),
       st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=50))
def test_adding_sorted_values_at_once_is_adding_each(before: list[int],
                                                      values: list[int]) -> None:
    one_by_one, at_once = Log2Histogram(), Log2Histogram()
    for v in before:  # the buckets may hold values already
        one_by_one.add(v)
        at_once.add(v)
    for v in values:
        one_by_one.add(v)
    at_once.add_sorted(sorted(values))
    assert vars(at_once) == vars(one_by_one)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=50), st.integers(min_value=0, max_value=2**32),
       st.lists(st.integers(min_value=1, max_value=60), max_size=10))
def test_filling_a_reservoir_at_once_takes_what_taking_each_takes(
        limit: int, seed: int, runs: list[int]) -> None:
    """Runs of items given to fill (as many as leave the sample short of full), the rest to
    take: the same sample, and the same next index, as taking each item in turn."""
    one_by_one: Reservoir[int] = Reservoir(limit, seed)
    in_runs: Reservoir[int] = Reservoir(limit, seed)
    stream = 0
    for run in [*runs, 200]:
        for i in range(stream, stream + run):
            if i == one_by_one.next_index:
                one_by_one.take(i)
        room = limit - len(in_runs.items)
        filled = min(run, room - 1) if room > 1 else 0
        in_runs.fill(list(range(stream, stream + filled)))
        for i in range(stream + filled, stream + run):
            if i == in_runs.next_index:
                in_runs.take(i)
        stream += run
        assert (in_runs.items, in_runs.next_index) == (one_by_one.items, one_by_one.next_index)
    with pytest.raises(ValueError):
        Reservoir[int](3).fill([0, 1, 2])
