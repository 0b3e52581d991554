"""What the client quota checks of both modes share (KRaft's controller, ZooKeeper
mode's admin path)."""

from __future__ import annotations

import ipaddress


def valid_ip(name: str | None) -> bool:
    """An IP quota entity's name: the default entity (None) or an IP literal. Kafka also
    resolves host names; the node does no network lookups."""
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
