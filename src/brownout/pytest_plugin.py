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
zookeeper, profile, broker_config, seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .api import Cluster

MARKER = ("brownout(brokers=3, controllers=None, combined=False, zookeeper=False, "
          "profile='fast', broker_config=None, seed=0): the brownout_cluster fixture's "
          "cluster")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


@pytest.fixture
def brownout_cluster(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
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
