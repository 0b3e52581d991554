"""A deterministic simulator for the ZooKeeper-era controller: brokers that die, come
back, shut down cleanly and grow or shrink their ISRs through AlterPartition; a
ZooKeeper that applies the controller's conditional writes and refuses the stale ones;
controller failovers, some of which leave the old controller running for a while (a
zombie that has not noticed it lost /controller). Everything derives from one seed.

The shell does what a real one must: perform the actions in order, stop at the first
write ZooKeeper refuses and report it (Resigned, or PartitionStateConflict with the
state read back), deliver requests to live brokers, route answers.

Checked at every write that reaches ZooKeeper (`Violation` at the first broken rule):
- a leader is always in the ISR, and the ISR is never empty;
- leader epochs never go back, and the zkVersion grows by one per write;
- without unclean election, a new leader was in the ISR before it was elected;
- no write from a controller whose epoch is older than the one stored.
After every event the active controller's cache equals ZooKeeper; brokers only ever
adopt growing leader epochs.
"""

from __future__ import annotations

import dataclasses
import random

from brownout.zk import (
    LeaderAndIsr,
    LeaderRecoveryState,
    TopicPartition,
    ZkController,
    ZkControllerConfig,
)
from brownout.zk.data import BrokerInfo, EndPoint, TopicZnode
from brownout.zk.leader_and_isr import NO_LEADER, ReplicaAssignment
from brownout.zk.messages import (
    AlterPartition,
    AlterPartitionItem,
    AlterPartitionResponse,
    AutoPreferredReplicaLeaderElection,
    BecameController,
    BrokerChange,
    ControlledShutdown,
    ControlledShutdownResponse,
    CreatePartitionState,
    DeleteZnodes,
    LeaderAndIsrRequest,
    PartitionStateConflict,
    RegisteredBroker,
    Resigned,
    SetPartitionState,
    SetTopicAssignment,
    TopicChange,
)


class Violation(AssertionError):
    pass


@dataclasses.dataclass
class Zk:
    states: dict[TopicPartition, tuple[LeaderAndIsr, int]] = dataclasses.field(default_factory=dict)
    controller_epoch: int = 0
    controller_epoch_version: int = 0
    registrations: dict[int, int] = dataclasses.field(default_factory=dict)  # id -> czxid
    zxid: int = 100


@dataclasses.dataclass
class SimBroker:
    broker_id: int
    alive: bool = False
    max_controller_epoch: int = 0
    views: dict[TopicPartition, LeaderAndIsr] = dataclasses.field(default_factory=dict)


class Cluster:
    def __init__(
        self,
        seed: int,
        *,
        brokers: int = 4,
        partitions: int = 6,
        rf: int = 3,
        unclean: bool = False,
    ) -> None:
        self.rng = random.Random(seed)
        self.unclean = unclean
        self.zk = Zk()
        self.brokers = {i: SimBroker(i) for i in range(1, brokers + 1)}
        ids = sorted(self.brokers)
        self.topic = TopicZnode(
            None,
            {
                p: ReplicaAssignment(tuple(ids[(p + k) % brokers] for k in range(rf)))
                for p in range(partitions)
            },
        )
        self.controller: ZkController | None = None
        self.controller_broker = -1
        self.zombie: ZkController | None = None
        self.elections = self.unclean_elections = 0
        self.topic_created = False
        for i in ids:
            self.start(i)
        self.elect_controller()
        self.topic_created = True
        self.run(self.controller, TopicChange({"t": self.topic}))

    # ------------------------------------------------------------------- the shell

    def registered(self) -> dict[int, RegisteredBroker]:
        return {
            i: RegisteredBroker(BrokerInfo(i, (EndPoint("PLAINTEXT", "h", 9000 + i),)), e)
            for i, e in sorted(self.zk.registrations.items())
        }

    def run(self, c: ZkController | None, event) -> None:
        if c is None:
            return
        for action in c.step(event):
            if isinstance(
                action, SetPartitionState | CreatePartitionState | DeleteZnodes | SetTopicAssignment
            ):
                refused = self.write(c, action)
                if refused is not None:
                    self.run(c, refused)
                    return
            elif isinstance(action, LeaderAndIsrRequest):
                self.deliver_leader_and_isr(action)
            elif isinstance(action, AlterPartitionResponse):
                self.alter_partition_answered(action)
        if c is self.controller:
            self.check_cache()

    def write(self, c: ZkController, action) -> object | None:
        zk = self.zk
        if action.epoch_zk_version != zk.controller_epoch_version:
            if c is self.zombie:
                self.zombie = None
            return Resigned()
        if isinstance(action, SetTopicAssignment):
            self.topic = TopicZnode(action.topic_id, action.partitions)
        if isinstance(action, DeleteZnodes | SetTopicAssignment):
            return None
        tp, new = action.tp, action.leader_and_isr
        old = zk.states.get(tp)
        if isinstance(action, CreatePartitionState):
            if old is not None:
                return PartitionStateConflict(tp, old)
            self.check_write(tp, None, new, action.controller_epoch)
        else:
            if old is None or old[0].partition_epoch != action.expected_version:
                return PartitionStateConflict(tp, old)
            if new.partition_epoch != old[0].partition_epoch + 1:
                raise Violation(f"{tp}: zkVersion {old[0].partition_epoch} -> {new}")
            self.check_write(tp, old, new, action.controller_epoch)
        zk.states[tp] = (new, action.controller_epoch)
        return None

    def check_write(self, tp, old, new: LeaderAndIsr, controller_epoch: int) -> None:
        if not new.isr:
            raise Violation(f"{tp}: empty ISR {new}")
        if new.leader != NO_LEADER and new.leader not in new.isr:
            raise Violation(f"{tp}: leader outside the ISR {new}")
        if old is None:
            return
        before, before_epoch = old
        if controller_epoch < before_epoch:
            raise Violation(f"{tp}: written by epoch {controller_epoch} after {before_epoch}")
        if new.leader_epoch < before.leader_epoch:
            raise Violation(f"{tp}: leader epoch went back {before} -> {new}")
        if new.leader not in (NO_LEADER, before.leader):
            self.elections += 1
            if new.leader not in before.isr:
                self.unclean_elections += 1
                if not self.unclean:
                    raise Violation(f"{tp}: unclean election {before} -> {new}")

    def check_cache(self) -> None:
        for tp, (lai, _) in self.zk.states.items():
            if self.controller.leader_and_isr(tp) != lai:
                raise Violation(
                    f"{tp}: controller caches {self.controller.leader_and_isr(tp)}"
                    f", ZooKeeper has {lai}"
                )

    def deliver_leader_and_isr(self, request: LeaderAndIsrRequest) -> None:
        b = self.brokers[request.destination]
        if not b.alive or request.controller_epoch < b.max_controller_epoch:
            return  # gone, or STALE_CONTROLLER_EPOCH
        b.max_controller_epoch = request.controller_epoch
        for s in request.partition_states:
            tp = TopicPartition(s.topic, s.partition)
            view = b.views.get(tp)
            if (
                view is None
                or s.leader_epoch > view.leader_epoch
                or (
                    s.leader_epoch == view.leader_epoch and s.partition_epoch > view.partition_epoch
                )
            ):
                b.views[tp] = LeaderAndIsr(
                    s.leader, s.leader_epoch, s.isr, s.leader_recovery_state, s.partition_epoch
                )

    def alter_partition_answered(self, response: AlterPartitionResponse) -> None:
        b = self.brokers[response.request_id]
        for r in response.partitions:
            tp = TopicPartition(r.topic, r.partition)
            view = b.views.get(tp)
            if r.error_code == 0 and view is not None and r.leader_epoch == view.leader_epoch:
                b.views[tp] = LeaderAndIsr(
                    r.leader_id, r.leader_epoch, r.isr, r.leader_recovery_state, r.partition_epoch
                )

    # ------------------------------------------------------------------- the nemesis

    def start(self, i: int) -> None:
        self.zk.zxid += 1
        self.zk.registrations[i] = self.zk.zxid
        b = self.brokers[i]
        b.alive, b.views, b.max_controller_epoch = True, {}, 0

    def stop(self, i: int) -> None:
        self.brokers[i].alive = False
        self.zk.registrations.pop(i, None)
        if i == self.controller_broker:
            if self.rng.random() < 0.5:
                self.zombie = self.controller
            self.controller = None
            self.controller_broker = -1
            self.elect_controller()
        self.run(self.controller, BrokerChange(self.registered()))

    def elect_controller(self) -> None:
        live = sorted(i for i, b in self.brokers.items() if b.alive)
        if not live:
            return
        self.controller_broker = self.rng.choice(live)
        zk = self.zk
        zk.controller_epoch += 1
        zk.controller_epoch_version += 1
        self.controller = ZkController(
            ZkControllerConfig(self.controller_broker, unclean_leader_election_enable=self.unclean),
            random.Random(self.rng.getrandbits(64)),
        )
        topics = {"t": self.topic} if self.topic_created else {}
        self.run(
            self.controller,
            BecameController(
                zk.controller_epoch,
                zk.controller_epoch_version,
                self.registered(),
                topics,
                dict(zk.states),
            ),
        )

    def alter_partition(self) -> None:
        """A leader adds a caught-up follower or drops a dead (lagging) one."""
        leaders = [
            (b, tp, v)
            for b in self.brokers.values()
            if b.alive
            for tp, v in b.views.items()
            if v.leader == b.broker_id
        ]
        if not leaders:
            return
        b, tp, view = self.rng.choice(leaders)
        replicas = self.topic.partitions[tp.partition].replicas
        joiners = [r for r in replicas if r not in view.isr and self.brokers[r].alive]
        lagging = [r for r in view.isr if r != b.broker_id and not self.brokers[r].alive]
        recovery = view.leader_recovery_state
        if recovery is LeaderRecoveryState.RECOVERING:
            # An unclean leader first reports that it recovered, alone (KIP-704).
            isr, recovery = view.isr, LeaderRecoveryState.RECOVERED
        elif joiners and (not lagging or self.rng.random() < 0.5):
            isr = tuple(r for r in replicas if r in view.isr or r == joiners[0])
        elif lagging:
            isr = tuple(r for r in view.isr if r != lagging[0])
        else:
            return
        item = AlterPartitionItem(
            "t", None, tp.partition, view.leader_epoch, isr, view.partition_epoch, recovery
        )
        target = self.zombie if self.zombie and self.rng.random() < 0.3 else self.controller
        self.run(
            target,
            AlterPartition(
                b.broker_id, b.broker_id, self.zk.registrations[b.broker_id], (item,), 1
            ),
        )

    def step(self) -> None:
        live = [i for i, b in self.brokers.items() if b.alive]
        dead = [i for i, b in self.brokers.items() if not b.alive]
        roll = self.rng.random()
        if roll < 0.12 and len(live) > 0:
            self.stop(self.rng.choice(live))
        elif roll < 0.18 and live:
            self.controlled_shutdown_via_shell(self.rng.choice(live))
        elif roll < 0.35 and dead:
            i = self.rng.choice(dead)
            self.start(i)
            if self.controller is None:
                self.elect_controller()
            self.run(self.controller, BrokerChange(self.registered()))
        elif roll < 0.4:
            self.run(self.controller, AutoPreferredReplicaLeaderElection())
        elif roll < 0.43 and self.zombie is not None:
            self.run(self.zombie, BrokerChange(self.registered()))
        else:
            self.alter_partition()

    def controlled_shutdown_via_shell(self, i: int) -> None:
        for _ in range(3):
            if self.controller is None:
                break
            remaining = self.ask_controlled_shutdown(i)
            if remaining == ():
                break
            self.alter_partition()
        self.stop(i)

    def ask_controlled_shutdown(self, i: int) -> tuple | None:
        answers: list[ControlledShutdownResponse] = []
        c = self.controller
        for action in c.step(ControlledShutdown("cs", i, self.zk.registrations[i])):
            if isinstance(action, SetPartitionState | CreatePartitionState):
                refused = self.write(c, action)
                if refused is not None:
                    self.run(c, refused)
                    return None
            elif isinstance(action, LeaderAndIsrRequest):
                self.deliver_leader_and_isr(action)
            elif isinstance(action, ControlledShutdownResponse):
                answers.append(action)
        self.check_cache()
        if answers and answers[0].error_code == 0:
            return answers[0].remaining_partitions
        return None

    def heal(self, rounds: int = 200) -> None:
        for i, b in self.brokers.items():
            if not b.alive:
                self.start(i)
                if self.controller is None:
                    self.elect_controller()
                self.run(self.controller, BrokerChange(self.registered()))
        for _ in range(rounds):
            self.alter_partition()
