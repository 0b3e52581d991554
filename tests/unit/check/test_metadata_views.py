import json

import pytest

from brownout.check.metadata_views import check_metadata_views, one_broker_share, shares
from brownout.check.suite import check_all

from .hist import H, final


def learned(h: H, t: float, process: str, ids: list[int], kind: str = "consumer") -> H:
    return h.add(time=t, process=process, type="ok", f="metadata",
                 value=json.dumps({"type": kind, "learned": ids, "up": ids}))


def view(h: H, t: float, source: str, node: int | None, brokers: list[int] | None) -> H:
    return h.add(time=t, process="observer", type="ok", f="observe",
                 value=json.dumps({"kind": "broker_view", "source": source, "node": node,
                                   "brokers": brokers}))


def test_each_consumers_and_brokers_list_is_a_series_of_changes():
    h = H()
    learned(h, 1.0, "consumer-0", [1, 2])
    learned(h, 2.0, "consumer-0", [1, 2])  # no change: not a point
    learned(h, 4.0, "consumer-0", [2])
    learned(h, 9.0, "consumer-0", [1, 2])
    learned(h, 9.0, "producer-0", [1], kind="producer")  # joins no group: left out
    view(h, 0.5, "127.0.0.1:9092", 1, [1, 2])
    view(h, 4.0, "127.0.0.1:9092", None, None)  # down: not known
    view(h, 6.0, "127.0.0.1:9092", 1, [1])
    view(h, 0.5, "127.0.0.1:9093", None, [1, 2])  # never named: its address stays
    h.observe(3.0, leader=1, epoch=1, isr=[1, 2])
    h.add(time=12.0, process="observer", type="ok", f="observe",
          value=json.dumps({"kind": "cluster", "brokers": [1, 2]}))
    result = check_metadata_views(h.table())
    assert result.valid is True
    numbers = result.numbers
    assert numbers["consumers"] == {"consumer-0": [[1.0, 2], [4.0, 1], [9.0, 2]]}
    assert numbers["brokers"] == {"broker 1": [[0.5, 2], [4.0, None], [6.0, 1]],
                                  "127.0.0.1:9093": [[0.5, 2]]}
    assert numbers["end"] == 12.0


def test_the_share_counts_only_the_window_and_the_known_time():
    series = [[1.0, 2], [4.0, 1], [9.0, 2]]
    assert one_broker_share(series, 0.0, 11.0) == pytest.approx(5 / 10)
    assert one_broker_share(series, 5.0, 9.0) == 1.0
    assert one_broker_share(series, 9.5, 11.0) == 0.0
    # Unknown time (a broker that did not answer) is neither one broker nor more.
    down = [[0.0, 2], [4.0, None], [6.0, 1]]
    assert one_broker_share(down, 0.0, 10.0) == pytest.approx(4 / 8)
    assert one_broker_share([[0.0, None]], 0.0, 5.0) is None
    assert one_broker_share([], 0.0, 5.0) is None
    assert one_broker_share(series, 0.0, None) is None
    numbers = {"consumers": {"c": series}, "brokers": {"broker 1": [[0.0, None]]},
               "end": 11.0}
    # The end defaults to the history's last time; a series never known is left out.
    assert shares(numbers, 0.0, None) == {"consumers": {"c": pytest.approx(0.5)}}


def test_every_run_check_carries_the_views():
    h = learned(H(), 1.0, "consumer-0", [1])
    report = check_all(h.table(), final())
    assert report.results["metadata_views"].numbers["consumers"] == {
        "consumer-0": [[1.0, 1]]}
