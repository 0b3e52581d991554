"""The servers a node process is made of, named as in Kafka: a KRaft node
(`KafkaRaftServer`) is a `SharedServer` (metadata quorum, event stream, loop monitor)
with a `ControllerServer` and/or a `BrokerServer` on top."""
