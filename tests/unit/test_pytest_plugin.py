"""The pytest plugin as a user's session sees it: `pytest --fixtures` documents its
fixtures and the marker's options (no cluster started)."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_fixtures_are_documented(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--fixtures", "-p", "no:randomly")
    assert result.ret == 0
    out = result.stdout.str()
    assert "brownout_cluster -- " in out
    assert "A started lab cluster (brownout.api.Cluster) for this test" in out
    assert "brownout_cluster_factory -- " in out
    assert "Start lab clusters for this test" in out
    assert "brownout_module_cluster [module scope] -- " in out
    assert "brownout_session_cluster [session scope] -- " in out
    assert "Override this fixture in" in out  # brownout_session_options


def test_the_marker_is_registered(pytester):
    result = pytester.runpytest("--markers")
    assert "engine='node'" in result.stdout.str()
