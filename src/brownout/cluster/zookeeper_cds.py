"""A class-data sharing archive for the lab's ZooKeeper servers, so they start on less CPU.

A ZooKeeper-mode lab starts three ZooKeeper JVMs per cluster (the suite about fifty),
and a JVM's start is mostly loading and verifying classes. As for Kafka (`kafka_cds`),
one throwaway server is started with ``-XX:ArchiveClassesAtExit`` and stopped with
SIGTERM, which dumps the classes it loaded; every server then starts with
``-XX:SharedArchiveFile``: 0.7-0.85 s of CPU instead of 1.2 s to serving, measured on
this project's two-core machine. The servers run from PySpark's jars, so the archive
is made by `brownout spark install` and kept in the cache under a name derived from
those jars (`common.java.class_data_archive`): another PySpark (other jars) gets
another archive, and one the JVM cannot use is ignored with a warning line, never an
error. Without an archive the servers start as before.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..common.java import ArchiveError, class_data_archive, dump_class_data
from ..common.properties import format_properties
from . import zookeeper as zk
from .ports import PortAllocator

ARCHIVE_TIMEOUT_S = 120.0


def archive_path(jars: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where the archive for the servers of `jars` lives (common/java.py)."""
    names = sorted(p.name.removesuffix(".jar") for p in jars.glob("zookeeper-3.*.jar"))
    return class_data_archive(jars, names[0] if names else "zookeeper", env)


def existing_archive(jars: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The archive for `jars` when it has been made, else None (the servers start
    without one)."""
    path = archive_path(jars, env)
    return path if path.is_file() else None


def make_archive(java: Path, jars: Path, env: Mapping[str, str] | None = None,
                 timeout: float = ARCHIVE_TIMEOUT_S) -> Path:
    """Make the archive for `jars` (replacing any): a one-voter quorum on loopback (the
    quorum code an ensemble's servers run, which a standalone server skips), started,
    asked `srvr` until it serves, then stopped. ZooKeeperError saying why not."""
    target = archive_path(jars, env)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="brownout-zookeeper-cds-") as tmp:
        with PortAllocator() as allocate:
            ports = {name: allocate() for name in zk.PORT_NAMES}
        spec = zk.ZooKeeperSpec(1, ports, Path(tmp), "127.0.0.1")
        spec = dataclasses.replace(spec, properties={
            **zk.zoo_cfg(spec, [spec]), "standaloneEnabled": False,
            f"server.{spec.server_id}": spec.server_line})
        spec.data_dir.mkdir(parents=True)
        spec.myid_path.write_text(f"{spec.server_id}\n")
        spec.config_path.write_text(format_properties(spec.properties, "class-data archive"))
        spec.log_config_path.write_text(zk.LOG4J2_PROPERTIES)
        try:
            dump_class_data(zk.command(java, jars, spec), partial, spec.log_path, Path(tmp),
                            lambda: zk.server_status(spec.client_address, 1.0).serving,
                            "the class-data archive's server", timeout)
        except ArchiveError as e:
            raise zk.ZooKeeperError(str(e)) from None
    os.replace(partial, target)
    return target
