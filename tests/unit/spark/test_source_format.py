from __future__ import annotations

from types import SimpleNamespace

import pytest

from brownout.spark.session import (
    KAFKA_PROVIDER,
    KafkaSourceMissing,
    kafka_package,
    kafka_reader,
    require_kafka_source,
    with_package,
)


def fake_spark(has_kafka: bool):  # type: ignore[no-untyped-def]
    def class_for_name(name: str, initialize: bool, no_spark_loader: bool) -> object:
        if has_kafka and name == KAFKA_PROVIDER and not no_spark_loader:
            return object()
        raise RuntimeError(f"java.lang.ClassNotFoundException: {name}")

    utils = SimpleNamespace(Utils=SimpleNamespace(classForName=class_for_name))
    org = SimpleNamespace(apache=SimpleNamespace(spark=SimpleNamespace(util=utils)))
    return SimpleNamespace(_jvm=SimpleNamespace(org=org))


def test_a_session_with_the_jars_has_the_source():
    require_kafka_source(fake_spark(True))


def test_a_session_without_its_jars_is_an_error_that_says_what_to_do():
    with pytest.raises(KafkaSourceMissing, match=r"spark.jars.packages=org\.apache\.spark:"
                       r"spark-sql-kafka-0-10_2\.13:.*brownout spark install"):
        require_kafka_source(fake_spark(False))


class FakeReader:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def format(self, name: str) -> FakeReader:
        self.calls.append(("format", name))
        return self

    def option(self, key: str, value: str) -> FakeReader:
        self.calls.append(("option", key, value))
        return self


def test_the_reader_is_sparks_kafka_source_with_headers():
    # The workloads' message ids are in the headers, which Spark leaves out unless asked.
    reader = FakeReader()
    assert kafka_reader(reader) is reader
    assert reader.calls == [("format", "kafka"), ("option", "includeHeaders", "true")]


def test_the_package_is_at_the_given_spark_version():
    assert kafka_package("4.2.0") == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


def test_the_package_joins_a_users_packages_once():
    pkg = kafka_package("4.2.0")
    assert with_package({}, pkg) == {"spark.jars.packages": pkg}
    conf = {"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0", "x": "1"}
    assert with_package(conf, pkg) == {
        "spark.jars.packages": f"io.delta:delta-spark_2.13:4.0.0,{pkg}", "x": "1"}
    assert with_package(with_package(conf, pkg), pkg) == with_package(conf, pkg)


def test_the_install_advice_names_the_package_the_cause_and_the_way_out():
    from brownout.spark.session import install_advice

    text = install_advice("org.apache.spark:spark-sql-kafka-0-10_2.13:9.9.9",
                          RuntimeError("Java gateway exited\n:: UNRESOLVED DEPENDENCIES ::\n"
                                       "org.apache.spark#spark-sql-kafka-0-10_2.13;9.9.9: "
                                       "not found"))
    assert "spark-sql-kafka-0-10_2.13:9.9.9 through spark.jars.packages" in text
    assert "(:: UNRESOLVED DEPENDENCIES ::)" in text
    assert "Maven Central" in text
