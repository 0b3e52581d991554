"""kcat (librdkafka's command-line client, Debian package `kcat`) against a real node."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from _kafka_clients import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

KCAT = shutil.which("kcat") or shutil.which("kafkacat")

needs_kcat = pytest.mark.skipif(
    KCAT is None,
    reason="kcat is not installed (Debian: apt-get install kcat); the kcat tests need it",
)


def kcat(*args: str, stdin: str | None = None, timeout: float = 20) -> str:
    assert KCAT is not None
    result = subprocess.run(
        [KCAT, "-X", "socket.timeout.ms=5000", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"kcat {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


@needs_kcat
def test_metadata_listing(node, topic):
    create_topic(node.bootstrap, topic, 2)
    out = kcat("-b", node.bootstrap, "-L", "-t", topic)
    assert "1 brokers:" in out
    assert f"broker 1 at {node.bootstrap}" in out
    assert f'topic "{topic}" with 2 partitions:' in out
    assert "partition 0, leader 1, replicas: 1, isrs: 1" in out
    assert "partition 1, leader 1, replicas: 1, isrs: 1" in out


@needs_kcat
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume(node, topic, codec):
    create_topic(node.bootstrap, topic, 1)
    lines = [f"key{i}:line {i} from kcat" for i in range(25)]
    kcat(
        "-b",
        node.bootstrap,
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        "-K:",
        "-z",
        codec,
        "-X",
        "acks=all",
        stdin="\n".join(lines) + "\n",
    )
    out = kcat(
        "-b",
        node.bootstrap,
        "-C",
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-f",
        "%o|%k|%s\n",
    )
    assert out.splitlines() == [f"{i}|key{i}|line {i} from kcat" for i in range(25)]
    # -o with an absolute offset, and -c to stop after N messages
    out = kcat(
        "-b", node.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "20", "-c", "3", "-f", "%o %s\n"
    )
    assert out.splitlines() == [f"{i} line {i} from kcat" for i in range(20, 23)]


@needs_kcat
def test_query_offsets(node, topic):
    create_topic(node.bootstrap, topic, 1)
    kcat("-b", node.bootstrap, "-P", "-t", topic, "-p", "0", stdin="a\nb\nc\n")
    # -Q with timestamp -1 (latest) and -2 (earliest)
    out = kcat("-b", node.bootstrap, "-Q", "-t", f"{topic}:0:-1")
    assert out.strip() == f"{topic} [0] offset 3", out
    out = kcat("-b", node.bootstrap, "-Q", "-t", f"{topic}:0:-2")
    assert out.strip() == f"{topic} [0] offset 0", out
