"""KRaft's QuorumController as pure decisions (Kafka's org.apache.kafka.controller and
its metadata image): the records of the `__cluster_metadata` log (records.py), the
image they replay into (image.py), and what the active controller decides for each
request, as records to append: topics, partitions, configs, ACLs, elections,
reassignments, broker registrations, heartbeats, fencing and ISR changes
(quorum_controller.py ties them together). No I/O, no clocks: time comes in as input.

Its asyncio shell is kraft/controller_runtime.py, the controller listener's handlers
kraft/controller_apis.py; server/controller_server.py (Kafka's ControllerServer) builds
them into a node. The ZooKeeper-era controller (Kafka 3.9's KafkaController) is not
here: its pure core is zk/controller.py and its shell zkmode/kafka_controller.py.
"""
