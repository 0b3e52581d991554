"""Text files a user hands to a command (scenarios, nodes files, properties, JSON and CSV
plans, payloads), read as UTF-8.

A file that is not UTF-8 text fails as a file that cannot be read does: an OSError
(EILSEQ) whose strerror says so and names the first byte that is not, and whose filename
is the file's. A reader's one `except OSError` then reports both in its own words, and
the commands' error handling turns both into one line instead of a traceback.
"""

from __future__ import annotations

import errno
from pathlib import Path


def read_text(path: Path | str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise OSError(errno.EILSEQ, f"not UTF-8 text (byte {e.start}: {e.reason})",
                      str(path)) from None
