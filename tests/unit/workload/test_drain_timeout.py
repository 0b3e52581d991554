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


def test_an_interrupted_run_stops_its_producers_promptly(tmp_path) -> None:
    # Nothing listens on the bootstrap port: every send stays outstanding until its
    # delivery timeout (10 minutes here). hurry() bounds the drain instead; the sends
    # still outstanding are purged, each with its (indeterminate) completion.
    import socket
    import time

    from brownout.workload.run import WorkloadRun

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        bootstrap = f"127.0.0.1:{s.getsockname()[1]}"
    settings = ProducerSettings(bootstrap, "t", workload="clicks", rate=200, duration=None,
                                flush_timeout=None, message_timeout_ms=600_000)
    assert settings.drain_timeout > 600
    with WorkloadRun(tmp_path, bootstrap=bootstrap, command="test") as run:
        group = run.add_producers(settings)
        run.start()
        deadline = time.monotonic() + 60
        while group.totals()["sent"] < 10:
            assert time.monotonic() < deadline, "the producer sent nothing"
            time.sleep(0.05)
        run.hurry(1.0)
    totals = run.entry["totals"]
    assert run.entry["stragglers"] == []  # every producer thread ended within close()
    assert totals["purged"] == totals["outstanding_at_stop"] > 0
    assert totals["info"] == totals["sent"]  # every send completed: indeterminate
