"""How long a stopping producer waits for its outstanding sends."""

from __future__ import annotations

from brownout.workload.producer import DRAIN_MARGIN_S, ProducerSettings


def test_a_fixed_flush_timeout_is_kept() -> None:
    assert ProducerSettings("b:9092", "t", flush_timeout=3.0).drain_timeout == 3.0


def test_without_one_the_drain_waits_for_the_delivery_timeout() -> None:
    s = ProducerSettings("b:9092", "t", flush_timeout=None, message_timeout_ms=20_000)
    assert s.delivery_timeout_ms == 20_000
    assert s.drain_timeout == 20.0 + DRAIN_MARGIN_S


def test_the_client_config_names_the_delivery_timeout_either_way() -> None:
    for key in ("delivery.timeout.ms", "message.timeout.ms"):
        s = ProducerSettings("b:9092", "t", flush_timeout=None, config={key: "7000"})
        assert s.delivery_timeout_ms == 7000
        assert s.drain_timeout == 7.0 + DRAIN_MARGIN_S
