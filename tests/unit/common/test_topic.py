"""Kafka's topic name rules, with its messages (Topic.validate, Kafka 3.4 on: what
CreateTopics, DescribeProducers and the tools print for a refused name)."""

from __future__ import annotations

import pytest

from brownout.common.topic import validate_topic_name


@pytest.mark.parametrize(("name", "reason"), [
    ("", "the empty string is not allowed"),
    (".", "'.' is not allowed"),
    ("..", "'..' is not allowed"),
    ("x" * 250, f"the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ("a b", "'a b' contains one or more characters other than ASCII alphanumerics, '.', "
            "'_' and '-'"),
])
def test_a_refused_name_is_named_in_kafkas_words(name: str, reason: str) -> None:
    assert validate_topic_name(name) == f"Topic name is invalid: {reason}"


@pytest.mark.parametrize("name", ["a", "...", "a.b_c-D9", "x" * 249])
def test_legal_names_pass(name: str) -> None:
    assert validate_topic_name(name) is None
