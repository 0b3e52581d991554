"""Kafka 3.9's ZooKeeper mode, as pure cores: the znode layout (`data`), the leader
election rules (`election`) and the controller's decisions (`controller`)."""
