"""Grudges: a network partition as data (Jepsen's word), built by pure functions.

A grudge maps a node to the set of nodes it cannot hear: ``{1: {2, 3}}`` means packets
from 2 and 3 never reach 1 (1 can still send to them, but TCP needs both directions, so
connections between them fail either way). `brownout.faults.netns` applies a grudge as
iptables DROP rules inside the namespaces; these helpers only compute it.

`CLIENTS` (-1) is a pseudo-node: the root namespace, where workloads and the CLI run.
``{2: {CLIENTS}}`` means node 2 cannot hear clients, ``{CLIENTS: {2}}`` that clients
cannot hear node 2 (applied inside node 2's namespace as an OUTPUT rule, since the lab
never adds rules to the root namespace).

ZooKeeper servers take part under their host ids (``4000 + N``, as `faults.targets`
resolves them); components and descriptions spell them ``zookeeper-N``.

Randomness (halves, bridge) comes from an injected `random.Random`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from ..cluster.zookeeper import ZOOKEEPER_HOST_BASE

CLIENTS = -1

Grudge = dict[int, frozenset[int]]


def normalize(grudge: Mapping[int, Iterable[int]]) -> Grudge:
    """Drop self-grudges and empty entries; frozen sets; keys sorted."""
    out: Grudge = {}
    for node in sorted(grudge):
        deaf_to = frozenset(n for n in grudge[node] if n != node)
        if deaf_to:
            out[node] = deaf_to
    return out


def merge(*grudges: Mapping[int, Iterable[int]]) -> Grudge:
    acc: dict[int, set[int]] = {}
    for grudge in grudges:
        for node, others in grudge.items():
            acc.setdefault(node, set()).update(others)
    return normalize(acc)


def one_way(deaf: Iterable[int], sources: Iterable[int]) -> Grudge:
    """Every node in `deaf` cannot hear any node in `sources` (the sources still hear
    them): the asymmetric partition."""
    sources = frozenset(sources)
    return normalize({d: sources for d in deaf})


def cut(group_a: Iterable[int], group_b: Iterable[int]) -> Grudge:
    """No node of `group_a` hears any of `group_b`, and the other way round."""
    a, b = frozenset(group_a), frozenset(group_b)
    return merge(one_way(a, b - a), one_way(b, a - b))


def isolate(
    targets: Iterable[int], nodes: Iterable[int], clients: bool = True, one_way_only: bool = False
) -> Grudge:
    """Cut `targets` (as a group: they still hear each other) from every other node of
    `nodes`, and from clients when `clients`. With `one_way_only`, the targets cannot
    hear the others but the others still hear the targets."""
    targets = frozenset(targets)
    others = frozenset(nodes) - targets
    if clients:
        others |= {CLIENTS}
    if one_way_only:
        return one_way(targets, others)
    return cut(targets, others)


def complete(components: Sequence[Iterable[int]]) -> Grudge:
    """Jepsen's complete-grudge: each node hears only the nodes that share one of its
    components (a node may sit in several: see `bridge`)."""
    comps = [frozenset(c) for c in components]
    everyone = frozenset().union(*comps) if comps else frozenset()
    grudge: dict[int, frozenset[int]] = {}
    for node in everyone:
        hears = frozenset().union(*(c for c in comps if node in c))
        grudge[node] = everyone - hears
    return normalize(grudge)


def bisect(nodes: Sequence[int]) -> list[list[int]]:
    """Split in two, the smaller half first (Jepsen's bisect)."""
    half = len(nodes) // 2
    return [list(nodes[:half]), list(nodes[half:])]


def shuffled(nodes: Iterable[int], rng: random.Random) -> list[int]:
    items = sorted(nodes)
    rng.shuffle(items)
    return items


def halves(nodes: Iterable[int], rng: random.Random) -> Grudge:
    """Random halves that cannot hear each other (a minority and a majority)."""
    return complete(bisect(shuffled(nodes, rng)))


def bridge(nodes: Iterable[int], rng: random.Random) -> Grudge:
    """Jepsen's bridge: two halves that cannot hear each other, plus one node (the first
    of the larger half) that hears and is heard by both."""
    parts = bisect(shuffled(nodes, rng))
    if not parts[1]:
        return {}
    middle = parts[1][0]
    grudge = complete(parts)
    grudge.pop(middle, None)
    return normalize({n: others - {middle} for n, others in grudge.items()})


def parse_components(text: str) -> list[list[int]]:
    """``"1,2|3,4,3001"`` -> [[1, 2], [3, 4, 3001]] (``clients`` names CLIENTS,
    ``zookeeper-N`` ZooKeeper server N)."""
    comps = []
    for part in text.split("|"):
        comp = []
        for item in part.split(","):
            item = item.strip()
            if not item:
                continue
            if item == "clients":
                comp.append(CLIENTS)
                continue
            if item.startswith(("zookeeper-", "zookeeper:")):
                server = item[len("zookeeper-") :]
                if server.isdigit() and int(server) > 0:
                    comp.append(ZOOKEEPER_HOST_BASE + int(server))
                    continue
                raise ValueError(f"{text!r}: {item!r} is not a ZooKeeper server (zookeeper-N)")
            try:
                comp.append(int(item.removeprefix("node-")))
            except ValueError:
                raise ValueError(f"{text!r}: {item!r} is not a node id") from None
        if comp:
            comps.append(comp)
    if len(comps) < 2:
        raise ValueError(f"{text!r}: a partition needs at least two components, e.g. 1,2|3")
    return comps


def isolated_nodes(grudge: Mapping[int, Iterable[int]], nodes: Iterable[int]) -> list[int]:
    """Nodes that cannot hear a strict majority of the other nodes (what a checker
    treats as "isolated"; clients do not count)."""
    nodes = sorted(frozenset(nodes) - {CLIENTS})
    out = []
    for node in nodes:
        deaf = frozenset(grudge.get(node, ())) - {CLIENTS, node}
        if len(deaf) * 2 > len(nodes) - 1 and len(nodes) > 1:
            out.append(node)
    return out


def _name(node: int) -> str:
    return "clients" if node == CLIENTS else str(node)


def _label(node: int) -> str:
    if node > ZOOKEEPER_HOST_BASE:
        return f"zookeeper-{node - ZOOKEEPER_HOST_BASE}"
    return _name(node)


def to_json(grudge: Mapping[int, Iterable[int]]) -> dict[str, list[str | int]]:
    """{"1": [2, 3], "clients": [2]}: JSON-able (node ids as keys)."""
    return {
        _name(node): [n if n != CLIENTS else "clients" for n in sorted(others)]
        for node, others in normalize(grudge).items()
    }


def describe(grudge: Mapping[int, Iterable[int]]) -> list[str]:
    return [
        f"{_label(node)} cannot hear {', '.join(_label(n) for n in sorted(others))}"
        for node, others in normalize(grudge).items()
    ]
