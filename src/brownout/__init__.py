"""Brownout: a laboratory for Kafka availability and durability."""

__version__ = "0.1.0"
