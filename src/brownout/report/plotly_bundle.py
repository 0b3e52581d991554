"""plotly.js beside each page, one copy on disk.

A page (report.html, sweep.html) loads plotly's bundle (4.8 MB) from a file beside it,
so that it still opens offline and its folder can be copied on its own. The file is a
hard link to the bundle plotly's package ships, not a copy: a sweep of 150 runs holds
150 names for one 4.8 MB file instead of 700 MB of the same script. Where a hard link
cannot be made (another file system), the file is copied.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from importlib import resources
from pathlib import Path

import plotly

BUNDLE = f"plotly-{plotly.__version__}.min.js"
SCRIPT_TAG = f'<script type="text/javascript" src="{BUNDLE}"></script>'


def shipped_bundle() -> Path:
    """The bundle plotly's package ships (what plotly.offline.get_plotlyjs reads)."""
    return Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))


def place_bundle(page_dir: Path) -> Path:
    """The bundle in `page_dir` (made there when missing); its path."""
    target = Path(page_dir) / BUNDLE
    if target.is_file():
        return target
    source = shipped_bundle()
    tmp = target.with_name(f"{BUNDLE}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    tmp.replace(target)
    return target


def inlined(page: str) -> str:
    """`page` with the bundle inside it instead of beside it: for a page shown where the
    file beside it cannot be reached (a notebook's iframe)."""
    return page.replace(SCRIPT_TAG, f'<script type="text/javascript">'
                        f'{shipped_bundle().read_text(encoding="utf-8")}</script>', 1)

