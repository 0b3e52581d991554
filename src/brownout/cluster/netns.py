"""Network namespaces for a lab: one namespace per node, veth pairs on one bridge.

Theory of operation
-------------------
A netns lab in working directory D has a short *prefix* derived from D (`lab_prefix`,
e.g. ``bo3fa2c1``), and every object it creates carries it, so a crashed lab can always
be cleaned up by name (`cleanup`)::

    root namespace                    namespace <prefix>-n<id>  (one per node)
    --------------                    ---------------------------------------
    bridge <prefix>-br  10.123.X.1/24
      <- veth <prefix>-v<id>  <==>    eth0 10.123.X.(10+id), lo up
                                      iptables chains <prefix>-in  (from INPUT)
                                                      <prefix>-out (from OUTPUT)

* Addresses come from `topology.node_host` (brokers .10+i, dedicated controllers .200+j,
  ZooKeeper servers .1+j under host ids 4000+j, each in a namespace of its own);
  the root namespace has the bridge address, so clients (workloads, CLI) in the root
  namespace reach every node through the bridge, and their packets arrive from
  ``10.123.X.1``. Nothing is routed outside the subnet: namespaces have no default route.
* Each namespace has its own netfilter tables; the lab's two chains there start empty
  and network faults append DROP rules to them (`brownout.faults.netns`). Healing is
  flushing the chains. Deleting a namespace deletes its rules and its veth pair.
* When the root namespace filters bridged traffic (br_netfilter with a FORWARD policy of
  DROP, as Docker sets), one ACCEPT rule for the bridge is inserted into the root
  FORWARD chain, tagged with the comment ``<prefix>``; `cleanup` removes it.
* A node is launched as ``ip netns exec <ns> python -m brownout.node ...``: `ip` enters
  the namespace and execs Python, so the pid is the node's own pid.

Everything here needs root; `require_root` and `require_tools` say so in one line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from .topology import Topology, bridge_host, parse_subnet

SUBNET_BASE = "10.123.0.0/16"  # candidates 10.123.X.0/24
IN_CHAIN = "in"
OUT_CHAIN = "out"
INNER_IFACE = "eth0"


class NetnsError(RuntimeError):
    """A namespace operation failed or cannot run here (no root, no iproute2/iptables)."""


# -- names (pure) ----------------------------------------------------------------------


def lab_prefix(directory: Path | str) -> str:
    """``bo`` + 6 hex digits of the directory's path: short enough for interface names
    (15 characters: ``bo3fa2c1-v3001``), stable for a directory."""
    digest = hashlib.sha1(str(Path(directory).absolute()).encode()).hexdigest()
    return f"bo{digest[:6]}"


def ns_name(prefix: str, node_id: int) -> str:
    return f"{prefix}-n{node_id}"


def veth_name(prefix: str, node_id: int) -> str:
    return f"{prefix}-v{node_id}"


def bridge_name(prefix: str) -> str:
    return f"{prefix}-br"


def chain_name(prefix: str, which: str) -> str:
    return f"{prefix}-{which}"


def exec_prefix(prefix: str, node_id: int) -> list[str]:
    """The argv prefix that runs a command inside the node's namespace."""
    return ["ip", "netns", "exec", ns_name(prefix, node_id)]


@dataclasses.dataclass(frozen=True)
class LabNetwork:
    """Where every node of a netns lab lives: the data faults need, from the topology."""

    prefix: str
    subnet: str
    bridge_address: str
    addresses: dict[int, str]  # host id (node id, or 4000 + ZooKeeper server id) -> address

    @classmethod
    def from_topology(cls, topology: Topology, directory: Path | str) -> LabNetwork:
        subnet = topology.request.subnet
        if not topology.request.netns or subnet is None:
            raise NetnsError("this cluster runs in loopback mode, not in network namespaces")
        return cls(
            lab_prefix(directory),
            subnet,
            bridge_host(subnet),
            topology.hosts,
        )

    def namespace(self, node_id: int) -> str:
        return ns_name(self.prefix, node_id)

    def address(self, node_id: int) -> str:
        try:
            return self.addresses[node_id]
        except KeyError:
            known = ", ".join(map(str, sorted(self.addresses)))
            raise NetnsError(f"no node {node_id} in this lab (nodes: {known})") from None


# -- checks ----------------------------------------------------------------------------


def is_root() -> bool:
    return os.geteuid() == 0


def require_root(what: str = "network namespaces") -> None:
    if not is_root():
        raise NetnsError(
            f"{what} need root (creating namespaces, veth pairs and iptables rules is "
            "privileged); this process runs as uid "
            f"{os.geteuid()}. Use the default --network loopback, where process faults work "
            "and network faults are refused"
        )


def require_tools(iptables: bool = True) -> None:
    if shutil.which("ip") is None:
        raise NetnsError("the `ip` command (iproute2) is not installed: apt-get install iproute2")
    if iptables and shutil.which("iptables") is None:
        raise NetnsError(
            "the `iptables` command is not installed; network faults are iptables DROP rules "
            "inside the lab's namespaces: apt-get install iptables (`make test` and "
            "`make demo` install it when run as root)"
        )


# -- running commands ------------------------------------------------------------------


def run(args: Sequence[str], check: bool = True, timeout: float = 15.0) -> str:
    """Run a command, return stdout; NetnsError with its stderr when it fails."""
    try:
        result = subprocess.run(
            list(args), capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise NetnsError(f"{args[0]}: command not found") from None
    except subprocess.TimeoutExpired:
        raise NetnsError(f"`{' '.join(args)}` did not finish in {timeout:.0f}s") from None
    if check and result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        raise NetnsError(f"`{' '.join(args)}` failed: {message}")
    return result.stdout


def run_in(prefix: str, node_id: int, args: Sequence[str], check: bool = True) -> str:
    return run([*exec_prefix(prefix, node_id), *args], check=check)


# -- the subnet ------------------------------------------------------------------------


def used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 destination in any routing table and every address on an interface of
    the root namespace (the default route is not a "use" of a subnet)."""
    nets: list[ipaddress.IPv4Network] = []
    text = run(["ip", "-4", "route", "show", "table", "all"], check=False)
    text += run(["ip", "-4", "-o", "addr", "show"], check=False).replace(" inet ", "\n")
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        candidates = [words[0]]
        if (
            words[0]
            in (
                "broadcast",
                "local",
                "unicast",
                "anycast",
                "multicast",
                "blackhole",
                "unreachable",
                "prohibit",
                "throw",
            )
            and len(words) > 1
        ):
            candidates = [words[1]]
        for word in candidates:
            if word == "default":
                continue
            try:
                nets.append(ipaddress.IPv4Network(word, strict=False))
            except ValueError:
                continue
    return nets


def subnet_conflicts(subnet: str, used: Iterable[ipaddress.IPv4Network]) -> list[str]:
    net = parse_subnet(subnet)
    return sorted({str(u) for u in used if u.overlaps(net) and u.prefixlen > 0})


def pick_subnet(
    used: Iterable[ipaddress.IPv4Network], seed: str = "", base: str = SUBNET_BASE
) -> str:
    """The first free /24 of `base`, starting at a place derived from `seed` (the lab's
    prefix), so that two labs rarely race for the same one."""
    used = list(used)
    base_net = ipaddress.IPv4Network(base)
    subnets = list(base_net.subnets(new_prefix=24))
    start = int(hashlib.sha1(seed.encode()).hexdigest(), 16) % len(subnets) if seed else 0
    for i in range(len(subnets)):
        candidate = subnets[(start + i) % len(subnets)]
        if not any(u.overlaps(candidate) and u.prefixlen > 0 for u in used):
            return str(candidate)
    raise NetnsError(f"no free /24 left in {base}; pass --subnet")


# -- building and removing -------------------------------------------------------------


def _root_forward_drops() -> bool:
    """True when bridged packets pass the root FORWARD chain and its policy drops."""
    try:
        calls = Path("/proc/sys/net/bridge/bridge-nf-call-iptables").read_text().strip()
    except OSError:
        return False
    if calls != "1" or shutil.which("iptables") is None:
        return False
    rules = run(["iptables", "-S", "FORWARD"], check=False)
    return "-P FORWARD DROP" in rules


def setup(net: LabNetwork) -> None:
    """Create the bridge, one namespace per node, veth pairs and the empty fault chains.
    Leftovers of this prefix are removed first; on failure everything is removed."""
    require_root()
    require_tools()
    cleanup(net.prefix)
    prefixlen = parse_subnet(net.subnet).prefixlen
    br = bridge_name(net.prefix)
    try:
        run(["ip", "link", "add", br, "type", "bridge"])
        run(["ip", "addr", "add", f"{net.bridge_address}/{prefixlen}", "dev", br])
        run(["ip", "link", "set", br, "up"])
        for node_id, address in sorted(net.addresses.items()):
            ns = ns_name(net.prefix, node_id)
            veth = veth_name(net.prefix, node_id)
            run(["ip", "netns", "add", ns])
            run(
                [
                    "ip",
                    "link",
                    "add",
                    veth,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    INNER_IFACE,
                    "netns",
                    ns,
                ]
            )
            run(["ip", "link", "set", veth, "master", br, "up"])
            run(["ip", "-n", ns, "addr", "add", f"{address}/{prefixlen}", "dev", INNER_IFACE])
            run(["ip", "-n", ns, "link", "set", INNER_IFACE, "up"])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            for which, hook in ((IN_CHAIN, "INPUT"), (OUT_CHAIN, "OUTPUT")):
                chain = chain_name(net.prefix, which)
                run_in(net.prefix, node_id, ["iptables", "-N", chain])
                run_in(net.prefix, node_id, ["iptables", "-I", hook, "-j", chain])
        if _root_forward_drops():
            run(
                [
                    "iptables",
                    "-I",
                    "FORWARD",
                    "-i",
                    br,
                    "-o",
                    br,
                    "-m",
                    "comment",
                    "--comment",
                    net.prefix,
                    "-j",
                    "ACCEPT",
                ]
            )
    except BaseException:
        cleanup(net.prefix)
        raise


def leftovers(prefix: str) -> dict[str, list[str]]:
    """What of this prefix exists now: namespaces, links, root FORWARD rules."""
    mark = f"{prefix}-"
    namespaces = [
        line.split()[0]
        for line in run(["ip", "netns", "list"], check=False).splitlines()
        if line.split() and line.split()[0].startswith(mark)
    ]
    links = []
    for line in run(["ip", "-o", "link", "show"], check=False).splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(mark):
                links.append(name)
    rules = []
    if shutil.which("iptables") is not None and is_root():
        for line in run(["iptables", "-S", "FORWARD"], check=False).splitlines():
            if f"--comment {prefix} " in line + " " or f'--comment "{prefix}"' in line:
                rules.append(line)
    return {"namespaces": namespaces, "links": links, "rules": rules}


def cleanup(prefix: str) -> dict[str, list[str]]:
    """Remove every namespace, link and root FORWARD rule named with `prefix`.
    Idempotent; returns what was removed. Processes still running inside a namespace
    keep running (stop nodes first): only the network objects go."""
    if not prefix or "-" in prefix or " " in prefix:
        raise NetnsError(f"refusing to clean up with prefix {prefix!r}")
    found = leftovers(prefix)
    if not any(found.values()):
        return found
    require_root("removing network namespaces")
    for ns in found["namespaces"]:
        run(["ip", "netns", "delete", ns], check=False)
    for link in found["links"]:
        run(["ip", "link", "delete", link], check=False)
    for rule in found["rules"]:
        args = rule.split()
        if args[:1] == ["-A"]:
            run(["iptables", "-D", *args[1:]], check=False)
    return found


__all__ = [
    "LabNetwork",
    "NetnsError",
    "bridge_host",
    "bridge_name",
    "chain_name",
    "cleanup",
    "exec_prefix",
    "is_root",
    "lab_prefix",
    "leftovers",
    "ns_name",
    "pick_subnet",
    "require_root",
    "require_tools",
    "run",
    "run_in",
    "setup",
    "subnet_conflicts",
    "used_networks",
    "veth_name",
]
