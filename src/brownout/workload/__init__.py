"""Workloads: stream generators, producers and consumers that record a history."""
