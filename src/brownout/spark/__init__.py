"""Spark over the lab's topics: streaming jobs over the workloads, reading Kafka with
Spark's own source (format("kafka"), spark-sql-kafka-0-10), and an end-to-end audit of
their output against the producers' history and the log.

Importing this package does not import pyspark; the modules do.
"""
