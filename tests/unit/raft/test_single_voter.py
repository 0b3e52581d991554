import random

from brownout.raft import RaftConfig, RaftLog, RaftNode, Role


def test_the_only_voter_leads_without_waiting_for_an_election_timeout():
    node = RaftNode(1, frozenset({1}), RaftConfig(), random.Random(1), None, RaftLog(), 0)
    node.tick(0)
    while node.has_ready():
        node.advance(node.ready())
    assert node.role is Role.LEADER and node.epoch == 1


def test_a_voter_among_several_waits_for_its_election_timeout():
    node = RaftNode(1, frozenset({1, 2, 3}), RaftConfig(), random.Random(1), None, RaftLog(), 0)
    node.tick(0)
    assert node.role is Role.UNATTACHED
    node.tick(RaftConfig().election_timeout_ms * 2)
    assert node.role is Role.CANDIDATE
