"""The broker proper, in either metadata mode (Kafka's kafka.server, its broker side):
the socket server and the request handlers (KafkaApis and the group, ACL and config
APIs), the ReplicaManager with its partitions, replica fetchers, fetch sessions and
replication quotas, producer ids, automatic topic creation, the network client
between nodes and the monitor of the node's event loop (loop_monitor.py).

Where metadata comes from is behind one MetadataCache interface: a KRaft broker's is
the image it replays (metadata_cache.py, published to the ReplicaManager by
metadata_publisher.py; registration and heartbeats in lifecycle.py); a ZooKeeper-mode
broker's is what its controller last pushed, kept by zkmode/, which also applies that
controller's LeaderAndIsr and StopReplica to the ReplicaManager's partitions. Either
reaches the controller over the wire (controller_channel.py). Nothing here reads the
metadata log or ZooKeeper, or knows a ZooKeeper-era request: what hosts the metadata
quorum and the controllers is kraft/ and zkmode/, above this package.

Pure rules (replication.py, replication_quota.py, fetch_session.py,
fetch_session_handler.py, config_admin.py, describe_topic_partitions.py) sit beside
the asyncio code that drives them.
"""
