"""A pytest plugin: test your own application against a lab cluster that fails on
purpose. Installing brownout registers it (the `pytest11` entry point); nothing to add
to conftest.py.

    import pytest

    @pytest.mark.brownout(brokers=3)
    def test_orders_survive_a_leader_kill(brownout_cluster):
        brownout_cluster.create_topic("orders", partitions=3, replication_factor=3,
                                      configs={"min.insync.replicas": "2"})
        app = MyApp(bootstrap=brownout_cluster.bootstrap_servers)
        app.write_orders(100)
        brownout_cluster.kill("leader:orders-0")
        app.write_orders(100)
        assert app.read_orders() == 200

`brownout_cluster` is a `brownout.api.Cluster`, started for the test and stopped (every
process killed, its directory under the test's tmp_path) afterwards, also when the test
fails. The `brownout` marker takes Cluster's options: brokers, controllers, combined,
zookeeper, profile, broker_config, seed, engine.

`brownout_cluster_factory` starts as many clusters as a test asks for, each shaped by
its call's options, and stops them all when the test ends:

    def test_two_clusters(brownout_cluster_factory):
        source = brownout_cluster_factory(brokers=3)
        target = brownout_cluster_factory(brokers=1, engine="kafka")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .api import Cluster

MARKER = ("brownout(brokers=3, controllers=None, combined=False, zookeeper=False, "
          "profile='fast', broker_config=None, seed=0, engine='node'): the "
          "brownout_cluster fixture's cluster")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


@pytest.fixture
def brownout_cluster(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A started lab cluster (brownout.api.Cluster) for this test, stopped afterwards
    (also when the test fails); its files are under the test's temporary directories.

    Shape it with @pytest.mark.brownout(brokers=3, controllers=None, combined=False,
    zookeeper=False, profile="fast", broker_config=None, seed=0, engine="node"), or per
    run with @pytest.mark.parametrize("brownout_cluster", [{...}], indirect=True).
    engine="kafka" or "kafka:VERSION" runs Apache Kafka's JVMs (`brownout kafka
    install`). Use .bootstrap_servers for your clients, .kill(TARGET) and
    .fault(ACTION, TARGET) to break it. Several clusters: brownout_cluster_factory."""
    marker = request.node.get_closest_marker("brownout")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    # Indirect parametrization: @pytest.mark.parametrize("brownout_cluster", [{...}],
    # indirect=True) runs the test once per cluster shape.
    options.update(getattr(request, "param", None) or {})
    # Imported here: the plugin loads with every pytest session, most of which never
    # ask for a cluster (and importing the lab early upsets other plugins' start-up).
    from .api import Cluster

    directory = tmp_path_factory.mktemp("brownout")
    with Cluster(directory=directory, **options) as cluster:
        yield cluster


@pytest.fixture
def brownout_cluster_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Cluster]]:
    """Start lab clusters for this test: each call takes brownout.api.Cluster's options
    (brokers, controllers, combined, zookeeper, profile, broker_config, seed, engine)
    and returns a started cluster in a directory of its own; every cluster started is
    stopped when the test ends, the last first, also when the test fails."""
    from .api import Cluster

    started: list[Cluster] = []

    def start(**options: Any) -> Cluster:
        cluster = Cluster(directory=tmp_path_factory.mktemp("brownout"), **options)
        cluster.start()  # a cluster that fails to start stops what it started itself
        started.append(cluster)
        return cluster

    try:
        yield start
    finally:
        errors: list[BaseException] = []
        for cluster in reversed(started):
            try:
                cluster.stop()
            except Exception as e:  # stop the others first, then say what went wrong
                errors.append(e)
        if errors:
            raise errors[0]
