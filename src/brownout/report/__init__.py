"""The report of one run: an HTML page (report.html) and a terminal summary.

`render_report(run_dir)` writes run_dir/report.html: header with the verdict and the
expectations, a timeline of faults, writes per second, partition leaders and ISR sizes,
the controller, consumer lag and rebalances, the lost writes with their reasons, the
per-partition view and links to node logs. `print_summary(run_dir)` prints the same
verdict and numbers as rich tables. `data.load_run` holds the series both are made of.
"""

from brownout.report.data import RunData, load_run
from brownout.report.html import REPORT_FILE, render_report
from brownout.report.terminal import print_summary, summary_renderables

__all__ = [
    "REPORT_FILE",
    "RunData",
    "load_run",
    "print_summary",
    "render_report",
    "summary_renderables",
]
