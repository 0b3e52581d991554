"""KRaft's shells: what hosts the metadata quorum and the QuorumController in a node
process (Kafka's kafka.raft, and the event queue and ControllerApis around
org.apache.kafka.controller).

    raft_manager        RaftManager: the asyncio shell of the pure Raft core (raft/):
                        quorum-state file, metadata log fsyncs, RPCs to other voters,
                        committed records handed on
    metadata_log        the __cluster_metadata log on disk and replaying its records
                        into a MetadataImage
    controller_runtime  ControllerRuntime, the active controller's one-at-a-time shell
                        around the pure QuorumController (controller/)
    controller_apis     ControllerApis, the controller listener's handlers

The decisions themselves are pure and live in raft/ and controller/; the servers that
build these shells into a node are server/ (SharedServer, ControllerServer). A KRaft
broker's own side (registration and heartbeats, its metadata cache and publisher) is
broker/'s. The ZooKeeper-era controller is elsewhere: zk/ (its core) and zkmode/.
"""
