"""ZooKeeper mode's shells: what talks to ZooKeeper and what the ZooKeeper-era controller
runs on in a node process (Kafka 3.9's kafka.zk and kafka.controller, and the broker's
ZkAdminManager).

    zk_client                   KafkaZkClient: Kafka's ZooKeeper operations over kazoo,
                                for one asyncio loop
    kafka_controller            KafkaController: the shell around the pure ZkController
                                (zk/controller.py) that every ZooKeeper-mode broker runs
                                and one of them activates by winning /controller
    controller_channel_manager  ControllerChannelManager: the controller's queues and
                                connections to every live broker
    controller_requests         LeaderAndIsr, UpdateMetadata and StopReplica on the wire,
                                and the answers to ControlledShutdown and AlterPartition
    zk_admin_manager            ZkAdminManager: a broker that writes topics and producer
                                id blocks to ZooKeeper itself

The decisions are pure and live in zk/ (znode layout, elections, the controller's
core); the server that builds a ZooKeeper-mode broker is server/kafka_server.py. What a
ZooKeeper-mode broker does with its controller's requests (ZkBrokerApis) and the
metadata cache they fill (ZkMetadataCache) talk to no ZooKeeper and are broker/'s, as
Kafka keeps them in kafka.server.
"""
