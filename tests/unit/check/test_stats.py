"""Rates with Wilson score intervals, spreads, and the seeds of repeated runs."""

import pytest

from brownout.check.stats import Rate, Spread, derive_seed, wilson_interval


@pytest.mark.parametrize(("successes", "trials", "low", "high"), [
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion",
    # Table I, method 3 (Wilson score, no continuity correction)
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
    # the ends of a small sample: 0 of 10 and 10 of 10 mirror each other
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (5, 10, 0.2366, 0.7634),
])
def test_wilson_interval_matches_published_values(successes, trials, low, high):
    got = wilson_interval(successes, trials)
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_interval_without_trials_knows_nothing_and_refuses_nonsense():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for bad in ((3, 2), (-1, 2), (0, -1)):
        with pytest.raises(ValueError):
            wilson_interval(*bad)


def test_rate_reports_count_runs_rate_and_interval():
    assert Rate(1, 4).to_dict() == {"count": 1, "runs": 4, "rate": 0.25,
                                    "interval95": [0.0456, 0.6994]}
    assert Rate(0, 0).to_dict()["rate"] is None


def test_spread_of_values():
    s = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert s is not None
    assert (s.n, s.mean, s.median, s.min, s.max) == (4, 4.0, 2.5, 1.0, 10.0)
    assert Spread.of([]) is None


def test_derived_seeds_are_fixed_distinct_and_small():
    seeds = [derive_seed(0, k) for k in range(1, 201)]
    assert seeds == [derive_seed(0, k) for k in range(1, 201)]
    assert len(set(seeds)) == len(seeds)
    assert all(0 <= s < 2**31 for s in seeds)
    # neighbouring base seeds do not share runs
    assert not set(seeds) & {derive_seed(1, k) for k in range(1, 201)}
    assert derive_seed(7, 1) != derive_seed(7, 2)
