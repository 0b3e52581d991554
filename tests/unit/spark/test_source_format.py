from types import SimpleNamespace

from brownout.spark.session import KAFKA_PROVIDER, source_format


def fake_spark(has_kafka: bool):  # type: ignore[no-untyped-def]
    def for_name(name: str) -> object:
        if has_kafka and name == KAFKA_PROVIDER:
            return object()
        raise RuntimeError(f"java.lang.ClassNotFoundException: {name}")

    lang = SimpleNamespace(Class=SimpleNamespace(forName=for_name))
    return SimpleNamespace(_jvm=SimpleNamespace(java=SimpleNamespace(lang=lang)))


def test_spark_with_the_kafka_jars_uses_its_own_source():
    assert source_format(fake_spark(True)) == "kafka"


def test_spark_without_them_uses_brownouts_source():
    assert source_format(fake_spark(False)) == "brownout-kafka"


def test_an_explicit_choice_wins():
    assert source_format(fake_spark(True), "brownout-kafka") == "brownout-kafka"
