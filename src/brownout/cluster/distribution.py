"""What runs a lab's nodes: Brownout's own node, or an Apache Kafka "distribution".

A distribution is a directory with a ``libs/`` folder of Kafka's jars, nothing more:
either a user's own download (KAFKA_HOME, whose libs/ Kafka's scripts put on the class
path) or a version `brownout kafka install` resolved from Maven Central into the cache,
``<cache>/<version>/libs/*.jar``. Its version is read from the broker's own jar name
(``kafka_2.13-4.1.0.jar``), so both kinds are the same thing to the lab.

The engine option names one: ``node`` (Brownout's node, the default), ``kafka`` (the
default 4.x version, installed in the cache), ``kafka:VERSION`` (that version, installed).

The cache is ``$BROWNOUT_KAFKA_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/brownout/kafka``;
a version counts as installed once its marker file (`MARKER`) lists jars that are all
there, which `cluster.kafka_install` writes only after a complete copy.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

# Chosen on 2026-11-28 by asking Maven Central for each candidate with
# `mvn dependency:get -Dartifact=org.apache.kafka:kafka_2.13:X`: 4.4.0 was served and
# 4.4.1, 4.4.2, 4.5.0, 4.6.0 and 5.0.0 were not ("Could not find artifact"); of 3.9,
# 3.9.1 and 3.9.2 were served, 3.9.3 was not. 3.9 is the last line with ZooKeeper mode.
DEFAULT_KAFKA_4 = "4.4.0"
DEFAULT_KAFKA_3 = "3.9.2"
DEFAULT_VERSIONS = (DEFAULT_KAFKA_4, DEFAULT_KAFKA_3)

NODE_ENGINE = "node"
KAFKA_ENGINE = "kafka"
CACHE_ENV = "BROWNOUT_KAFKA_CACHE"
MARKER = "installed.json"
LIBS = "libs"
# The version's class-data sharing archive (cluster/kafka_cds.py), beside libs/.
CDS_ARCHIVE = "kafka.jsa"

# A release (3.9.2), a release candidate or a snapshot (4.1.0-rc2, 4.2.0-SNAPSHOT).
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[A-Za-z0-9.]+)?$")
# A release line (3.9, 4.4): `--engine kafka:3.9` means the line's default version.
_LINE_RE = re.compile(r"^\d+\.\d+$")
# The broker's jar: kafka_<scala version>-<kafka version>.jar (not -test, -sources).
_BROKER_JAR_RE = re.compile(r"^kafka_\d+\.\d+-(\d+\.\d+\.\d+(?:-[A-Za-z0-9.]+)?)\.jar$")
_CLIENTS_JAR_RE = re.compile(r"^kafka-clients-(\d+\.\d+\.\d+(?:-[A-Za-z0-9.]+)?)\.jar$")
_NOT_A_RELEASE = ("-test", "-sources", "-javadoc", "-scaladoc")


class DistributionError(RuntimeError):
    """A Kafka installation that cannot run the lab's nodes (the message says why)."""


@dataclasses.dataclass(frozen=True)
class Distribution:
    """An Apache Kafka the lab can run: a home directory with libs/, and its version."""

    home: Path
    version: str
    use_cds: bool = True  # start its JVMs from its class-data archive when it has one

    @property
    def libs(self) -> Path:
        return self.home / LIBS

    @property
    def cds_archive(self) -> Path | None:
        """The class-data archive its JVMs start from (None: none, or not to be used)."""
        path = self.home / CDS_ARCHIVE
        return path if self.use_cds and path.is_file() else None

    @property
    def major(self) -> int:
        return version_key(self.version)[0]

    @property
    def has_zookeeper_mode(self) -> bool:
        """Kafka 4.0 removed ZooKeeper mode; 3.x brokers still have it."""
        return self.major < 4

    def describe(self) -> str:
        return f"Apache Kafka {self.version} ({self.home})"


def check_version(text: str) -> str:
    """`text` when it looks like a Kafka version (4.1.0, 3.9.2, 4.2.0-rc1)."""
    if not _VERSION_RE.match(text):
        raise DistributionError(
            f"{text!r} is not a Kafka version (expected MAJOR.MINOR.PATCH, e.g. "
            f"{DEFAULT_KAFKA_4})")
    return text


def version_key(version: str) -> tuple[int, int, int, str]:
    """A sort key: 3.9.2 < 4.0.0 < 4.1.0-rc1 (suffixes sort after the release they name,
    which is enough to order a listing)."""
    numbers, _, suffix = version.partition("-")
    major, minor, patch = (int(p) for p in numbers.split("."))
    return major, minor, patch, suffix


def line_default(line: str) -> str:
    """The default version of a release line (3.9 -> 3.9.2); DistributionError for a line
    without one here."""
    for version in DEFAULT_VERSIONS:
        if version.startswith(line + "."):
            return version
    raise DistributionError(
        f"{line!r} is a release line without a default version here (the defaults are "
        f"{', '.join(DEFAULT_VERSIONS)}): give the whole version, e.g. {line}.0")


def parse_engine(text: str | None) -> str | None:
    """The Kafka version an engine option asks for: None for Brownout's node; a version
    for ``kafka`` (the default 4.x), ``kafka:VERSION`` and ``kafka:MAJOR.MINOR`` (that
    line's default version: kafka:3.9 is 3.9.2)."""
    if text is None or text == NODE_ENGINE:
        return None
    name, colon, version = text.partition(":")
    if name != KAFKA_ENGINE or (colon and not version):
        raise DistributionError(
            f"--engine {text}: expected {NODE_ENGINE}, {KAFKA_ENGINE} or "
            f"{KAFKA_ENGINE}:VERSION (e.g. {KAFKA_ENGINE}:{DEFAULT_KAFKA_3})")
    if not colon:
        return DEFAULT_KAFKA_4
    return line_default(version) if _LINE_RE.match(version) else check_version(version)


# Brownout's own node, as `brownout compare --engines` also names it ("node" for --engine).
NODE_ALIAS = "brownout"


def engine_home(engine: str | None) -> str | None:
    """The Apache Kafka folder an engine names, as `--engine` does: None for "node" or
    "brownout" (Brownout's own node, the default); "kafka" (the default 4.x) or
    "kafka:VERSION" must be installed (`brownout kafka install VERSION`):
    DistributionError otherwise."""
    version = parse_engine(None if engine == NODE_ALIAS else engine)
    return None if version is None else str(require_installed(version, cache_root()).home)


def version_from_jars(names: list[str]) -> str | None:
    """The Kafka version named by a libs folder's jars: the broker's kafka_2.13-X.jar,
    else kafka-clients-X.jar; None when neither is there."""
    for pattern in (_BROKER_JAR_RE, _CLIENTS_JAR_RE):
        for name in sorted(names):
            match = pattern.match(name)
            if match and not any(s in name for s in _NOT_A_RELEASE):
                return match.group(1)
    return None


def cache_root(option: Path | str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """--cache, else $BROWNOUT_KAFKA_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/brownout/kafka."""
    env = os.environ if env is None else env
    if option not in (None, ""):
        return Path(option).expanduser().absolute()
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser().absolute()
    xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(xdg).expanduser().absolute() / "brownout" / "kafka"


def read_marker(home: Path) -> dict[str, object] | None:
    """A cached version's marker when it is there and every jar it lists is too (an
    interrupted or damaged install has none, and is installed again)."""
    try:
        data = json.loads((home / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    jars = data.get("jars") if isinstance(data, dict) else None
    if not isinstance(jars, list) or not jars:
        return None
    if not all((home / LIBS / str(j)).is_file() for j in jars):
        return None
    return data


def installed(version: str, cache: Path) -> Distribution | None:
    """The cached `version`, None when it is not (completely) installed."""
    home = cache / version
    return Distribution(home, version) if read_marker(home) is not None else None


def require_installed(version: str, cache: Path) -> Distribution:
    found = installed(version, cache)
    if found is None:
        raise DistributionError(
            f"Apache Kafka {version} is not installed in {cache}: run `brownout kafka "
            f"install {version}` (it resolves Kafka's jars from Maven Central once)")
    return found


@dataclasses.dataclass(frozen=True)
class CachedVersion:
    version: str
    home: Path
    jars: int
    size_bytes: int


def list_cached(cache: Path) -> list[CachedVersion]:
    """The completely installed versions in `cache`, oldest version first."""
    if not cache.is_dir():
        return []
    found = []
    for home in cache.iterdir():
        if not home.is_dir() or read_marker(home) is None:
            continue
        jars = [p for p in (home / LIBS).iterdir() if p.suffix == ".jar"]
        found.append(CachedVersion(home.name, home, len(jars),
                                   sum(p.stat().st_size for p in jars)))
    good = [c for c in found if _VERSION_RE.match(c.version)]
    return sorted(good, key=lambda c: version_key(c.version))


def open_home(home: Path | str) -> Distribution:
    """A distribution from a directory: KAFKA_HOME of a download (or a cached version's
    folder), checked to hold Kafka's broker jar in libs/."""
    path = Path(home).expanduser().absolute()
    if not path.is_dir():
        raise DistributionError(f"{home}: no such directory (it should be an unpacked "
                                f"Apache Kafka, e.g. kafka_2.13-{DEFAULT_KAFKA_4})")
    libs = path / LIBS
    names = [p.name for p in libs.glob("*.jar")] if libs.is_dir() else []
    version = version_from_jars(names)
    if version is None or not any(_BROKER_JAR_RE.match(n) for n in names):
        raise DistributionError(
            f"{home}: no Kafka broker jar (libs/kafka_2.13-VERSION.jar) in {libs}; is this "
            "the top directory of an unpacked Apache Kafka (bin/, config/, libs/)?")
    return Distribution(path, version)
