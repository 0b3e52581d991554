"""`kafka_install.install` against a stand-in `mvn` on PATH (Maven and Maven Central are
not ours; the real thing runs in tests/integration/test_kafka_engine.py): what reaches
the cache, when the marker is written, when Maven is asked again, and what a failure
says."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from brownout.cluster.distribution import MARKER, DistributionError, installed, list_cached
from brownout.cluster.kafka_install import InstallError, InstallUsageError, install

# Copies the jars its pom names (as copy-dependencies names them), plus what a Kafka 4
# pom brings, and logs each call; MODE (a file beside it) makes it fail like Maven.
FAKE_MVN = """\
import pathlib, re, sys
here = pathlib.Path(__file__).parent
with (here / "calls.log").open("a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
mode = (here / "MODE").read_text().strip() if (here / "MODE").exists() else "ok"
pom = pathlib.Path(sys.argv[sys.argv.index("-f") + 1]).read_text()
out = pathlib.Path(next(a for a in sys.argv if a.startswith("-DoutputDirectory="))
                   .split("=", 1)[1])
deps = re.findall(r"<artifactId>([^<]+)</artifactId><version>([^<]+)</version>", pom)
if mode == "missing":
    print("[ERROR] Failed to execute goal on project x: Could not resolve dependencies for "
          "project x: Could not find artifact org.apache.kafka:kafka_2.13:jar:%s in central "
          "(https://repo.maven.apache.org/maven2) -> [Help 1]" % deps[0][1])
    sys.exit(1)
if mode == "offline" or (mode == "fail-backend" and "log4j" in pom):
    print("[ERROR] Failed to execute goal on project x: Could not transfer artifact "
          "a:b:pom:1 from/to central: Unknown host repo.maven.apache.org -> [Help 1]")
    sys.exit(1)
out.mkdir(parents=True, exist_ok=True)
for artifact, version in deps:
    (out / f"{artifact}-{version}.jar").write_bytes(b"jar")
if "kafka_2.13" in pom:
    for name in ("slf4j-api-1.7.36.jar", "log4j-api-2.24.3.jar", "log4j-core-2.24.3.jar"):
        (out / name).write_bytes(b"jar")
"""


@pytest.fixture
def maven(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """(environment with the stand-in mvn first on PATH, its folder)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "fake_mvn.py"
    script.write_text(FAKE_MVN)
    mvn = bin_dir / "mvn"
    mvn.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    mvn.chmod(0o755)
    java = shutil.which("java")
    assert java, "these tests check for Java the way an install does: it needs one"
    env = dict(os.environ)
    # Java through JAVA_HOME, so that PATH has no other `mvn` than the stand-in.
    env["JAVA_HOME"] = str(Path(os.path.realpath(java)).parent.parent)
    env["PATH"] = str(bin_dir)
    return env, bin_dir


def calls(bin_dir: Path) -> list[str]:
    path = bin_dir / "calls.log"
    return path.read_text().splitlines() if path.exists() else []


def test_install_copies_kafka_and_a_backend_then_writes_the_marker(tmp_path: Path, maven):
    env, bin_dir = maven
    cache = tmp_path / "cache"
    result = install("4.1.0", cache, cds=False, env=env)
    assert result.resolved
    libs = cache / "4.1.0" / "libs"
    assert result.distribution.libs == libs
    names = sorted(p.name for p in libs.iterdir())
    assert names == sorted([
        "kafka_2.13-4.1.0.jar", "kafka-tools-4.1.0.jar", "kafka-clients-4.1.0.jar",
        "slf4j-api-1.7.36.jar", "log4j-api-2.24.3.jar", "log4j-core-2.24.3.jar",
        "log4j-slf4j-impl-2.24.3.jar"])
    assert result.jars == len(names)
    marker = json.loads((cache / "4.1.0" / MARKER).read_text())
    assert sorted(marker["jars"]) == names
    assert "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3" in marker["artifacts"]
    assert len(calls(bin_dir)) == 2  # Kafka's jars, then the backend
    assert [c.version for c in list_cached(cache)] == ["4.1.0"]
    # installed: Maven is not asked again (offline works)
    again = install("4.1.0", cache, cds=False, env=env)
    assert not again.resolved and again.jars == len(names)
    assert len(calls(bin_dir)) == 2
    # --force resolves again
    assert install("4.1.0", cache, force=True, cds=False, env=env).resolved
    assert len(calls(bin_dir)) == 4


def test_an_interrupted_install_has_no_marker_and_is_redone(tmp_path: Path, maven):
    env, bin_dir = maven
    cache = tmp_path / "cache"
    (bin_dir / "MODE").write_text("fail-backend")
    with pytest.raises(InstallError, match="Unknown host") as failed:
        install("4.1.0", cache, env=env)
    assert not isinstance(failed.value, InstallUsageError)
    assert installed("4.1.0", cache) is None
    assert not (cache / "4.1.0" / MARKER).exists()
    assert list_cached(cache) == []
    assert not any(p.name.startswith(".libs-") for p in (cache / "4.1.0").iterdir())
    (bin_dir / "MODE").write_text("ok")
    assert install("4.1.0", cache, cds=False, env=env).resolved
    assert installed("4.1.0", cache) is not None


def test_a_version_maven_central_does_not_serve_is_a_usage_error(tmp_path: Path, maven):
    env, bin_dir = maven
    (bin_dir / "MODE").write_text("missing")
    with pytest.raises(InstallUsageError) as refused:
        install("4.4.9", tmp_path / "cache", env=env)
    message = str(refused.value)
    assert "Maven Central does not serve Apache Kafka 4.4.9" in message
    assert "Could not find artifact org.apache.kafka:kafka_2.13:jar:4.4.9" in message
    assert "[Help 1]" not in message and "[ERROR]" not in message


def test_missing_maven_or_a_bad_version_says_what_to_do(tmp_path: Path, maven):
    env, bin_dir = maven
    (bin_dir / "mvn").unlink()
    with pytest.raises(InstallUsageError, match=r"needs Maven.*apt-get install maven"):
        install("4.1.0", tmp_path / "cache", env=env)
    with pytest.raises(DistributionError, match="not a Kafka version"):
        install("latest", tmp_path / "cache", env=env)
    no_java = {**env, "JAVA_HOME": str(tmp_path / "no-java")}
    with pytest.raises(InstallUsageError, match="needs Java 17"):
        install("4.1.0", tmp_path / "cache", env=no_java)


def test_an_archive_that_cannot_be_made_costs_only_speed(tmp_path: Path, maven):
    env, bin_dir = maven
    cache = tmp_path / "cache"
    # the stand-in's jars hold no classes: the archive's throwaway node cannot start
    result = install("4.1.0", cache, env=env)
    assert result.resolved and installed("4.1.0", cache) is not None
    assert result.archive.startswith("not made: ") and "storage tool" in result.archive
    assert result.distribution.cds_archive is None
    assert not (cache / "4.1.0" / ".kafka.jsa.partial").exists()
    # installed without an archive: the next install tries the archive only
    again = install("4.1.0", cache, env=env)
    assert not again.resolved and again.archive.startswith("not made: ")
    assert len(calls(bin_dir)) == 2
