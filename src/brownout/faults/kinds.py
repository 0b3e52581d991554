"""The fault kinds: one entry each, read by the nemesis (which executor runs it), the
command line (`brownout fault NAME` and its options) and the scenario schema (the
actions a step may name and the params each takes).

Adding a fault kind is one `Kind` below plus the executor method it names (in
executors/: process, network or storage). This module imports nothing of the lab, so the
command line can build its commands from it without loading the nemesis.
"""

from __future__ import annotations

import dataclasses

# The executor families (faults/executors/): what a fault acts on.
PROCESS = "process"  # signals and starts, through the cluster's NodeControl and ensemble
NETWORK = "network"  # iptables rules and qdiscs in the lab's namespaces (faults.netns)
STORAGE = "storage"  # a lab-started node's log dir (faults.storage)
FAMILIES = (PROCESS, NETWORK, STORAGE)

# What a kind's target is: "required" (a target spec), "optional" (none: the kind's own
# default, e.g. every paused node), "spec" (partition: halves | bridge | components, not a
# target spec) or "none" (heal).
TARGET_MODES = ("required", "optional", "spec", "none")

# Nemesis settings a command-line option may set instead of a fault param.
TERMINATE_TIMEOUT = "terminate_timeout"
REJOIN_TIMEOUT = "rejoin_timeout"


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option of a fault command, setting fault param `param`.

    type: number | text | flag. A None default leaves the param out when the option is
    not given; `omit_zero` also leaves out 0 / false (the executor's own default)."""

    param: str
    flags: tuple[str, ...]
    help: str
    type: str = "text"
    default: float | str | bool | None = None
    minimum: float | None = None
    maximum: float | None = None
    omit_zero: bool = False
    show_default: bool = True


@dataclasses.dataclass(frozen=True)
class Kind:
    """One fault kind.

    params: the keys a scenario step may give it (their types: scenarios.fields.PARAMS).
    undo: the kind that takes it back, with no target (start every stopped node, resume
    every paused one, heal the whole network); None when it undoes itself or cannot.
    run: the method of its family's executor that does it (default: the name, with _).
    command: it has a `brownout fault` command; options and settings (TERMINATE_TIMEOUT,
    REJOIN_TIMEOUT) are that command's, besides the common ones (--dir, --json, ...)."""

    name: str
    family: str
    help: str
    target: str = "required"
    params: tuple[str, ...] = ()
    undo: str | None = None
    run: str = ""
    command: bool = True
    options: tuple[Option, ...] = ()
    settings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        assert self.family in FAMILIES, self.family
        assert self.target in TARGET_MODES, self.target
        if not self.run:
            object.__setattr__(self, "run", self.name.replace("-", "_"))


DOWN = Option(
    "down",
    ("--down",),
    "Seconds each node stays stopped before it starts again (a real Kafka broker takes "
    "seconds to minutes to restart; the embedded node about one).",
    type="number",
    default=0.0,
    minimum=0,
    omit_zero=True,
)
FROM = Option(
    "from",
    ("--from",),
    "Whom to cut the targets from: everyone (default: other nodes, ZooKeeper servers and "
    "clients) | nodes (nodes and ZooKeeper servers) | controllers | brokers | clients | "
    "zookeeper (the whole ensemble; ZooKeeper mode only: cut a broker from ZooKeeper "
    "only) | a TARGET (e.g. all-zookeepers).",
    show_default=False,
)

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("kill", PROCESS, "SIGKILL (kill -9) the target node(s) or ZooKeeper server(s).",
             undo="start"),
        Kind("terminate", PROCESS,
             "SIGTERM the target node(s) or ZooKeeper server(s) and wait for them to exit (a "
             "broker exits once the controller approved its controlled shutdown); never "
             "SIGKILLs: reports a node that did not exit.",
             params=("timeout",), undo="start", settings=(TERMINATE_TIMEOUT,)),
        Kind("pause", PROCESS,
             "SIGSTOP the target node(s) or ZooKeeper server(s): frozen, sockets open.",
             undo="resume"),
        Kind("resume", PROCESS,
             "SIGCONT the target node(s) or ZooKeeper server(s) (default: every paused one).",
             target="optional"),
        Kind("start", PROCESS,
             "Start stopped node(s) or ZooKeeper server(s) (default: every stopped one, "
             "ZooKeeper first) and wait until they serve (a ZooKeeper server: as leader or "
             "follower).",
             target="optional", settings=(REJOIN_TIMEOUT,)),
        Kind("restart", PROCESS,
             "Terminate (SIGKILL after --timeout) and start again, waiting until served; a "
             "ZooKeeper server starts with its zoo.cfg and must rejoin the ensemble.",
             params=("timeout", "down"), options=(DOWN,),
             settings=(TERMINATE_TIMEOUT, REJOIN_TIMEOUT)),
        Kind("rolling-restart", PROCESS,
             "Restart each target in turn (default all-brokers; the active controller last), "
             "waiting after each until every partition's ISR is full again (after a "
             "ZooKeeper server: until the ensemble has a leader and a majority).",
             target="optional", params=("timeout", "down"), options=(DOWN,),
             settings=(TERMINATE_TIMEOUT, REJOIN_TIMEOUT)),
        Kind("isolate", NETWORK,
             "Cut the target node(s) off the network (netns mode): from everyone by default; "
             "--one-way: the targets cannot hear the others, who still hear them.",
             params=("from", "one_way"), undo="heal",
             options=(FROM, Option("one_way", ("--one-way",),
                                   "Asymmetric: only the targets are deaf.", type="flag",
                                   default=False, omit_zero=True))),
        Kind("partition", NETWORK,
             "Split the cluster (netns mode). SPEC: halves (random minority | majority), "
             "bridge (two halves and one node that hears both, Jepsen's), or components "
             "like '1,2|3,3001' (zookeeper-N names ZooKeeper server N).",
             target="spec", params=("nodes",), undo="heal",
             options=(Option("nodes", ("--nodes",),
                             "TARGET naming the nodes taking part (default all).",
                             show_default=False),)),
        Kind("loss", NETWORK,
             "Drop a random fraction of the packets the target node(s) receive (netns).",
             params=("probability", "from"), undo="heal",
             options=(Option("probability", ("--probability", "-p"), "0 < P <= 1.",
                             type="number", default=0.1, minimum=0.0, maximum=1.0), FROM)),
        Kind("bandwidth", NETWORK,
             "Limit the target node(s) to --rate each way (tc tbf on its veth; netns).",
             params=("rate", "burst", "latency"), undo="heal",
             options=(Option("rate", ("--rate",), "e.g. 1mbit, 500kbit.", default="1mbit"),
                      Option("burst", ("--burst",), "tbf burst.", default="32kbit"),
                      Option("latency", ("--latency",), "tbf queue latency.",
                             default="400ms"))),
        Kind("latency", NETWORK,
             "Delay the target node(s)' packets (tc netem; netns). Refused where the kernel "
             "has no netem.",
             params=("delay", "jitter"), undo="heal",
             options=(Option("delay", ("--delay",), "e.g. 100ms.", default="100ms"),
                      Option("jitter", ("--jitter",), "e.g. 10ms."))),
        Kind("heal", NETWORK,
             "Remove every network fault (flush the lab's chains, qdiscs).", target="none"),
        # Storage faults: nodes the lab started only (power-loss: Brownout's node only);
        # no command (yet).
        Kind("power-loss", STORAGE,
             "SIGKILL the targets together, cut their files to what each had fsynced, start "
             "them again (after `down` seconds) and wait until they serve.",
             params=("down",), command=False),
        Kind("corrupt-log", STORAGE,
             "SIGKILL, damage the log dir (`damage`, `log`), start again and wait until "
             "served.",
             params=("damage", "log", "down"), command=False),
        Kind("read-only-logdir", STORAGE,
             "Make the log dir immutable until the node halts on its next write; the dir is "
             "writable again and the node left stopped.",
             params=("timeout",), undo="start", command=False),
        Kind("disk-full", STORAGE,
             "Restart the node with its log dir on a tmpfs with `free` bytes left until it "
             "halts; files copied back, the node left stopped.",
             params=("free", "timeout"), undo="start", command=False),
    )
}

ACTIONS = tuple(KINDS)
PROCESS_ACTIONS = tuple(k.name for k in KINDS.values() if k.family == PROCESS)
NETWORK_ACTIONS = tuple(k.name for k in KINDS.values() if k.family == NETWORK)
STORAGE_ACTIONS = tuple(k.name for k in KINDS.values() if k.family == STORAGE)
# Storage faults that change the mount or file attributes of a log dir: they need root.
ROOT_ACTIONS = ("read-only-logdir", "disk-full")
# Storage faults that need to know what a node fsynced: its durability journal, which
# only Brownout's node writes. The others act on files and mounts in Kafka's own log
# format, whichever engine wrote them.
JOURNAL_ACTIONS = ("power-loss",)
# The kinds that undo others (with no target).
UNDO_ACTIONS = tuple(dict.fromkeys(k.undo for k in KINDS.values() if k.undo))
# Kinds that may be given without a target.
UNTARGETED = tuple(k.name for k in KINDS.values() if k.target != "required")

# What `from` (isolate, loss) may name besides a target spec. "zookeeper" is the whole
# ensemble, and only in ZooKeeper mode: there it is where the brokers' metadata lives,
# while a KRaft broker never talks to an ensemble beside it.
FROM_GROUPS = ("everyone", "nodes", "controllers", "brokers", "clients", "zookeeper")
FROM_ZOOKEEPER_KRAFT = (
    "from: zookeeper cuts ZooKeeper-mode brokers from their ensemble, and this cluster "
    "runs in KRaft mode (its brokers never talk to ZooKeeper); use `zookeeper: true` "
    "under `cluster` (brownout up --zookeeper), or all-zookeepers to name the servers"
)

# Why a network fault is refused on a cluster the lab did not start: its cuts are
# iptables rules and qdiscs in the namespaces the lab built around its own nodes.
EXTERNAL_NETWORK = (
    f"network faults ({', '.join(NETWORK_ACTIONS)}) need a cluster the lab started itself "
    "with `--network netns`; this is an external cluster (--bootstrap-server, --nodes), "
    "where only process faults run, through the nodes file's commands"
)


def kind(name: str) -> Kind:
    """The kind called `name`; KeyError naming the known ones."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown fault {name!r} (one of {', '.join(ACTIONS)})") from None


__all__ = [
    "ACTIONS",
    "EXTERNAL_NETWORK",
    "FROM_GROUPS",
    "FROM_ZOOKEEPER_KRAFT",
    "JOURNAL_ACTIONS",
    "KINDS",
    "NETWORK_ACTIONS",
    "PROCESS_ACTIONS",
    "ROOT_ACTIONS",
    "STORAGE_ACTIONS",
    "UNDO_ACTIONS",
    "UNTARGETED",
    "Kind",
    "Option",
    "kind",
]
