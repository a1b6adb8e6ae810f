"""The adaptive stopping rule's error control, simulated: many A/A sequences with realistic noise
(heavy tails, stalls, drift of the machine between and within pairs), looked at after every ABBA
block as `validate` does, must call a false better/worse at most at alpha; the same looks on
fixed-n t intervals (peeking) would not. Pure Python, deterministic seeds, about a second."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from advisor.bench import stats

ALPHA = 0.05
METRICS = 5
MIN_PAIRS, MAX_PAIRS = 6, 40


def _pair(rng: random.Random, drift: list[float], index: int, noise: float,
          effect: float) -> tuple[float, float]:
    """One pair's A and B values: the machine's speed drifts (a random walk, step per side),
    the side run first alternates (ABBA), noise is heavy-tailed (Student t, 3 df) and one round
    in twenty stalls (half speed)."""
    def side() -> float:
        drift[0] += rng.gauss(0, 0.04)
        t3 = rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
        stall = math.log(0.5) if rng.random() < 0.05 else 0.0
        return drift[0] + noise * t3 + stall

    first, second = side(), side()
    a, b = (first, second) if index % 2 == 0 else (second, first)
    return 1000 * math.exp(a), 1000 * math.exp(b + effect)


def _run(rng: random.Random, effect: float = 0.0, margin: float = 0.05,
         noise: float = 0.12) -> tuple[list[stats.MetricVerdict], int]:
    """One simulated validate run: METRICS metrics sharing the machine's drift, looks after every
    ABBA block from MIN_PAIRS on, stop when all are resolved or at MAX_PAIRS."""
    drift = [0.0]
    samples: list[tuple[list[float], list[float]]] = [([], []) for _ in range(METRICS)]
    n = 0
    while True:
        for index in (n, n + 1):
            for a, b in samples:
                x, y = _pair(rng, drift, index, noise, effect)
                a.append(x)
                b.append(y)
        n += 2
        if n < MIN_PAIRS:
            continue
        verdicts = stats.judge([(a, b, True, margin) for a, b in samples], alpha=ALPHA)
        if stats.resolved(verdicts) or n >= MAX_PAIRS:
            return verdicts, n


def test_aa_false_calls_stay_under_alpha_with_adaptive_stopping() -> None:
    rng = random.Random(20261124)
    runs = 100
    false = sum(any(v.verdict in ("better", "worse") for v in _run(rng)[0]) for _ in range(runs))
    assert false / runs <= ALPHA


def test_aa_with_no_margin_still_holds_where_peeking_t_intervals_fail() -> None:
    """Margin 0 (any difference counts) and Gaussian noise, up to 60 pairs: the confidence
    sequence excludes the true 0 in at most alpha of the runs; fixed-n 95% t intervals looked at
    after every block exclude it far more often (the peeking the method exists to avoid)."""
    rng = random.Random(5)
    runs, cs_false, t_false = 150, 0, 0
    for _ in range(runs):
        d: list[float] = []
        cs_hit = t_hit = False
        while len(d) < 60:
            d += [rng.gauss(0, 0.1), rng.gauss(0, 0.1)]
            if len(d) < MIN_PAIRS:
                continue
            mean = sum(d) / len(d)
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
            s = stats.PairedSummary(n=len(d), mean=mean, sd=sd)
            lo, hi = stats.confidence_sequence(s, ALPHA)
            cs_hit |= not lo <= 0.0 <= hi
            tlo, thi = s.interval(1 - ALPHA)
            t_hit |= not tlo <= 0.0 <= thi
        cs_false += cs_hit
        t_false += t_hit
    assert cs_false / runs <= ALPHA
    assert t_false / runs > 2 * ALPHA


def test_a_planted_slowdown_is_found_and_the_run_stops_early() -> None:
    rng = random.Random(11)
    outcomes = [_run(rng, effect=math.log(0.7)) for _ in range(40)]
    verdicts = [{v.verdict for v in run} for run, _ in outcomes]
    assert sum("worse" in v for v in verdicts) >= 39
    assert not any("better" in v or "equivalent" in v for v in verdicts)
    assert sorted(n for _, n in outcomes)[20] < MAX_PAIRS  # most resolve before the cap


@pytest.mark.parametrize(("n", "sd", "alpha"), [(6, 0.1, 0.01), (12, 0.3, 0.05),
                                                 (40, 0.05, 0.0125), (200, 1.0, 0.05)])
def test_radius_is_where_the_bayes_factor_reaches_one_over_alpha(n: int, sd: float,
                                                                 alpha: float) -> None:
    s = stats.PairedSummary(n=n, mean=0.2, sd=sd)
    r = stats.cs_radius(n, sd, alpha)
    assert math.isfinite(r) and r > 0
    assert stats.anytime_p_value(s, 0.2 + r) == pytest.approx(alpha, rel=1e-6)
    assert stats.anytime_p_value(s, 0.2 - r) == pytest.approx(alpha, rel=1e-6)
    assert stats.anytime_p_value(s, 0.2 + 0.9 * r) > alpha
    # wider than the fixed-n t interval at the same level: the price of looking any time
    assert r > stats.t_quantile(1 - alpha / 2, n - 1) * sd / math.sqrt(n)


def test_too_few_pairs_cover_everything_and_the_radius_shrinks() -> None:
    assert stats.cs_radius(2, 0.1, 0.05) == math.inf
    radii = [stats.cs_radius(n, 0.1, 0.05) for n in range(6, 200, 2)]
    assert all(later < earlier for earlier, later in itertools.pairwise(radii))


def test_inconclusive_says_what_is_still_possible_and_pairs_to_resolve() -> None:
    rng = random.Random(3)
    a = [1000 * math.exp(rng.gauss(0, 0.1)) for _ in range(6)]
    b = [x * 0.85 * math.exp(rng.gauss(0, 0.1)) for x in a]
    (v,) = stats.judge([(a, b, True, 0.05)])
    assert v.verdict == "inconclusive"
    # Direction is tested against 1: an interval across 1 still allows either direction.
    assert v.still_possible == ("worse", "equivalent", "better")
    assert v.rounds_needed is not None and v.rounds_needed > 6 and v.rounds_needed % 2 == 0
    more_a = a + [1000 * math.exp(rng.gauss(0, 0.1)) for _ in range(v.rounds_needed * 2)]
    more_b = b + [x * 0.85 * math.exp(rng.gauss(0, 0.1)) for x in more_a[6:]]
    (later,) = stats.judge([(more_a, more_b, True, 0.05)])
    assert later.verdict == "worse"
