"""Checkers: pure functions over a run's history and a final read of the log."""
