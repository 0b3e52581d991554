"""report.html in a real browser: headless Chromium (Debian package `chromium`) opens a
synthetic run's report offline and every chart must have drawn its SVG, without a
JavaScript error. No cluster is needed: the run directory is made by hand."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from brownout.report import render_report

HERE = Path(__file__).resolve().parent
CHARTS = ["chart-writes", "chart-leaders", "chart-isr", "chart-controller", "chart-lag"]


def _synthetic():
    """tests/unit/report/synthetic.py (the unit tests' run-directory builder)."""
    path = HERE.parent / "unit" / "report" / "synthetic.py"
    spec = importlib.util.spec_from_file_location("report_synthetic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed: it is the Debian package `chromium` "
                "(in the Makefile's SYSTEM_PACKAGES; `make test` installs it as root)")


def _browse(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
               "--virtual-time-budget=5000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)


def test_report_renders_in_headless_chromium(tmp_path: Path):
    browser = _chromium()
    run = _synthetic().make_run(tmp_path / "run")
    page = render_report(run)
    url = page.resolve().as_uri()

    result = _browse(browser, tmp_path / "profile", "--dump-dom", url)
    dom = result.stdout
    assert result.returncode == 0 and "<body" in dom, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if re.search(r"Uncaught|Error", line)], console
    # the page's own error trap stayed empty and hidden
    trap = re.search(r'<pre id="js-errors"([^>]*)>(.*?)</pre>', dom, re.S)
    assert trap is not None and "hidden" in trap.group(1) and trap.group(2) == ""
    assert f'data-charts-rendered="{len(CHARTS)}"' in dom
    # each chart div holds plotly's drawn SVG
    positions = [dom.index(f'id="{c}"') for c in CHARTS]
    assert positions == sorted(positions)
    for i, start in enumerate(positions):
        end = positions[i + 1] if i + 1 < len(positions) else len(dom)
        assert 'class="main-svg"' in dom[start:end], CHARTS[i]
    assert dom.count('class="main-svg"') >= len(CHARTS)
    assert "heatmaplayer" in dom  # the leader and ISR heatmaps drew their layer


def test_report_screenshot(tmp_path: Path):
    browser = _chromium()
    run = _synthetic().make_run(tmp_path / "run")
    page = render_report(run)
    shot = tmp_path / "report.png"
    result = _browse(browser, tmp_path / "profile", "--hide-scrollbars",
                     "--window-size=1280,2400", f"--screenshot={shot}",
                     page.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
