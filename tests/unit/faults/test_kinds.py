"""The registry of fault kinds agrees with its executors, the scenario schema and the
random faults' undos, so that a kind added there is complete."""

from __future__ import annotations

import inspect

import pytest

from brownout.faults import kinds
from brownout.faults.executors.network import NetworkExecutor
from brownout.faults.executors.process import ProcessExecutor
from brownout.faults.executors.storage import StorageExecutor
from brownout.scenarios import fields
from brownout.scenarios.random_faults import KINDS as RANDOM_KINDS

EXECUTORS = {kinds.PROCESS: ProcessExecutor, kinds.NETWORK: NetworkExecutor,
             kinds.STORAGE: StorageExecutor}


@pytest.mark.parametrize("name", kinds.ACTIONS)
def test_every_kind_has_its_executor_method(name: str) -> None:
    kind = kinds.KINDS[name]
    method = getattr(EXECUTORS[kind.family], kind.run, None)
    assert callable(method), f"{kind.family} executor has no {kind.run}"
    assert list(inspect.signature(method).parameters) == ["self", "fault", "nodes", "details"]


def test_undos_are_kinds_that_need_no_target() -> None:
    for kind in kinds.KINDS.values():
        if kind.undo is not None:
            assert kinds.KINDS[kind.undo].target != "required", kind.name
    assert set(kinds.UNDO_ACTIONS) == {"start", "resume", "heal"}


def test_the_schema_takes_every_kind_with_its_params() -> None:
    for name, kind in kinds.KINDS.items():
        assert fields.ACTION_PARAMS[name] == kind.params
        assert fields.ACTIONS[name].nullable == (kind.target != "required")
    for kind in kinds.KINDS.values():
        for option in kind.options:
            assert option.param in kind.params, (kind.name, option.param)


def test_random_faults_undo_as_the_registry_does() -> None:
    for action, _target, undo in RANDOM_KINDS.values():
        assert undo == kinds.KINDS[action].undo, action


def test_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown fault 'explode' \\(one of kill, terminate"):
        kinds.kind("explode")
