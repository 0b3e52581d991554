"""How the admin facade reads librdkafka's errors."""

from confluent_kafka import KafkaError, KafkaException

from brownout.cluster.admin import LOST_REQUEST_ERRORS, _error_name


def test_a_request_lost_with_its_broker_handle_is_one_to_send_again():
    lost = KafkaException(KafkaError(KafkaError._DESTROY_BROKER))
    assert _error_name(lost) == "_DESTROY_BROKER" and _error_name(lost) in LOST_REQUEST_ERRORS
    exists = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS))
    assert _error_name(exists) == "TOPIC_ALREADY_EXISTS"
    assert _error_name(exists) not in LOST_REQUEST_ERRORS
    assert _error_name(ValueError("x")) is None


class _Answers:
    """librdkafka's list_offsets stand-in: each call answers from the next script line
    (partition -> offset, or a KafkaError code), as futures."""

    def __init__(self, script):
        self.script, self.asked = list(script), []

    def list_offsets(self, query, request_timeout):
        from concurrent.futures import Future
        from types import SimpleNamespace

        answers = self.script.pop(0)
        self.asked.append(sorted(tp.partition for tp in query))
        out = {}
        for tp in query:
            f, answer = Future(), answers[tp.partition]
            if isinstance(answer, int) and answer >= 0:
                f.set_result(SimpleNamespace(offset=answer))
            else:
                f.set_exception(KafkaException(KafkaError(-answer)))
            out[tp] = f
        return out


def _admin(script):
    from brownout.cluster.admin import Admin, DescribedPartition, DescribedTopic

    admin = Admin("127.0.0.1:9", timeout=5.0)  # never connects: its client is replaced
    admin.client = _Answers(script)
    admin.describe = lambda topics: [DescribedTopic("t", "", tuple(
        DescribedPartition(p, None if p == 2 else 1, (1, 2), (1, 2)) for p in range(3)))]
    return admin


def test_offsets_asks_again_while_the_leader_catches_up_with_the_metadata():
    # a restarted leader answers UNKNOWN_LEADER_EPOCH until it applies the new epoch;
    # Kafka's clients retry it, so does `brownout offsets`; partition 2 has no leader
    epoch = -KafkaError.UNKNOWN_LEADER_EPOCH
    admin = _admin([{0: 10, 1: epoch}, {1: epoch}, {1: 7}])
    results = admin.offsets("t")
    assert [(r.partition, r.offset, r.error) for r in results] == [
        (0, 10, None), (1, 7, None), (2, None, "no leader")]
    assert admin.client.asked == [[0, 1], [1], [1]]


def test_offsets_reports_an_error_kafka_does_not_retry_at_once():
    admin = _admin([{0: -KafkaError.TOPIC_AUTHORIZATION_FAILED, 1: 3}])
    results = admin.offsets("t")
    assert results[0].offset is None and results[0].error.startswith(
        "TOPIC_AUTHORIZATION_FAILED")
    assert admin.client.asked == [[0, 1]]
