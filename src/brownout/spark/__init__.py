"""Spark over the lab's topics: a Kafka data source written in Python
(`format("brownout-kafka")`), streaming jobs over the workloads, and an end-to-end
audit of their output against the producers' history and the log.

Importing this package does not import pyspark; the modules do.
"""
