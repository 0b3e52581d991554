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
    zk_apis                     ZkBrokerApis: a broker's handlers of its controller's
                                LeaderAndIsr, StopReplica and UpdateMetadata
    zk_metadata_cache           ZkMetadataCache: the cluster as UpdateMetadata last said
    zk_replica_manager          ZkReplicaManager: what those requests do to the partitions
                                the broker's ReplicaManager hosts (Kafka keeps this half
                                in its ReplicaManager)

The decisions are pure and live in zk/ (znode layout, elections, the controller's
core); the server that builds a ZooKeeper-mode broker is server/kafka_server.py.
"""
