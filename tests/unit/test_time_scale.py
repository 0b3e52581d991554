"""The suite's time scale (tests/_time_scale.py): what BROWNOUT_TEST_TIME_SCALE accepts."""

from __future__ import annotations

import pytest
from _time_scale import DEFAULT_TIME_SCALE, parse_time_scale


def test_unset_or_empty_means_the_default() -> None:
    assert parse_time_scale(None) == DEFAULT_TIME_SCALE
    assert parse_time_scale("  ") == DEFAULT_TIME_SCALE


def test_a_number_is_the_scale() -> None:
    assert parse_time_scale("1") == 1.0
    assert parse_time_scale(" 2.5 ") == 2.5


@pytest.mark.parametrize("value", ["fast", "0", "-1", "nan", "inf"])
def test_anything_else_is_refused_with_the_variable_named(value: str) -> None:
    with pytest.raises(ValueError, match="BROWNOUT_TEST_TIME_SCALE"):
        parse_time_scale(value)
