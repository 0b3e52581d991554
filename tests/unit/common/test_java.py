"""Finding Java: version parsing, JAVA_HOME before PATH, and errors that say what to do."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from brownout.common.java import JavaError, find_java, parse_java_version, require_java


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"\nJava(TM) SE Runtime Environment', 8),
        ('openjdk version "11.0.2-internal" 2019-01-15', 11),
        ('Picked up JAVA_TOOL_OPTIONS: -Xss4m\nopenjdk version "23-ea" 2024-09-17', 23),
        ("bash: java: command not found", None),
    ],
)
def test_parse_java_version(text: str, version: int | None) -> None:
    assert parse_java_version(text) == version


def _fake_java(home: Path, banner: str) -> Path:
    """A JAVA_HOME whose bin/java prints `banner` to stderr, as `java -version` does."""
    java = home / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return java


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    java = _fake_java(tmp_path / "jdk", 'openjdk version "21.0.1" 2023-10-17')
    other = _fake_java(tmp_path / "other", 'openjdk version "17.0.1"')
    env = {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": str(other.parent)}
    assert find_java(env) == java
    assert require_java("ZooKeeper", env=env) == java
    assert find_java({"PATH": str(other.parent)}) == other


def test_missing_java_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(JavaError, match=r"ZooKeeper needs Java 17 or newer: no `java` on PATH"):
        require_java("ZooKeeper", env={"PATH": str(tmp_path)})
    with pytest.raises(JavaError, match=r"JAVA_HOME is .*nojdk but it has no executable bin/java"):
        require_java("ZooKeeper", env={"JAVA_HOME": str(tmp_path / "nojdk"), "PATH": ""})


def test_old_or_silent_java_is_refused(tmp_path: Path) -> None:
    _fake_java(tmp_path / "jdk8", 'java version "1.8.0_392"')
    with pytest.raises(JavaError, match=r"needs Java 17 or newer, but .* is Java 8"):
        require_java("ZooKeeper", env={"JAVA_HOME": str(tmp_path / "jdk8")})
    _fake_java(tmp_path / "odd", "no version here")
    with pytest.raises(JavaError, match="did not say which version"):
        require_java("ZooKeeper", env={"JAVA_HOME": str(tmp_path / "odd")})
