"""A deterministic simulator for the KRaft core: N voters + M observers, a lossy,
delaying, reordering (and rarely duplicating) network with partitions, disks with fsync
latency, crashes that lose whatever was not yet written, restarts that reload only what
was persisted, random proposals and a simulated clock. Everything derives from one seed.

The shell here does exactly what a real one must: take a Ready, write quorum-state,
truncate + append + fsync (after a simulated disk latency), then send the messages,
then apply the committed entries, then `advance`. A crash while a Ready is being written
keeps a random prefix of that write (state only, or state + truncation + some entries)
and never sends its messages.

Like kraft/raft_manager.py, the shell pairs each response with the request it sent
(a response travels on its request's connection, so an answer the shell no longer
waits for, or one to an earlier incarnation, is dropped; only the network's rare
duplicates reach the core unpaired) and reports a request that will not be answered
with `RequestFailed`: after request.timeout.ms when the destination is silent (a
partition, a lost message, or a crashed node with `refused=False`, like a host that is
gone), or at once when a crashed node refuses connections (`refused=True`, like a
killed process on a live host).

The Checker watches every Ready and every touched node and raises `Violation` at the
first broken rule:

- election safety: at most one leader per epoch, ever (across restarts too);
- log matching: one (offset, epoch) pair always names the same payload *and* the same
  previous epoch, so by induction equal pairs imply identical prefixes;
- committed entries are never lost or changed: every entry any node reports as
  committed is identical everywhere, and every node that becomes leader holds all
  entries committed so far;
- a node's high watermark never decreases while it runs, and entries are applied
  exactly once and in order per incarnation.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from brownout.raft import (
    Entry,
    Message,
    PersistentState,
    RaftConfig,
    RaftLog,
    RaftNode,
    Ready,
    RequestFailed,
    Role,
)
from brownout.raft.messages import REQUEST_TYPES, RESPONSE_TYPES


class Violation(AssertionError):
    pass


@dataclass
class Disk:
    state: PersistentState | None = None
    entries: list[Entry] = field(default_factory=list)

    def write(self, rd: Ready, keep_entries: int | None = None) -> None:
        if rd.persist_state is not None:
            self.state = rd.persist_state
        if rd.truncate_to is not None:
            del self.entries[rd.truncate_to :]
        new = rd.entries_to_append if keep_entries is None else rd.entries_to_append[:keep_entries]
        if new:
            assert new[0].offset == len(self.entries), "shell asked to write a gap"
            self.entries.extend(new)


class Checker:
    def __init__(self) -> None:
        self.leaders: dict[int, int] = {}  # epoch -> leader id
        self.pairs: dict[tuple[int, int], tuple[bytes, bool, int]] = {}
        self.committed: dict[int, Entry] = {}
        self.hw: dict[int, int] = {}  # node -> high watermark in this incarnation
        self.applied: dict[int, int] = {}  # node -> next offset to apply
        self.seen_leader_epoch: dict[int, int] = {}  # node -> epoch whose leadership we checked

    def restarted(self, node_id: int) -> None:
        self.hw[node_id] = 0
        self.applied[node_id] = 0
        self.seen_leader_epoch.pop(node_id, None)

    def node(self, n: RaftNode) -> None:
        if n.role is Role.LEADER:
            owner = self.leaders.setdefault(n.epoch, n.node_id)
            if owner != n.node_id:
                raise Violation(f"two leaders in epoch {n.epoch}: {owner} and {n.node_id}")
            if self.seen_leader_epoch.get(n.node_id) != n.epoch:
                self.seen_leader_epoch[n.node_id] = n.epoch
                for off, e in self.committed.items():
                    if off >= n.log.end_offset or n.log.entry(off) != e:
                        raise Violation(
                            f"leader {n.node_id} of epoch {n.epoch} lacks committed {e}"
                        )

    def durable(self, node_id: int, entries: tuple[Entry, ...], prev_epoch: int) -> None:
        """Entries that reached a disk. Checked here rather than when handed out: a
        candidate that wins, crashes before its first Ready is written and wins the same
        epoch again (its vote for itself was durable) writes a new leader-change record
        at the same (offset, epoch); the first one never existed outside its memory."""
        for e in entries:
            key = (e.offset, e.epoch)
            value = (e.payload, e.control, prev_epoch)
            known = self.pairs.setdefault(key, value)
            if known != value:
                raise Violation(f"log matching: {key} is {known} and {value} (node {node_id})")
            prev_epoch = e.epoch

    def ready(self, n: RaftNode, rd: Ready) -> None:
        last_hw = self.hw.get(n.node_id, 0)
        if rd.high_watermark < last_hw:
            raise Violation(f"node {n.node_id} hw went {last_hw} -> {rd.high_watermark}")
        self.hw[n.node_id] = rd.high_watermark
        nxt = self.applied.get(n.node_id, 0)
        for e in rd.committed:
            if e.offset != nxt:
                raise Violation(f"node {n.node_id} applied {e.offset}, expected {nxt}")
            nxt += 1
            known = self.committed.setdefault(e.offset, e)
            if known != e:
                raise Violation(f"committed offset {e.offset} is {known} and {e}")
        self.applied[n.node_id] = nxt


@dataclass
class SimNode:
    node_id: int
    disk: Disk = field(default_factory=Disk)
    raft: RaftNode | None = None
    io: Ready | None = None  # a Ready being written
    io_prev_epoch: int = 0  # epoch of the entry before its first one
    gen: int = 0  # incarnation; stale events carry an older one
    next_tick: int | None = None
    shutting_down: bool = False


class Cluster:
    def __init__(
        self,
        seed: int,
        voters: int = 3,
        observers: int = 0,
        config: RaftConfig | None = None,
        drop: float = 0.0,
        delay_ms: tuple[int, int] = (1, 10),
        disk_ms: tuple[int, int] = (0, 3),
        duplicate: float = 0.0,
        crash_in_write: float = 0.0,
        refused: bool = False,
        node_class: type[RaftNode] = RaftNode,
    ) -> None:
        self.rng = random.Random(seed)
        # The core every node runs: the checker's own tests plant bugs in a subclass.
        self.node_class = node_class
        self.config = config or RaftConfig()
        self.voter_ids = frozenset(range(1, voters + 1))
        ids = list(range(1, voters + observers + 1))
        self.nodes = {i: SimNode(i) for i in ids}
        self.drop, self.delay_ms, self.disk_ms, self.duplicate = drop, delay_ms, disk_ms, duplicate
        # Chance, per Ready with entries, of a crash before its write completes (the
        # node restarts a little later): aims the nemesis at the durability window.
        self.crash_in_write = crash_in_write
        self.refused = refused  # crashed nodes refuse connections (else: silence)
        # Requests the shells wait for: (source, its incarnation, correlation) -> dest.
        self.outstanding: dict[tuple[int, int, int], int] = {}
        self.blocked: set[tuple[int, int]] = set()  # (from, to) links that lose everything
        self.now = 0
        self.queue: list[tuple[int, int, str, object]] = []
        self.seq = 0
        self.checker = Checker()
        self.proposed = 0
        self.events = 0
        for i in ids:
            self.start(i)

    # -------------------------------------------------------------- node lifecycle

    def start(self, i: int) -> None:
        sn = self.nodes[i]
        sn.gen += 1
        sn.io, sn.next_tick, sn.shutting_down = None, None, False
        self.checker.restarted(i)
        rng = random.Random(self.rng.getrandbits(64))
        log = RaftLog(list(sn.disk.entries))
        sn.raft = self.node_class(i, self.voter_ids, self.config, rng, sn.disk.state, log, self.now)
        self.after_input(sn)

    def crash(self, i: int) -> None:
        sn = self.nodes[i]
        if sn.raft is None:
            return
        if sn.io is not None:
            # Part of the write may have reached the disk; its messages never left.
            cut = self.rng.random()
            if cut < 0.3:
                sn.disk.state = sn.io.persist_state or sn.disk.state
            elif cut < 0.6:
                keep = self.rng.randint(0, len(sn.io.entries_to_append))
                sn.disk.write(sn.io, keep)
                self.checker.durable(i, sn.io.entries_to_append[:keep], sn.io_prev_epoch)
        sn.raft, sn.io, sn.next_tick = None, None, None
        sn.gen += 1

    def alive(self) -> list[int]:
        return [i for i, sn in self.nodes.items() if sn.raft is not None]

    def leaders(self) -> list[RaftNode]:
        return [sn.raft for sn in self.nodes.values() if sn.raft and sn.raft.role is Role.LEADER]

    # -------------------------------------------------------------- the shell

    def after_input(self, sn: SimNode) -> None:
        self.checker.node(sn.raft)
        self.pump(sn)
        self.schedule_tick(sn)

    def pump(self, sn: SimNode) -> None:
        n = sn.raft
        if n is None or sn.io is not None or not n.has_ready():
            return
        first = n.log.end_offset  # the previous entry of the Ready's first one
        rd = n.ready()
        if rd.entries_to_append:
            first = rd.entries_to_append[0].offset
        prev_epoch = n.log.epoch_at(first - 1) or 0 if first > 0 else 0
        self.checker.ready(n, rd)
        sn.io, sn.io_prev_epoch = rd, prev_epoch
        done = self.now + self.rng.randint(*self.disk_ms)
        self.push(done, "io", (sn.node_id, sn.gen))
        if rd.entries_to_append and self.rng.random() < self.crash_in_write:
            self.push(self.rng.randint(self.now, done), "crash", (sn.node_id, sn.gen))

    def io_done(self, sn: SimNode) -> None:
        rd, sn.io = sn.io, None
        sn.disk.write(rd)  # persist state, truncate, append, fsync
        self.checker.durable(sn.node_id, rd.entries_to_append, sn.io_prev_epoch)
        for m in rd.messages:  # then send
            self.send(m)
        sn.raft.advance(rd)  # committed entries are "applied" by the checker
        self.after_input(sn)

    def schedule_tick(self, sn: SimNode) -> None:
        nd = sn.raft.next_deadline()
        if nd is None:
            return
        nd = max(nd, self.now + 1)
        if sn.next_tick is None or nd < sn.next_tick:
            sn.next_tick = nd
            self.push(nd, "tick", (sn.node_id, sn.gen))

    def send(self, m: Message) -> None:
        if isinstance(m, REQUEST_TYPES):
            key = (m.source, self.nodes[m.source].gen, m.correlation_id)
            self.outstanding[key] = m.destination
            self.push(self.now + self.config.request_timeout_ms, "rto", key)
        copies = 2 if self.rng.random() < self.duplicate else 1
        for copy in range(copies):
            if self.rng.random() < self.drop:
                continue
            self.push(self.now + self.rng.randint(*self.delay_ms), "dup" if copy else "msg", m)

    def fail(self, key: tuple[int, int, int], delay: int = 0) -> None:
        """The shell of `key`'s sender gives up on that request and tells its core."""
        dest = self.outstanding.pop(key, None)
        if dest is not None:
            self.push(self.now + delay, "fail", (key, dest))

    def deliver(self, m: Message, kind: str) -> None:
        sn = self.nodes[m.destination]
        key = (m.destination, sn.gen, m.correlation_id)
        if (
            kind == "msg"
            and isinstance(m, RESPONSE_TYPES)
            and self.outstanding.pop(key, None) is None
        ):
            return  # its shell no longer waits for this answer
        if sn.raft is None:
            if kind == "msg" and self.refused and isinstance(m, REQUEST_TYPES):
                # Connection refused: the sender's shell knows after a round trip.
                key = (m.source, self.nodes[m.source].gen, m.correlation_id)
                self.fail(key, self.rng.randint(*self.delay_ms))
            return
        if (m.source, m.destination) in self.blocked:
            return
        sn.raft.step(m, self.now)
        self.after_input(sn)

    def push(self, t: int, kind: str, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, kind, payload))

    def run_until(self, t: int) -> None:
        while self.queue and self.queue[0][0] <= t:
            when, _, kind, payload = heapq.heappop(self.queue)
            self.now = max(self.now, when)
            self.events += 1
            if kind in ("msg", "dup"):
                self.deliver(payload, kind)
            elif kind == "rto":
                self.fail(payload)
            elif kind == "fail":
                (src, gen, correlation), dest = payload
                sn = self.nodes[src]
                if sn.gen == gen and sn.raft is not None:
                    sn.raft.step(RequestFailed(dest, src, correlation), self.now)
                    self.after_input(sn)
            else:
                i, gen = payload
                sn = self.nodes[i]
                if kind == "restart":
                    if sn.gen == gen and sn.raft is None:
                        self.start(i)
                    continue
                if sn.gen != gen or sn.raft is None:
                    continue
                if kind == "io":
                    self.io_done(sn)
                elif kind == "crash" and self.crash_in_write:
                    self.crash(i)
                    self.push(self.now + self.rng.randint(10, 1500), "restart", (i, sn.gen))

                elif when == sn.next_tick:
                    sn.next_tick = None
                    sn.raft.tick(self.now)
                    self.after_input(sn)
        self.now = max(self.now, t)

    def run_for(self, ms: int) -> None:
        self.run_until(self.now + ms)

    # -------------------------------------------------------------- actions

    def propose(self, leader: RaftNode, count: int = 1) -> tuple[int, ...]:
        payloads = []
        for _ in range(count):
            self.proposed += 1
            payloads.append(f"p{self.proposed}".encode())
        result = leader.propose(payloads, self.now)
        self.after_input(self.nodes[leader.node_id])
        return result.offsets

    def isolate(self, i: int) -> None:
        for j in self.nodes:
            if j != i:
                self.blocked |= {(i, j), (j, i)}

    def cut(self, a: int, b: int) -> None:
        self.blocked |= {(a, b), (b, a)}

    def split(self, side: set[int]) -> None:
        for a in side:
            for b in self.nodes:
                if b not in side:
                    self.cut(a, b)

    def heal(self) -> None:
        self.blocked.clear()

    def random_step(self) -> None:
        """One random action of the nemesis or the workload."""
        r = self.rng.random()
        ids = sorted(self.nodes)
        if r < 0.35:
            leaders = self.leaders()
            if leaders:
                self.propose(self.rng.choice(leaders), self.rng.randint(1, 3))
        elif r < 0.80:
            self.run_for(self.rng.randint(1, 300))
        elif r < 0.84:
            self.isolate(self.rng.choice(ids))
        elif r < 0.87:
            a, b = self.rng.sample(ids, 2)
            self.cut(a, b)
        elif r < 0.89:
            self.split(set(self.rng.sample(ids, self.rng.randint(1, len(ids) // 2))))
        elif r < 0.93:
            self.heal()
        elif r < 0.95:
            alive = self.alive()
            if alive:
                self.crash(self.rng.choice(alive))
        elif r < 0.98:
            dead = [i for i in ids if self.nodes[i].raft is None]
            if dead:
                self.start(self.rng.choice(dead))
        else:
            leaders = self.leaders()
            if leaders:
                leader = self.rng.choice(leaders)
                self.nodes[leader.node_id].shutting_down = True
                leader.resign(self.now)
                self.after_input(self.nodes[leader.node_id])

    def recover(self) -> None:
        """Heal the network, finish shutdowns and restart every crashed node."""
        self.heal()
        self.drop = self.crash_in_write = 0.0
        for i, sn in self.nodes.items():
            if sn.shutting_down:
                self.crash(i)
            if sn.raft is None:
                self.start(i)

    # -------------------------------------------------------------- liveness

    def converged(self, full: bool = False, min_hw: int = 0) -> str | None:
        """None when the cluster is stable: every node follows the one leader of the
        latest epoch, that leader committed an entry of its epoch, and every node's high
        watermark covers everything ever committed (and the leader's); else what is
        missing."""
        top = max(sn.raft.epoch for sn in self.nodes.values())
        current = [n for n in self.leaders() if n.epoch == top]
        if len(current) != 1:
            return f"no leader in the latest epoch {top}"
        leader = current[0]
        if leader.high_watermark <= leader._leader.epoch_start_offset:
            return f"leader {leader.node_id} has not committed in epoch {top} yet"
        committed_end = max(max(self.checker.committed, default=-1) + 1, min_hw)
        for sn in self.nodes.values():
            n = sn.raft
            if n is not leader and (n.role is not Role.FOLLOWER or n.leader_id != leader.node_id):
                return f"node {n.node_id} is {n.role.value} in epoch {n.epoch}"
            hw = n.high_watermark
            if hw < committed_end or hw < leader.high_watermark:
                return f"node {n.node_id} hw {hw} < committed {committed_end} / {leader.status()}"
            # Log matching is checked all along, so equal last entries mean equal logs.
            for off in range(hw) if full else range(max(hw - 1, 0), hw):
                if n.log.entry(off) != leader.log.entry(off):
                    raise Violation(f"node {n.node_id} differs from the leader at {off}")
        return None

    def current_leader(self) -> RaftNode | None:
        """The leader of the latest epoch any live node knows, if there is one."""
        top = max(sn.raft.epoch for sn in self.nodes.values() if sn.raft is not None)
        current = [n for n in self.leaders() if n.epoch == top]
        return current[0] if len(current) == 1 else None

    def observers_behind(self, leader: RaftNode) -> str | None:
        """None when `leader` committed an entry of its epoch and every live observer
        follows it (leader id and epoch) with its high watermark; else who lags."""
        if leader.high_watermark <= leader._leader.epoch_start_offset:
            return f"leader {leader.node_id} has not committed in epoch {leader.epoch} yet"
        for sn in self.nodes.values():
            n = sn.raft
            if n is None or n.node_id in self.voter_ids:
                continue
            if (n.role, n.leader_id, n.epoch) != (Role.FOLLOWER, leader.node_id, leader.epoch):
                return (
                    f"observer {n.node_id} is {n.role.value} in epoch {n.epoch} "
                    f"(leader {n.leader_id}), not following {leader.node_id} in {leader.epoch}"
                )
            if n.high_watermark < leader.high_watermark:
                return f"observer {n.node_id} hw {n.high_watermark} < {leader.high_watermark}"
        return None

    def fail_over(self, rounds: int, periods: int = 2) -> None:
        """Crash the quorum leader `rounds` times (restarting it afterwards) and check
        observer LIVENESS: once a new leader exists (the network being healed, it is
        reachable), within `periods` x (fetch timeout + election timeout) every live
        observer follows it and its high watermark catches up with the leader's."""
        cfg = self.config
        bound = periods * (cfg.fetch_timeout_ms + cfg.election_timeout_ms)
        for _ in range(rounds):
            old = self.converge(max_ms=20_000)
            self.propose(old, 2)
            self.run_for(cfg.fetch_max_wait_ms)
            self.crash(old.node_id)
            crashed, leader, elected = self.now, None, self.now
            while True:
                current = self.current_leader()
                if current is not leader or (leader and leader.role is not Role.LEADER):
                    leader, elected = current, self.now  # (another) election: clock restarts
                if leader is None:
                    if self.now - crashed > 20_000:
                        raise Violation(f"no leader 20 s after leader {old.node_id} crashed")
                elif (behind := self.observers_behind(leader)) is None:
                    break
                elif self.now - elected > bound:
                    raise Violation(
                        f"{self.now - elected} ms after leader {leader.node_id} of epoch "
                        f"{leader.epoch} was elected: {behind}"
                    )
                self.run_for(10)
            self.start(old.node_id)

    def converge(self, max_ms: int, min_hw: int = 0, step_ms: int = 250) -> RaftNode:
        """Run until `converged`, or fail after `max_ms` of simulated time; returns the
        leader of the latest epoch."""
        deadline = self.now + max_ms
        while (missing := self.converged(min_hw=min_hw)) is not None:
            if self.now >= deadline:
                raise Violation(f"not converged {max_ms} ms after healing: {missing}")
            self.run_for(step_ms)
        return max(self.leaders(), key=lambda n: n.epoch)
