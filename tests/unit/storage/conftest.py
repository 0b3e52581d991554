from pathlib import Path

import pytest

from brownout.protocol.records import build_batch, iter_batches
from brownout.storage import Log, LogConfig

TS = 1_700_000_000_000


def make_batch(n: int = 1, *, ts: int = TS, value_size: int = 10, tag: bytes = b"v",
               **kw) -> bytes:
    return build_batch([(b"k%d" % i, tag * value_size) for i in range(n)], timestamp_ms=ts, **kw)


def headers(data: bytes) -> list:
    return [h for _, h in iter_batches(data)]


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


@pytest.fixture
def open_log(log_dir: Path):
    opened: list[Log] = []

    def _open(clean: bool = True, recovery_point: int = 0, **cfg) -> Log:
        log = Log.open(log_dir, LogConfig(**cfg), clean_shutdown=clean,
                       recovery_point=recovery_point, now_ms=TS) if log_dir.exists() else \
            Log.create(log_dir, LogConfig(**cfg), now_ms=TS)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close()
