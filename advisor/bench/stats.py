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
from statistics import NormalDist
from typing import Literal

Verdict = Literal["better", "worse", "equivalent", "inconclusive"]

#: Never claim a difference smaller than this on any metric, whatever calibration says.
DEFAULT_MARGIN = 0.05
#: How many rounds we would ever suggest; beyond that the answer is "more than this".
MAX_SUGGESTED_ROUNDS = 200


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
# A run adds ABBA blocks until every metric is resolved, so its verdicts are looked at again and
# again: a fixed-n t interval looked at after every block calls a false difference far more often
# than its 5% (peeking). The intervals below hold at every number of pairs at once, whatever rule
# decides when to stop (a confidence sequence): Lai's mixture for a normal mean with unknown
# variance, T. L. Lai, "On confidence sequences", Annals of Statistics 4(2), 1976; in the form of
# the scale-invariant sequential t-test of A. Perez-Ortiz, T. Lardy, R. de Heide, P. Grunwald,
# "E-statistics, group invariance and anytime-valid testing", Annals of Statistics 52(4), 2024,
# and H. Wang, A. Ramdas, "Anytime-valid t-tests and confidence sequences for Gaussian means with
# unknown variance", Sequential Analysis 44(1), 2025.
#
# For a candidate mean mu, with d_i = x_i - mu, a normal prior N(0, g) on the effect size mu'/sd
# and the right-Haar prior on sd give the Bayes factor (Rouder et al. 2009's fixed-g form)
#     B_n(mu) = (1 + n g)^(-1/2) * (sum d^2 / (sum d^2 - g (sum d)^2 / (1 + n g)))^(n/2),
# the likelihood ratio of the scale-invariant data, so a test martingale under mu whatever the
# noise: by Ville's inequality P(some n has B_n(mu) >= 1/alpha) <= alpha, and
# {mu : B_n(mu) < 1/alpha} covers the true mean at every n simultaneously. Solved for mu it is an
# interval around the mean (confidence_sequence below). Chosen over a group-sequential design
# (alpha spending over pre-set looks) because it needs no planned number of looks: a budget that
# runs out, a person who stops the run, or "more rounds" after the report all keep its guarantee.
# The price: about 1.5 times the width of a fixed-n t interval at 10 to 100 pairs.

#: Prior variance g of the effect size in the mixture: tuned for the narrowest intervals around
#: 8 to 20 pairs (wider at 6 than g = 4, narrower from 10 on than g = 16).
CS_PRIOR = 2.0


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


def confidence_sequence(s: PairedSummary, alpha: float) -> tuple[float, float]:
    """The anytime-valid (1 - alpha) interval of the mean log-ratio after s.n pairs."""
    half = cs_radius(s.n, s.sd, alpha)
    return (s.mean - half, s.mean + half)


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
    """The confidence sequence of B/A at this many pairs (simultaneous over the metrics)."""
    margin: float
    """Practical margin as a log-ratio."""
    p_beyond_margin: float
    """Anytime-valid p-value of "the effect is no larger than the margin" (direction seen)."""
    rounds_needed: int | None
    still_possible: tuple[Verdict, ...] = ()
    """For an inconclusive metric: the verdicts its interval still allows."""


def sequential_rounds_to_resolve(s: PairedSummary, margin: float, alpha: float) -> int | None:
    """Pairs in all (a whole number of ABBA blocks) after which the confidence sequence would
    likely settle an inconclusive metric, if the mean and noise stay as seen; None beyond
    MAX_SUGGESTED_ROUNDS or when the mean sits on the margin itself."""
    gap = abs(abs(s.mean) - margin)
    if s.n < 2 or not math.isfinite(s.sd) or gap < 1e-9:
        return None
    n = s.n + 2 - s.n % 2
    while n <= MAX_SUGGESTED_ROUNDS:
        if cs_radius(n, s.sd, alpha) < gap:
            return n
        n += 2
    return None


def judge(
    samples: Sequence[tuple[Sequence[float], Sequence[float], bool, float]],
    *,
    alpha: float = 0.05,
) -> list[MetricVerdict]:
    """Verdicts for several metrics at once: each item is (a, b, higher_is_better, margin).

    Each metric's interval is its confidence sequence at alpha / (number of metrics)
    (Bonferroni), so that all of them hold together, at every number of pairs, with probability
    at least 1 - alpha: the run may look after every ABBA block and stop when it likes.
    `better`/`worse`: the interval lies wholly beyond the margin; `equivalent`: wholly inside
    +-margin; otherwise `inconclusive`, with what it still allows and the pairs that would likely
    resolve it. A wrong verdict needs an interval that misses the truth.
    """
    k = max(len(samples), 1)
    level = alpha / k
    out = []
    for a, b, higher_is_better, margin in samples:
        s = paired_log_ratios(a, b)
        m = math.log1p(max(margin, 0.0))
        lo, hi = confidence_sequence(s, level)
        verdict: Verdict
        possible: tuple[Verdict, ...] = ()
        up: Verdict = "better" if higher_is_better else "worse"
        down: Verdict = "worse" if higher_is_better else "better"
        if lo > m:
            verdict = up
        elif hi < -m:
            verdict = down
        elif -m <= lo and hi <= m:
            verdict = "equivalent"
        else:
            verdict = "inconclusive"
            same: Verdict = "equivalent"
            allowed = ((down, lo < -m), (same, hi >= -m and lo <= m), (up, hi > m))
            possible = tuple(v for v, open_ in allowed if open_)
        p = anytime_p_value(s, math.copysign(m, s.mean))
        needed = (sequential_rounds_to_resolve(s, m, level)
                  if verdict == "inconclusive" else None)
        out.append(MetricVerdict(
            verdict=verdict, summary=s, ci_ratio=(_exp(lo), _exp(hi)), margin=m,
            p_beyond_margin=p, rounds_needed=needed, still_possible=possible))
    return out


def resolved(verdicts: Sequence[MetricVerdict]) -> bool:
    """True when no metric is inconclusive: the stopping rule's "all resolved"."""
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


def geometric_mean(values: Sequence[float]) -> float:
    """The per-side figure that agrees with the paired ratio: geo(B) / geo(A) is the geometric
    mean of the pairs' B/A (an arithmetic mean or median per side can disagree with it)."""
    if not values or any(v <= 0 for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))
