"""Kafka's wire protocol, as both the node and the lab speak it: framing and request
headers over kio (connection.py, sans-I/O), the bounds check of every frame before it
is decoded (framecheck.py) and Kafka's looser reading of what that check refuses
(kafka_reader.py), the APIs and versions the node advertises (apis.py),
version-free values into kio entities (build.py), error codes (errors.py), record
batches and their codecs (records.py, compression.py) and sample instances for tests
(samples.py). zkapis/ holds the ZooKeeper-era controller APIs that kio lacks.
"""
