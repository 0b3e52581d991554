"""The console producer's report of a record the cluster did not take, as Kafka's tool
logs it."""

from brownout.cluster.console_clients import send_failure
from brownout.cluster.console_reader import LineRecord


class FakeError:
    def name(self) -> str:
        return "MSG_SIZE_TOO_LARGE"

    def str(self) -> str:
        return "Broker: Message size too large"


def test_a_failed_send_is_reported_with_the_sizes_of_key_and_value():
    assert send_failure("t", LineRecord(None, b"abc"), FakeError()) == (
        "Error when sending message to topic t with key: null, value: 3 bytes with error: "
        "MSG_SIZE_TOO_LARGE: Broker: Message size too large")
    assert "key: 0 bytes, value: null" in send_failure("t", LineRecord(b"", None),
                                                       FakeError())
