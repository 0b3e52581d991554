"""The `__cluster_metadata` log on disk.

Raft entries live in it as record batches (see raft_manager.py for the encoding);
the Raft state machine itself is pure (raft/) and this is only where its log is kept.
"""

from __future__ import annotations

from pathlib import Path

from ..controller.topics import CLUSTER_METADATA_TOPIC
from ..storage import Log, LogConfig

METADATA_TOPIC = CLUSTER_METADATA_TOPIC
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"


def open_metadata_log(metadata_log_dir: Path) -> Log:
    directory = metadata_log_dir / METADATA_PARTITION_DIR
    config = LogConfig()
    if directory.exists():
        # Recover the tail like any log: the last batch may be torn after kill -9.
        return Log.open(directory, config, recovery_point=0, clean_shutdown=False)
    return Log.create(directory, config)
