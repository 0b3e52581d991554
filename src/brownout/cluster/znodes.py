"""The lab's own reads and writes of znodes in a ZooKeeper-mode cluster's ensemble (kazoo).

Two things only, each in a short session of its own:

* `read_controller`: which broker is the controller now, from /controller. In ZooKeeper
  mode that znode *is* the election (the broker that created it leads until its session
  ends), so it is the authority; a broker's Metadata only repeats what the controller
  last sent it and lags behind a failover.
* `ensure_cluster_id`: /cluster/id is created with the lab's cluster id before the first
  broker starts. A broker adopts the id it finds there (and only invents one when there
  is none), so `brownout status` and cluster.json name the id the brokers really use.

Decoding uses `zk.data`, the same codecs the brokers use.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from ..zk import data as zd

# kazoo logs every refused connection as a warning; a lab command reports its own error
# instead, and Python's last-resort handler must not print kazoo's to the terminal.
_log = logging.getLogger("brownout.znodes")
_log.addHandler(logging.NullHandler())
_log.propagate = False


class ZnodeError(RuntimeError):
    """The ensemble could not be reached or answered something unreadable."""


@contextlib.contextmanager
def session(connect: str, timeout: float = 5.0) -> Iterator[KazooClient]:
    """A connected kazoo client for `connect` (ZnodeError when none within
    `timeout`), closed on exit."""
    if not connect:
        raise ZnodeError("this cluster has no ZooKeeper ensemble")
    client = KazooClient(hosts=connect, timeout=timeout, logger=_log)
    try:
        try:
            client.start(timeout=timeout)
        except KazooTimeoutError:
            raise ZnodeError(
                f"no ZooKeeper server of {connect} answered within {timeout:g}s"
            ) from None
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.stop()
        with contextlib.suppress(Exception):
            client.close()


def parse_controller(data: bytes | None) -> int | None:
    """The broker id in /controller's data; None for no znode (no controller now)."""
    if data is None:
        return None
    try:
        return zd.decode_controller(data)
    except zd.ZkDataError as e:
        raise ZnodeError(f"unreadable /controller: {e}") from None


def read_controller(connect: str, timeout: float = 3.0) -> int | None:
    """The broker that holds /controller now; None when no broker does (an election
    under way, or every broker down)."""
    try:
        with session(connect, timeout) as client:
            try:
                data, _stat = client.get(zd.CONTROLLER_PATH)
            except NoNodeError:
                return None
    except KazooException as e:
        raise ZnodeError(f"reading {zd.CONTROLLER_PATH}: {type(e).__name__}: {e}") from None
    return parse_controller(data)


def ensure_cluster_id(connect: str, cluster_id: str, timeout: float = 10.0) -> str:
    """Create /cluster/id with `cluster_id` unless it exists; the id it holds then (the
    existing one wins: brokers that ran before already use it)."""
    try:
        with session(connect, timeout) as client:
            client.ensure_path(zd.CLUSTER_PATH)
            with contextlib.suppress(NodeExistsError):
                client.create(zd.CLUSTER_ID_PATH, zd.encode_cluster_id(cluster_id))
                return cluster_id
            data, _stat = client.get(zd.CLUSTER_ID_PATH)
    except KazooException as e:
        raise ZnodeError(f"creating {zd.CLUSTER_ID_PATH}: {type(e).__name__}: {e}") from None
    try:
        return zd.decode_cluster_id(data)
    except zd.ZkDataError as e:
        raise ZnodeError(f"unreadable {zd.CLUSTER_ID_PATH}: {e}") from None
