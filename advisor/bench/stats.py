"""Paired A/B statistics, pure and dependency-free: an anytime-valid confidence sequence on the
mean paired log-ratio (what every verdict rests on, so that a run may add pairs until it can
tell), Student's t for the A/A noise floors (fixed-n figures), and the verdict rules.

Why log-ratios: a benchmark metric is a rate; B/A is what people ask about, and the log of a ratio
is symmetric (2x faster and 2x slower are the same distance from 0) and closer to normal than the
raw differences. Pairs come from the same round (ABBA order), so slow drift of the machine cancels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, median
from typing import Literal

from advisor.models.limits import MAX_PAIRS

Verdict = Literal["better", "worse", "equivalent", "inconclusive"]

#: Never claim a difference smaller than this on any metric, whatever calibration says.
DEFAULT_MARGIN = 0.05


# ---- Student's t distribution -------------------------------------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def _t_pdf(t: float, df: float) -> float:
    ln = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
          - (df + 1) / 2 * math.log1p(t * t / df))
    return math.exp(ln)


def t_quantile(p: float, df: float) -> float:
    """The t value with P(T <= t) = p: Newton's method from the normal quantile, with bisection
    as the fallback for the heavy tails of small df."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    t = NormalDist().inv_cdf(p)
    for _ in range(50):
        step = (t_cdf(t, df) - p) / _t_pdf(t, df)
        t_next = t - step
        if t_next <= 0 or not math.isfinite(t_next):
            break
        if abs(step) < 1e-12 * max(1.0, t):
            return t_next
        t = t_next
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


# ---- paired log-ratios --------------------------------------------------------------------

@dataclass(frozen=True)
class PairedSummary:
    """Paired log-ratios log(B_i / A_i) of one metric."""

    n: int
    mean: float
    """Mean log-ratio (0: no difference)."""
    sd: float
    """Standard deviation of one pair's log-ratio: the noise of a single round."""

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n > 0 else math.inf

    @property
    def ratio(self) -> float:
        """Geometric mean of B/A."""
        return math.exp(self.mean)

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Two-sided confidence interval of the log-ratio."""
        if self.n < 2:
            return (-math.inf, math.inf)
        half = t_quantile(0.5 + confidence / 2.0, self.n - 1) * self.se
        return (self.mean - half, self.mean + half)


def paired_log_ratios(a: Sequence[float], b: Sequence[float]) -> PairedSummary:
    """Summarise paired samples; every sample must be positive (a rate, a throughput)."""
    if len(a) != len(b):
        raise ValueError("A and B need the same number of samples (they are paired)")
    if any(x <= 0 for x in (*a, *b)):
        raise ValueError("log-ratios need positive samples")
    d = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    n = len(d)
    mean = sum(d) / n if n else 0.0
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else math.inf
    return PairedSummary(n=n, mean=mean, sd=sd)


# ---- anytime-valid confidence sequences ---------------------------------------------------
#
# A run adds ABBA blocks until its primary metrics are decided, so its verdicts are looked at
# again and again: a fixed-n t interval looked at after every block calls a false difference far
# more often than its 5% (peeking). The intervals below hold at every number of pairs at once,
# whatever rule decides when to stop (a confidence sequence): Lai's mixture for a normal mean
# with unknown variance, T. L. Lai, "On confidence sequences", Annals of Statistics 4(2), 1976; in
# the form of the scale-invariant sequential t-test of A. Perez-Ortiz, T. Lardy, R. de Heide,
# P. Grunwald, "E-statistics, group invariance and anytime-valid testing", Annals of Statistics
# 52(4), 2024, and H. Wang, A. Ramdas, "Anytime-valid t-tests and confidence sequences for
# Gaussian means with unknown variance", Sequential Analysis 44(1), 2025.
#
# For a candidate mean mu, with d_i = x_i - mu, a normal prior N(0, g) on the effect size mu'/sd
# and the right-Haar prior on sd give the Bayes factor (Rouder et al. 2009's fixed-g form)
#     B_n(mu) = (1 + n g)^(-1/2) * (sum d^2 / (sum d^2 - g (sum d)^2 / (1 + n g)))^(n/2),
# the likelihood ratio of the scale-invariant data, so a test martingale under mu whatever the
# noise: by Ville's inequality P(some n has B_n(mu) >= 1/alpha) <= alpha, and
# {mu : B_n(mu) < 1/alpha} covers the true mean at every n simultaneously. Solved for mu it is an
# interval around the mean (confidence_sequence below). Because it covers at every n at once, so
# does the intersection of the intervals of every prefix of the pairs (running_interval): a
# verdict reached at 6 pairs is kept, not lost to a wider interval at a later look. Chosen over a
# group-sequential design (alpha spending over pre-set looks) because it needs no planned number
# of looks: a budget that runs out, a person who stops the run, or "more rounds" after the report
# all keep its guarantee. The price: 1.8 to 1.9 times the width of a fixed-n t interval at 6 to
# 100 pairs, 2.1 at 4 (with g = 10 below).
#
# Power at few pairs comes from g, chosen before any data: a primary metric (the option's
# mechanism, a count per operation) is expected to move by many of its own standard deviations
# (log writes per directory operation: 7x at 1-3% noise), and a large g puts the prior's mass
# there: at 4 pairs and alpha 0.05 the half-width is 3.3 sd where g = 2 gives 6.0 sd, and it is
# finite from 3 pairs on. The secondary metrics get the same g: at 4 pairs and alpha / 6, g = 2
# leaves them unbounded (they could decide nothing before 6 pairs), g = 10 gives 7.9 sd; from 20
# pairs on it costs 6-8% of width against g = 2.

#: Prior variance g of the effect size in the mixture, for every metric: tuned for 3 to 10 pairs.
CS_PRIOR = 10.0
#: g for primary metrics (the same: a separate name, so the choice is said where it is made).
PRIMARY_PRIOR = CS_PRIOR


#: The least spread of one pair's log-ratio an interval is drawn with (0.5%). The mixture above
#: is exact for continuous normal noise; counts of work are whole numbers, often the same in
#: every round (allocations per directory operation), and pairs that agree exactly would give an
#: interval of width 0, whatever the noise could have been. Drawing it with at least a few counts
#: in a thousand of spread only widens it (so it covers at least as often): a difference of
#: whole counts repeated by chance (A/A: +1 count in every pair) decides nothing, and a real
#: difference of more than about 2% still decides at 4 pairs. Timing noise is far above it.
SD_FLOOR = 0.005


def cs_radius(n: int, sd: float, alpha: float, g: float = CS_PRIOR) -> float:
    """Half-width of the confidence sequence at n pairs with this standard deviation of a pair's
    log-ratio (inf while it covers everything: too few pairs for this alpha)."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    w = n * g / (1.0 + n * g)
    # B_n < 1/alpha  <=>  r < r_max, with r = n (mean - mu)^2 / sum d^2
    r_max = (1.0 - math.exp(-(0.5 * math.log1p(n * g) - math.log(alpha)) * 2.0 / n)) / w
    if r_max >= 1.0:
        return math.inf
    ss = (n - 1) * sd * sd
    return math.sqrt(r_max / (1.0 - r_max) * ss / n)


def confidence_sequence(s: PairedSummary, alpha: float,
                        g: float = CS_PRIOR) -> tuple[float, float]:
    """The anytime-valid (1 - alpha) interval of the mean log-ratio after s.n pairs."""
    half = cs_radius(s.n, s.sd, alpha, g)
    return (s.mean - half, s.mean + half)


def running_interval(d: Sequence[float], alpha: float,
                     g: float = CS_PRIOR) -> tuple[float, float]:
    """The intersection of the confidence sequence's intervals over every prefix of the
    log-ratios `d` (in the order measured), each drawn with a spread of at least SD_FLOOR: valid
    with the same 1 - alpha, since the sequence covers the mean at every n at once. An empty
    intersection can only follow a miss; then the last interval is returned, as it stands."""
    lo, hi = -math.inf, math.inf
    total = total_sq = 0.0
    last = (-math.inf, math.inf)
    for n, x in enumerate(d, start=1):
        total += x
        total_sq += x * x
        if n < 2:
            continue
        mean = total / n
        var = max(0.0, (total_sq - n * mean * mean) / (n - 1))
        half = cs_radius(n, max(math.sqrt(var), SD_FLOOR), alpha, g)
        last = (mean - half, mean + half)
        lo, hi = max(lo, last[0]), min(hi, last[1])
    return (lo, hi) if lo <= hi else last


def anytime_p_value(s: PairedSummary, mu: float, g: float = CS_PRIOR) -> float:
    """min(1, 1/B_n(mu)): an anytime-valid p-value of "the mean log-ratio is mu"."""
    if s.n < 2 or not math.isfinite(s.sd):
        return 1.0
    ss = (s.n - 1) * s.sd * s.sd
    sum_sq = ss + s.n * (s.mean - mu) ** 2
    if sum_sq == 0.0:
        return 1.0
    total = s.n * (s.mean - mu)
    inner = sum_sq - g * total * total / (1.0 + s.n * g)
    if inner <= 0.0:
        return 0.0
    log_b = -0.5 * math.log1p(s.n * g) + s.n / 2.0 * math.log(sum_sq / inner)
    return min(1.0, math.exp(-log_b))


@dataclass(frozen=True)
class MetricVerdict:
    verdict: Verdict
    summary: PairedSummary
    ci_ratio: tuple[float, float]
    """The running intersection of the confidence sequence of B/A up to this many pairs."""
    margin: float
    """Practical margin as a log-ratio: what `equivalent` allows."""
    p_beyond_margin: float
    """Anytime-valid p-value of "the effect is no larger than the margin" (direction seen)."""
    rounds_needed: int | None
    still_possible: tuple[Verdict, ...] = ()
    """For an inconclusive metric: the verdicts its interval still allows."""
    decided_after: int | None = None
    """The fewest pairs after which the running interval gave this verdict (null: inconclusive)."""


def _word(lo: float, hi: float, m: float, higher_is_better: bool) -> Verdict:
    """better/worse: the interval excludes 0 (a direction, however small); equivalent: it lies
    inside +-m; inconclusive otherwise."""
    if lo > 0.0:
        return "better" if higher_is_better else "worse"
    if hi < 0.0:
        return "worse" if higher_is_better else "better"
    if -m <= lo and hi <= m:
        return "equivalent"
    return "inconclusive"


def robust_sd(d: Sequence[float]) -> float:
    """The noise of one pair's log-ratio from the median absolute deviation (times 1.4826, the
    normal's factor): one wild pair does not make it, as it makes the standard deviation."""
    if len(d) < 2:
        return math.inf
    mid = median(d)
    mad = 1.4826 * median([abs(x - mid) for x in d])
    if mad > 0.0:
        return mad
    mean = sum(d) / len(d)
    return math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))


def sequential_rounds_to_resolve(d: Sequence[float], margin: float, alpha: float,
                                 g: float = CS_PRIOR) -> int | None:
    """Pairs in all (a whole number of ABBA blocks) after which the confidence sequence would
    likely settle an undecided metric. The noise is the interval's own (the standard deviation
    of the pairs' log-ratios), never less than the median absolute deviation's: a promise made
    from a smaller spread than the interval uses is not kept (A/A runs promised 32 pairs where
    thousands were needed). The effect is pessimistic for each way of settling: for a direction,
    the smaller of |mean| and |median| shrunk towards 0 by one standard error (a mean that a few
    noisy pairs pushed away from 0 promises nothing); for equivalence, the larger grown by one.
    Settled = the radius below that effect, or below the margin less it. None beyond
    MAX_PAIRS."""
    n0 = len(d)
    if n0 < 2:
        return None
    mean = sum(d) / n0
    sd = max(math.sqrt(sum((x - mean) ** 2 for x in d) / (n0 - 1)), robust_sd(d), SD_FLOOR)
    if not math.isfinite(sd) or sd == 0.0:
        return None
    se = sd / math.sqrt(n0)
    mid = median(d)
    effect = max(0.0, min(abs(mean), abs(mid)) - se)
    target = max(effect, margin - (max(abs(mean), abs(mid)) + se))
    if target <= 0.0:
        return None
    n = n0 + 2 - n0 % 2
    while n <= MAX_PAIRS:
        if cs_radius(n, sd, alpha, g) < target:
            return n
        n += 2
    return None


def judge_one(a: Sequence[float], b: Sequence[float], higher_is_better: bool, margin: float,
              *, alpha: float, g: float = CS_PRIOR) -> MetricVerdict:
    """One metric's verdict at level alpha on the running interval of its log-ratios."""
    s = paired_log_ratios(a, b)
    d = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    m = math.log1p(max(margin, 0.0))
    lo, hi = running_interval(d, alpha, g)
    verdict = _word(lo, hi, m, higher_is_better)
    possible: tuple[Verdict, ...] = ()
    decided = None
    if verdict == "inconclusive":
        up: Verdict = "better" if higher_is_better else "worse"
        down: Verdict = "worse" if higher_is_better else "better"
        same: Verdict = "equivalent"
        allowed = ((down, lo < 0.0), (same, lo < m and hi > -m), (up, hi > 0.0))
        possible = tuple(v for v, open_ in allowed if open_)
    else:
        decided = next(n for n in range(2, len(d) + 1)
                       if _word(*running_interval(d[:n], alpha, g), m, higher_is_better)
                       == verdict)
    p = anytime_p_value(s, math.copysign(m, s.mean), g)
    needed = (sequential_rounds_to_resolve(d, m, alpha, g)
              if verdict == "inconclusive" else None)
    return MetricVerdict(
        verdict=verdict, summary=s, ci_ratio=(_exp(lo), _exp(hi)), margin=m,
        p_beyond_margin=p, rounds_needed=needed, still_possible=possible, decided_after=decided)


def judge(
    samples: Sequence[tuple[Sequence[float], Sequence[float], bool, float]],
    *,
    alpha: float = 0.05,
    g: float = CS_PRIOR,
) -> list[MetricVerdict]:
    """Verdicts for a family of metrics: each item is (a, b, higher_is_better, margin).

    Each metric's interval is the running intersection of its confidence sequence at
    alpha / (number of metrics) (Bonferroni: the plain even split, no step-down), so that all of
    them hold together, at every number of pairs, with probability at least 1 - alpha: the run
    may look after every ABBA block and stop when it likes. `better`/`worse`: the interval
    excludes no difference (B/A = 1); `equivalent`: it lies wholly inside +-margin; otherwise
    `inconclusive`, with what it still allows and the pairs that would likely resolve it. A
    wrong verdict needs an interval that misses the truth.
    """
    level = alpha / max(len(samples), 1)
    return [judge_one(a, b, hib, margin, alpha=level, g=g) for a, b, hib, margin in samples]


def resolved(verdicts: Sequence[MetricVerdict]) -> bool:
    """True when no metric is inconclusive."""
    return all(v.verdict != "inconclusive" for v in verdicts)


def _exp(x: float) -> float:
    """exp, with the unbounded ends of an interval as 0 and inf."""
    if x == -math.inf:
        return 0.0
    return math.exp(min(x, 700.0))


def overall(verdicts: Sequence[Verdict]) -> Verdict:
    """One word for the run: worse if anything is worse, better if something is better and nothing
    worse, equivalent if everything is, inconclusive otherwise."""
    if "worse" in verdicts:
        return "worse"
    if "better" in verdicts:
        return "better"
    if verdicts and all(v == "equivalent" for v in verdicts):
        return "equivalent"
    return "inconclusive"


def noise_floor(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> float:
    """From an A/A run: the largest relative difference the set-up cannot tell from nothing,
    |mean| + half-width of the interval, as a fraction (0.04 = 4%)."""
    s = paired_log_ratios(a, b)
    lo, hi = s.interval(confidence)
    return math.expm1(max(abs(lo), abs(hi)))
