"""The node's server.properties: a file that is missing, or not text, is a
NodeStartupError (main logs it as an invalid configuration, exit status 2), not a
traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from brownout.node import NodeStartupError, load_config


@pytest.mark.parametrize(("content", "words"), [
    (None, "config file {path} does not exist"),
    (b"node.id=1\n\xff\n", "cannot read {path}: not UTF-8 text (byte 10: invalid start byte)"),
])
def test_a_config_that_cannot_be_read_stops_the_start(tmp_path: Path, content: bytes | None,
                                                      words: str) -> None:
    path = tmp_path / "server.properties"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(NodeStartupError) as refused:
        load_config(path, [])
    assert str(refused.value) == words.format(path=path)
