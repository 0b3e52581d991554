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
