"""The servers a node process is made of, named as in Kafka: a KRaft node
(`KafkaRaftServer`) is a `SharedServer` (metadata quorum, event stream, loop monitor)
with a `ControllerServer` and/or a `BrokerServer` on top; a ZooKeeper-mode broker is a
`KafkaServer`. They build the parts of broker/, kraft/ and zkmode/ into a process and
start and stop them in Kafka's order."""
