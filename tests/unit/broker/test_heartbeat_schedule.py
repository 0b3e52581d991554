"""When a broker's next heartbeat goes out, as Kafka's BrokerLifecycleManager schedules
it: the cadence decides how long a broker in controlled shutdown stays reachable after
its leaderships moved (the grant comes in the answer to one of its heartbeats)."""

import pytest

from brownout.broker.lifecycle import next_heartbeat_s

INTERVAL = 0.5
SESSION = 3.0


def after(*, registered=True, caught_up=True, shutdown_answers=0, failed_attempts=0):
    return next_heartbeat_s(INTERVAL, registered=registered, caught_up=caught_up,
                            shutdown_answers=shutdown_answers,
                            failed_attempts=failed_attempts, session_timeout_s=SESSION)


def test_a_running_broker_heartbeats_every_interval():
    assert after() == INTERVAL


def test_a_starting_broker_heartbeats_every_10_ms_until_caught_up():
    assert after(registered=False, caught_up=False) == 0.05  # registration retried
    assert after(caught_up=False) == 0.01


@pytest.mark.parametrize(("answers", "delay"), [(1, 0.05), (2, INTERVAL), (7, INTERVAL)])
def test_a_pending_shutdown_asks_again_soon_once_then_every_interval(answers, delay):
    # Kafka: after the controller's first "not yet" the next heartbeat goes out 50 ms
    # later (a shutdown with nothing to wait for is quick), afterwards one interval.
    assert after(shutdown_answers=answers) == delay


def test_failed_heartbeats_back_off_exponentially_up_to_the_session():
    assert [after(failed_attempts=n) for n in (1, 2, 3, 4, 5, 6)] == \
        [0.1, 0.2, 0.4, 0.8, 1.6, SESSION]
    # a failure outranks every state
    assert after(caught_up=False, shutdown_answers=1, failed_attempts=1) == 0.1
