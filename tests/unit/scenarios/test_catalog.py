"""scenarios/catalog.py: the built-ins' listing fields, read without validation, agree
with the validated scenarios; bad files are refused with their path."""

from __future__ import annotations

from pathlib import Path

import pytest

from brownout.scenarios import builtin_dir, builtins
from brownout.scenarios import schema as validator
from brownout.scenarios.catalog import ROOT_ACTIONS, CatalogError, entries, entry


def test_every_builtin_agrees_with_the_validator():
    listed = entries(builtin_dir())
    validated = builtins()
    assert [e.name for e in listed] == [s.name for s in validated]
    for e, s in zip(listed, validated, strict=True):
        assert (e.description, e.network, e.needs_root) == (
            s.description, s.cluster.network, s.needs_root), e.name
    assert any(e.needs_root and e.network == "netns" for e in listed)
    assert any(e.needs_root and e.network == "loopback" for e in listed)  # storage faults


def test_root_actions_are_the_validators():
    assert ROOT_ACTIONS == validator.ROOT_STORAGE_ACTIONS


def test_fields_from_hand_made_documents():
    plain = entry({"name": "a", "description": "One. Two."}, "a.yaml")
    assert (plain.network, plain.needs_root, plain.summary) == ("loopback", False, "One")
    netns = entry({"name": "b", "description": "x", "cluster": {"network": "netns"}}, "b")
    assert netns.needs_root and netns.network == "netns"
    disk = entry({"name": "c", "description": "x",
                  "schedule": [{"at": "1s", "kill": 1}, {"at": "2s", "disk-full": 2}]}, "c")
    assert disk.needs_root and disk.network == "loopback"


@pytest.mark.parametrize("document", [[], {"name": "a"}, {"description": "d"},
                                      {"name": 1, "description": "d"}])
def test_a_file_without_name_or_description_is_refused(document):
    with pytest.raises(CatalogError, match=r"x\.yaml"):
        entry(document, "x.yaml")


def test_a_file_that_is_not_yaml_is_refused(tmp_path: Path):
    (tmp_path / "good.yaml").write_text("name: good\ndescription: fine.\n")
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    with pytest.raises(CatalogError, match=r"bad\.yaml"):
        entries(tmp_path)
    (tmp_path / "bad.yaml").unlink()
    assert [e.name for e in entries(tmp_path)] == ["good"]
