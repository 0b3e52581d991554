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
zookeeper, profile, broker_config, seed, engine, network, security
(`brownout_cluster.client_config` then has what a client sets to log in).

`brownout_cluster_factory` starts as many clusters as a test asks for, each shaped by
its call's options, and stops them all when the test ends:

    def test_two_clusters(brownout_cluster_factory):
        source = brownout_cluster_factory(brokers=3)
        target = brownout_cluster_factory(brokers=1, engine="kafka")

One cluster for several tests, as Testcontainers' module and session fixtures: a
module's tests share `brownout_module_cluster`, shaped by the module's marker
(`pytestmark = pytest.mark.brownout(brokers=3)`); a session's share
`brownout_session_cluster`, shaped by the `brownout_session_options` fixture (override it
in conftest.py). A fault one test leaves in place is there for the next:
`cluster.start_stopped()` starts the nodes a test stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .api import Cluster

MARKER = ("brownout(brokers=3, controllers=None, combined=False, zookeeper=False, "
          "profile='fast', broker_config=None, seed=0, engine='node', "
          "network='loopback', security=None): the "
          "brownout_cluster fixture's cluster")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


@pytest.fixture
def brownout_cluster(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A started lab cluster (brownout.api.Cluster) for this test, stopped afterwards
    (also when the test fails); its files are under the test's temporary directories.

    Shape it with @pytest.mark.brownout(brokers=3, controllers=None, combined=False,
    zookeeper=False, profile="fast", broker_config=None, seed=0, engine="node",
    network="loopback", security=None), or per run with
    @pytest.mark.parametrize("brownout_cluster", [{...}], indirect=True).
    engine="kafka" or "kafka:VERSION" runs Apache Kafka's JVMs (`brownout kafka
    install`); network="netns" a namespace per node (root); security="sasl" or "ssl" a
    secure listener. Use .client_config (or .bootstrap_servers) for your clients,
    .kill(TARGET) and .fault(ACTION, TARGET) to break it. Several clusters:
    brownout_cluster_factory; one for a module or a session: brownout_module_cluster,
    brownout_session_cluster."""
    options = _marker_options(request.node)
    # Indirect parametrization: @pytest.mark.parametrize("brownout_cluster", [{...}],
    # indirect=True) runs the test once per cluster shape.
    options.update(getattr(request, "param", None) or {})
    yield from _started(tmp_path_factory, options)


@pytest.fixture(scope="module")
def brownout_module_cluster(request: pytest.FixtureRequest,
                            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One started lab cluster (brownout.api.Cluster) for every test of this module that
    asks for it, stopped after the module's last test. Shape it with the module's
    marker: pytestmark = pytest.mark.brownout(brokers=3, ...), the options
    brownout_cluster takes. What a test breaks stays broken for the next
    (.start_stopped() starts the nodes it stopped)."""
    yield from _started(tmp_path_factory, _marker_options(request.node))


@pytest.fixture(scope="session")
def brownout_session_options() -> dict[str, Any]:
    """brownout_session_cluster's options (brownout.api.Cluster's: brokers, controllers,
    combined, zookeeper, profile, broker_config, seed, engine, network, security).
    Override this fixture in your conftest.py to shape it; by default a cluster of
    three brokers."""
    return {}


@pytest.fixture(scope="session")
def brownout_session_cluster(brownout_session_options: dict[str, Any],
                             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One started lab cluster (brownout.api.Cluster) for every test of the session that
    asks for it, stopped when the session ends (with pytest-xdist, one per worker).
    Shape it by overriding the brownout_session_options fixture. What a test breaks
    stays broken for the next (.start_stopped() starts the nodes it stopped)."""
    yield from _started(tmp_path_factory, dict(brownout_session_options))


@pytest.fixture
def brownout_cluster_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Cluster]]:
    """Start lab clusters for this test: each call takes brownout.api.Cluster's options
    (brokers, controllers, combined, zookeeper, profile, broker_config, seed, engine,
    network, security)
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


def _marker_options(node: pytest.Item | pytest.Collector) -> dict[str, Any]:
    marker = node.get_closest_marker("brownout")
    return dict(marker.kwargs) if marker is not None else {}


def _started(tmp_path_factory: pytest.TempPathFactory,
             options: dict[str, Any]) -> Iterator[Cluster]:
    # Imported here: the plugin loads with every pytest session, most of which never
    # ask for a cluster (and importing the lab early upsets other plugins' start-up).
    from .api import Cluster

    with Cluster(directory=tmp_path_factory.mktemp("brownout"), **options) as cluster:
        yield cluster
