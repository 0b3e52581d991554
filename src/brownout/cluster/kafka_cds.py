"""A class-data sharing archive per installed Kafka version, so its JVMs start on less CPU.

A Kafka node spends most of its start loading and verifying several thousand classes
from some ninety jars; on the lab's two cores, with four nodes starting at once, that
is what a cluster waits for. The JDK can map classes it loaded once from an archive
instead (AppCDS, JDK 13+): `brownout kafka install` runs one throwaway combined node of
the version with ``-XX:ArchiveClassesAtExit`` (the classes of a start, dumped when the
JVM exits after SIGTERM), and every node and storage tool of that version then starts
with ``-XX:SharedArchiveFile`` (`launcher`). The class path must be the one the archive
was made with, which it is: the version's own libs/. An archive the JVM cannot use (a
new JDK, a changed libs/) is ignored by the JVM with a warning line, never an error, so
the archive is only ever a speed-up.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..common.java import ArchiveError, dump_class_data
from . import launcher
from .distribution import CDS_ARCHIVE, Distribution, DistributionError
from .ports import PortAllocator

READY = b"Kafka Server started"
ARCHIVE_TIMEOUT_S = 240.0
# A throwaway cluster id (22 characters of base64, as `kafka-storage random-uuid` prints).
CLUSTER_ID = "YnJvd25vdXQtY2RzLWFyYw"


def archive_properties(data_dir: Path, port: int, controller_port: int) -> str:
    """One combined node on loopback: enough of Kafka to load what a node loads."""
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        "controller.listener.names=CONTROLLER",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={data_dir}",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "",
    ])


def make_archive(distribution: Distribution, java: Path,
                 timeout: float = ARCHIVE_TIMEOUT_S) -> Path:
    """Make `distribution`'s archive (replacing any); DistributionError saying why not."""
    target = distribution.home / CDS_ARCHIVE
    partial = distribution.home / f".{CDS_ARCHIVE}.partial"
    with tempfile.TemporaryDirectory(prefix="brownout-kafka-cds-") as tmp:
        node_dir = Path(tmp)
        config = node_dir / "server.properties"
        with PortAllocator() as allocate:
            port, controller_port = allocate(), allocate()
        config.write_text(archive_properties(node_dir / "data", port, controller_port))
        without = Distribution(distribution.home, distribution.version, use_cds=False)
        launcher.format_storage(without, java, CLUSTER_ID, [config])
        argv = launcher.node_argv(without, java, config, node_dir / "events.jsonl")
        log_path = node_dir / "node.log"
        try:
            dump_class_data(argv, partial, log_path, node_dir,
                            lambda: READY in log_path.read_bytes(),
                            "the class-data archive's node", timeout)
        except ArchiveError as e:
            raise DistributionError(str(e)) from None
    os.replace(partial, target)
    return target
