"""The verdict line and the run's one word: the changed options' primary metrics lead, throughput
follows as decided, bounded ("no slowdown beyond X% shown") or inconclusive. Logic only: the
figures are written here, nothing is measured."""

from __future__ import annotations

from advisor.models.bench import MechanismCheck, MetricResult
from advisor.render import verdict as summary


def _metric(name: str, verdict: str, ci: tuple[float, float], *, primary: list[str] | None = None,
            higher_is_better: bool = True, ratio: float | None = None) -> MetricResult:
    return MetricResult(
        name=name, title=name.replace("_", " "), unit="x", higher_is_better=higher_is_better,
        a=[1.0] * 4, b=[1.0] * 4, ratio=ratio if ratio is not None else (ci[0] + ci[1]) / 2,
        ci=list(ci), margin=0.05, noise=0.01, verdict=verdict,  # type: ignore[arg-type]
        primary_for=primary or [], decided_after=4 if verdict != "inconclusive" else None,
        rounds_to_resolve=40 if verdict == "inconclusive" else None)


def _check(counter: str, seen: str, option: str = "logbsize=256k") -> MechanismCheck:
    return MechanismCheck(option=option, rule="logbsize", counter=counter, expect="less",
                          seen=seen)  # type: ignore[arg-type]


LOG = _metric("log_writes_per_1k_dirops", "better", (0.12, 0.16), primary=["logbsize=256k"],
              higher_is_better=False, ratio=0.14)
ATIME = _metric("transactions_per_file_read", "better", (0.0, 0.0), primary=["noatime"],
                higher_is_better=False, ratio=0.0)


def test_a_decided_mechanism_leads_while_throughput_is_inconclusive() -> None:
    """Every primary decided, throughput wide open: the word is `better` (the mechanism is
    shown) and the first clause says both, throughput as inconclusive."""
    wide = [_metric("creates_per_s", "inconclusive", (0.4, 2.5)),
            _metric("fsync_writes_per_s", "inconclusive", (0.3, 3.0))]
    checks = [_check(LOG.name, "seen"), _check(ATIME.name, "seen", "noatime")]
    assert summary.headline_verdict(wide, [LOG, ATIME], checks) == "better"
    text = summary.verdict_line("better", False, wide, [LOG, ATIME], checks, 12.0)
    assert text.startswith("mechanism shown for every changed option; throughput: "
                           "inconclusive. ")
    assert "logbsize=256k: 7.1x fewer" in text and "noatime: no transactions" in text
    assert text.index("logbsize=256k") < text.index("Throughput:")


def test_throughput_bounded_says_the_largest_slowdown_excluded() -> None:
    """Intervals that exclude any slowdown beyond 8%: said as that bound, rounded up."""
    near = [_metric("creates_per_s", "inconclusive", (0.925, 1.10)),
            _metric("deletes_per_s", "equivalent", (0.96, 1.04))]
    checks = [_check(LOG.name, "seen")]
    assert summary.headline(near, [LOG], checks) == (
        "mechanism shown for the changed option; throughput: no slowdown beyond 8% shown")
    assert summary.headline_verdict(near, [LOG], checks) == "better"


def test_a_slowdown_shown_makes_the_word_worse_whatever_the_mechanism() -> None:
    slower = [_metric("fsync_writes_per_s", "worse", (0.80, 0.90), ratio=0.85),
              _metric("creates_per_s", "inconclusive", (0.5, 2.0))]
    checks = [_check(LOG.name, "seen")]
    assert summary.headline_verdict(slower, [LOG], checks) == "worse"
    assert summary.headline(slower, [LOG], checks).endswith(
        "throughput: slower on fsync_writes_per_s (0.85x)")


def test_an_undecided_primary_keeps_the_word_inconclusive_and_is_counted() -> None:
    open_ = _metric("log_writes_per_1k_dirops", "inconclusive", (0.5, 1.3),
                    primary=["logbsize=256k"], higher_is_better=False, ratio=0.8)
    flat = [_metric("creates_per_s", "equivalent", (0.97, 1.03))]
    checks = [_check(open_.name, "not seen"), _check(ATIME.name, "seen", "noatime")]
    assert summary.headline_verdict(flat, [open_, ATIME], checks) == "inconclusive"
    assert summary.headline(flat, [open_, ATIME], checks).startswith(
        "mechanism shown for 1 of 2 changed options; throughput: no slowdown beyond 3% shown")


def test_a_mechanism_against_its_claim_is_worse_and_named() -> None:
    more = _metric("log_writes_per_1k_dirops", "worse", (1.2, 1.5), primary=["logbsize=256k"],
                   higher_is_better=False, ratio=1.3)
    flat = [_metric("creates_per_s", "equivalent", (0.97, 1.03))]
    checks = [_check(more.name, "opposite")]
    assert summary.headline_verdict(flat, [more], checks) == "worse"
    assert summary.headline(flat, [more], checks).startswith(
        "mechanism not shown for the changed option")
    both = [more, ATIME]
    assert "(against its claim: logbsize=256k)" in summary.headline(
        flat, both, [*checks, _check(ATIME.name, "seen", "noatime")])


def test_an_equivalent_run_is_equivalent_not_better() -> None:
    """B = A: the fallback primary (CPU time per directory operation) and every timing figure
    within the margin."""
    same = [_metric("dirops_per_cpu_s", "equivalent", (0.98, 1.02), primary=["B = A"]),
            _metric("creates_per_s", "equivalent", (0.97, 1.04))]
    assert summary.headline_verdict(same, [], []) == "equivalent"
    assert summary.headline(same, [], []).endswith("no slowdown beyond 3% shown")


def test_a_zero_figure_before_its_test_is_not_a_claim_seen() -> None:
    """B did no atime transaction in 3 pairs: the interval is [0, 0] but the rank test cannot
    show it yet, so the claim is not seen (before, [0, 0] read as seen)."""
    from advisor.bench import counters
    from advisor.models.bench import SideConfig
    from advisor.models.rule import MechanismClaim

    three = {"transactions_per_file_read": {"A": [1.0] * 3, "B": [0.0] * 3}}
    judged = counters.judge_none_on_b(three, set())
    claim = MechanismClaim(option="noatime", counter="transactions_per_file_read",
                           expect="less")
    [check] = counters.check_claims([("atime", claim)], SideConfig(label="A"),
                                    SideConfig(label="B", mount_options=["noatime"]), judged)
    assert check.seen == "not seen"
