"""`brownout kafka install`: Apache Kafka's jars from Maven Central, with Maven, into the cache.

What a version needs to run as the lab's nodes and tools is what Kafka's own download has
in libs/ for them: the broker and controller (``org.apache.kafka:kafka_2.13``, whose
dependencies bring raft, metadata, storage, the coordinators and ``kafka.tools.StorageTool``),
the admin tools (``kafka-tools``), the Java clients (``kafka-clients``), and a logging
backend. The published poms name only the slf4j API (and, from 4.0, log4j2's API and
core), so the binding that makes the broker actually log is added as Kafka's download
ships it: from 4.0 ``log4j-slf4j-impl`` (or ``log4j-slf4j2-impl`` for an slf4j 2 API) at
the version of the resolved log4j-core; before 4.0 ``slf4j-reload4j`` at the resolved
slf4j version with ``reload4j`` (`RELOAD4J_VERSION`).

Two Maven runs, each from a generated pom in a temporary directory: one copies Kafka's
jars with their runtime dependencies (Maven mediates versions, so each library is there
once), the next adds the binding chosen from what the first copied (with everything it
would bring excluded, so the versions Kafka resolved stay the only ones). Both copy into
a staging folder beside the target; it becomes ``<cache>/<version>/libs`` and only then is
the marker written (`distribution.MARKER`), so an interrupted install is redone, and a
complete one is never resolved again (it works offline). Maven keeps its own cache in
~/.m2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from ..common.java import JavaError, require_java
from . import kafka_cds
from .distribution import (
    CDS_ARCHIVE,
    LIBS,
    MARKER,
    Distribution,
    DistributionError,
    check_version,
    installed,
)

KAFKA_GROUP = "org.apache.kafka"
KAFKA_ARTIFACTS = ("kafka_2.13", "kafka-tools", "kafka-clients")
# A fixed plugin version: the goal behaves the same whatever Maven's default binding is.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# What Kafka 3.9's download ships (gradle/dependencies.gradle: versions.reload4j).
RELOAD4J_VERSION = "1.2.25"
MAVEN_TIMEOUT_S = 900.0
MAVEN_HINT = "install Apache Maven (Debian: apt-get install maven) or put `mvn` on PATH"

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_JAR_RE = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d[^-]*(?:-[A-Za-z0-9.]+)?)\.jar$")


class InstallError(RuntimeError):
    """The install could not complete (Maven failed, or the cache is not writable)."""


class InstallUsageError(InstallError):
    """Nothing to do about it but change the request or the machine: no Java, no Maven,
    or a version Maven Central does not serve (exit status 2 in the CLI)."""


@dataclasses.dataclass(frozen=True)
class Coordinate:
    group: str
    artifact: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


@dataclasses.dataclass(frozen=True)
class InstallResult:
    distribution: Distribution
    resolved: bool  # False: it was already in the cache
    jars: int
    # What became of its class-data archive (kafka_cds): "made", "there", "not made: ..."
    archive: str = "not made"


def kafka_coordinates(version: str) -> list[Coordinate]:
    return [Coordinate(KAFKA_GROUP, a, version) for a in KAFKA_ARTIFACTS]


def pom_xml(dependencies: list[Coordinate], exclude_transitive: bool = False) -> str:
    """A pom whose only purpose is to have Maven resolve `dependencies` (with their
    runtime dependencies, unless `exclude_transitive`)."""
    exclusions = (
        "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
        "</exclusion></exclusions>" if exclude_transitive else "")
    items = "\n".join(
        f"    <dependency><groupId>{escape(d.group)}</groupId>"
        f"<artifactId>{escape(d.artifact)}</artifactId>"
        f"<version>{escape(d.version)}</version>{exclusions}</dependency>"
        for d in dependencies)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>brownout</groupId>
  <artifactId>brownout-kafka-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{items}
  </dependencies>
</project>
"""


def jar_versions(names: list[str]) -> dict[str, str]:
    """artifact id -> version, from jar file names as copy-dependencies writes them
    (``log4j-core-2.24.3.jar``)."""
    found = {}
    for name in names:
        match = _JAR_RE.match(name)
        if match:
            found[match.group("artifact")] = match.group("version")
    return found


def logging_backend(names: list[str]) -> list[Coordinate]:
    """What makes Kafka's slf4j logging reach a backend, given the jars resolved for it
    (empty when a binding is already there or there is no slf4j API)."""
    jars = jar_versions(names)
    slf4j = jars.get("slf4j-api")
    if slf4j is None:
        return []
    log4j2 = jars.get("log4j-core")
    if log4j2 is not None:  # Kafka 4.x: log4j2
        if {"log4j-slf4j-impl", "log4j-slf4j2-impl"} & jars.keys():
            return []
        binding = "log4j-slf4j2-impl" if int(slf4j.split(".")[0]) >= 2 else "log4j-slf4j-impl"
        return [Coordinate("org.apache.logging.log4j", binding, log4j2)]
    # Before 4.0 (kafka-tools 3.9 already brings both through connect-runtime)
    wanted = [Coordinate("org.slf4j", "slf4j-reload4j", slf4j),
              Coordinate("ch.qos.reload4j", "reload4j", RELOAD4J_VERSION)]
    return [c for c in wanted if c.artifact not in jars]


def maven_argv(mvn: str, pom: Path, output: Path) -> list[str]:
    # -U: a version Maven failed to find earlier is asked for again (Maven would
    # otherwise trust its cached failure for a day).
    return [mvn, "-B", "-q", "-U", "-Dstyle.color=never", "-f", str(pom),
            f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"-DoutputDirectory={output}",
            "-DincludeScope=runtime"]


def maven_reason(output: str) -> str:
    """Maven's own one-line reason from its output: the first [ERROR] line, without the
    "Failed to execute goal" preamble and the help link."""
    for raw in _ANSI_RE.sub("", output).splitlines():
        line = raw.strip()
        if not line.startswith("[ERROR]"):
            continue
        line = line.removeprefix("[ERROR]").strip()
        if not line:
            continue
        line = re.sub(r"\s*->\s*\[Help \d+\]\s*$", "", line)
        line = re.sub(r"^Failed to execute goal[^:]*?: ", "", line)
        for cause in ("Could not find artifact", "Could not transfer artifact"):
            if cause in line:  # the root cause, after the list of every artifact it hit
                return line[line.rindex(cause):]
        return line
    lines = [ln.strip() for ln in _ANSI_RE.sub("", output).splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def not_served(reason: str, version: str) -> bool:
    """True when Maven says Kafka's own artifact of `version` does not exist."""
    return f"Could not find artifact {KAFKA_GROUP}:" in reason and version in reason


def require_maven(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    mvn = shutil.which("mvn", path=env.get("PATH"))
    if mvn is None:
        raise InstallUsageError(f"`brownout kafka install` needs Maven: no `mvn` on PATH; "
                                f"{MAVEN_HINT}")
    return mvn


@contextlib.contextmanager
def _install_lock(cache: Path, version: str) -> Iterator[None]:
    """One install of a version at a time (two test workers, two shells)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f".{version}.lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def install(version: str, cache: Path, *, force: bool = False, cds: bool = True,
            env: Mapping[str, str] | None = None) -> InstallResult:
    """Install `version` into `cache` (nothing to do when it is there, unless `force`),
    and, with `cds`, its class-data archive when it has none yet. Failing to make the
    archive only costs speed: `InstallResult.archive` says why."""
    check_version(version)
    if not force:
        found = installed(version, cache)
        if found is not None and (not cds or found.cds_archive is not None):
            return InstallResult(found, False, _jar_count(found.libs),
                                 "there" if found.cds_archive else "not made")
    try:
        java = require_java(f"Apache Kafka {version}", env=env)
    except JavaError as e:
        raise InstallUsageError(str(e)) from None
    try:
        with _install_lock(cache, version):
            found = None if force else installed(version, cache)
            resolved = found is None
            if found is None:
                found = _resolve(version, cache / version, require_maven(env), env)
            archive = "there" if found.cds_archive else "not made"
            if cds and (resolved or found.cds_archive is None):
                archive = _archive(found, java)
            return InstallResult(found, resolved, _jar_count(found.libs), archive)
    except OSError as e:
        raise InstallError(f"cannot install into {cache}: {e.strerror or e}"
                           f"{f': {e.filename}' if e.filename else ''}") from None


def _archive(distribution: Distribution, java: Path) -> str:
    try:
        kafka_cds.make_archive(distribution, java)
    except DistributionError as e:
        return f"not made: {e}"
    return "made"


def _jar_count(libs: Path) -> int:
    return sum(1 for _ in libs.glob("*.jar"))


def _resolve(version: str, home: Path, mvn: str, env: Mapping[str, str] | None) -> Distribution:
    home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (home / MARKER).unlink()
    staging = Path(tempfile.mkdtemp(prefix=".libs-", dir=home))
    try:
        with tempfile.TemporaryDirectory(prefix="brownout-kafka-pom-") as tmp:
            kafka = kafka_coordinates(version)
            _maven(mvn, Path(tmp) / "kafka.xml", pom_xml(kafka), staging, version, env)
            backend = logging_backend([p.name for p in staging.glob("*.jar")])
            if backend:
                _maven(mvn, Path(tmp) / "logging.xml", pom_xml(backend, True), staging,
                       version, env)
        jars = sorted(p.name for p in staging.glob("*.jar"))
        if not jars:
            raise InstallError(f"Maven copied no jar for Apache Kafka {version}")
        libs = home / LIBS
        shutil.rmtree(libs, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (home / CDS_ARCHIVE).unlink()  # made from the jars being replaced
        staging.chmod(0o755)  # mkdtemp's 0700 would hide the jars from other users
        os.replace(staging, libs)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    marker = {
        "version": version,
        "installed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "artifacts": [str(c) for c in (*kafka, *backend)],
        "jars": jars,
    }
    tmp_marker = home / f".{MARKER}.tmp"
    tmp_marker.write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp_marker, home / MARKER)
    return Distribution(home, version)


def _maven(mvn: str, pom: Path, text: str, output: Path, version: str,
           env: Mapping[str, str] | None) -> None:
    pom.write_text(text, encoding="utf-8")
    argv = maven_argv(mvn, pom, output)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=pom.parent,
                              env=None if env is None else dict(env),
                              timeout=MAVEN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise InstallError(f"Maven did not finish within {MAVEN_TIMEOUT_S:.0f}s: "
                           f"{' '.join(argv)}") from None
    except OSError as e:
        raise InstallUsageError(f"cannot run Maven ({mvn}): {e}") from None
    if done.returncode == 0:
        return
    reason = maven_reason(done.stdout + "\n" + done.stderr)
    if not_served(reason, version):
        raise InstallUsageError(
            f"Maven Central does not serve Apache Kafka {version} (Maven: {reason}); "
            "check the version (https://kafka.apache.org/downloads lists the releases)")
    raise InstallError(f"Maven failed (exit status {done.returncode}) resolving Apache "
                       f"Kafka {version}: {reason}")


__all__ = [
    "Coordinate",
    "DistributionError",
    "InstallError",
    "InstallResult",
    "InstallUsageError",
    "install",
    "logging_backend",
    "pom_xml",
]
