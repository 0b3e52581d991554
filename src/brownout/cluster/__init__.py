"""The lab's clusters: a topology's shape into one server.properties per node
(topology.py), the working directory's state, ports and network namespaces, starting,
watching, signalling and stopping node processes (supervisor.py, process.py) and a real
ZooKeeper ensemble (zookeeper.py, ensemble.py), the cluster's life cycle
(lab.py: up, down, status), and Apache Kafka's own JVMs as the engine (distribution.py,
kafka_install.py, launcher.py, kafka_tools.py).

It talks to a running cluster only as a user of Apache Kafka would: over the Kafka
protocol (wire.py, admin.py, configs.py, groups.py, quorum.py, reassign.py), with
signals, and through ZooKeeper's znodes (znodes.py). So it drives Brownout's node and
Kafka's alike, and imports none of the node's servers.
"""
