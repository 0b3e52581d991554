"""Finding a Java runtime for the lab's JVMs (ZooKeeper servers, the Spark pipeline).

`find_java` follows the rule of Spark's own launcher (bin/spark-class): ``$JAVA_HOME/bin/java``
when JAVA_HOME is set, else ``java`` on PATH. So the lab and PySpark always agree on
which Java they run, and a user fixes both with one setting.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

MINIMUM_JAVA = 17  # what PySpark 4 and the lab's ZooKeeper 3.9 are tested with
# The JIT's first tier (C1) only: for a JVM that runs for seconds or does little work, C2's
# compilations cost more CPU than they save, on two cores shared with the lab. Without
# its upper tiers the JVM reserves 48 MB for compiled code instead of 240 MB; a Spark
# pipeline's generated code filled that in 95 s, the JIT stopped, and a method handle
# then failed to link (java.lang.InternalError), which killed the driver's executor.
# So the first tier keeps the tiered JVM's code cache (reserved, not committed).
JIT_FIRST_TIER = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")



def class_data_archive(jars: Path, name: str, env: Mapping[str, str] | None = None) -> Path:
    """Where the class-data archive of JVMs running from the jars in `jars` lives:
    ${XDG_CACHE_HOME:-~/.cache}/brownout/class-data/NAME-DIGEST.jsa, the digest over the
    folder and its jars' names, sizes and times, which the JVM checks too: other jars
    (another PySpark) get another archive rather than one the JVM would refuse."""
    env = os.environ if env is None else env
    listing = sorted((p.name, st.st_size, st.st_mtime_ns)
                     for p in jars.glob("*.jar") for st in (p.stat(),))
    digest = hashlib.sha256(repr((str(jars.absolute()), listing)).encode()).hexdigest()[:16]
    xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(xdg).expanduser().absolute() / "brownout" / "class-data" / f"{name}-{digest}.jsa"


class ArchiveError(RuntimeError):
    """A JVM did not write the class-data archive it was started to dump."""


def dump_class_data(argv: Sequence[str], partial: Path, log_path: Path, cwd: Path,
                    ready: Callable[[], bool], what: str, timeout: float) -> None:
    """Run the JVM `argv` with -XX:ArchiveClassesAtExit=`partial` (its output in
    `log_path`) until `ready()`, stop it with SIGTERM, which is when it dumps the classes
    it loaded, and check that it wrote them. ArchiveError saying why not, naming the JVM
    as `what` ("the class-data archive's node")."""

    def tail(lines: int) -> str:
        return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])

    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    command = [argv[0], f"-XX:ArchiveClassesAtExit={partial}", *argv[1:]]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None:
                raise ArchiveError(f"{what} exited with status {proc.returncode}:\n{tail(10)}")
            if time.monotonic() > deadline:
                raise ArchiveError(f"{what} was not ready within {timeout:.0f}s")
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGTERM)  # the dump happens as the JVM exits
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise ArchiveError(f"{what} did not exit within {timeout:.0f}s") from None
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if not partial.is_file() or partial.stat().st_size == 0:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise ArchiveError(f"the JVM wrote no class-data archive:\n{tail(5)}")


def cds_options(archive: Path | None) -> list[str]:
    """Start a JVM from a class-data archive (AppCDS: the classes of an earlier start,
    mapped instead of loaded and verified again); -Xshare:auto, the default, makes an
    archive the JVM cannot use (another JDK, changed jars) a warning, never an error."""
    return ["-Xshare:auto", f"-XX:SharedArchiveFile={archive}"] if archive else []


INSTALL_HINT = (
    "install a Java runtime (Debian: apt-get install openjdk-17-jre-headless) or point "
    "JAVA_HOME at one"
)

# `java -version` prints e.g. `openjdk version "17.0.15" 2025-04-15` or, before Java 9,
# `java version "1.8.0_392"`; vendors vary the first word.
_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


class JavaError(RuntimeError):
    """No usable Java: missing, unrunnable or too old; the message says which and how to fix."""


def parse_java_version(text: str) -> int | None:
    """The feature release (8, 11, 17, 21, ...) from `java -version` output, None if absent."""
    match = _VERSION_RE.search(text)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:  # "1.8.0_392" is Java 8
        return int(match.group(2))
    return major


def find_java(env: Mapping[str, str] | None = None) -> Path | None:
    """``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH; None if neither."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return candidate if os.access(candidate, os.X_OK) else None
    found = shutil.which("java", path=env.get("PATH"))
    return Path(found) if found else None


def require_java(
    purpose: str, minimum: int = MINIMUM_JAVA, env: Mapping[str, str] | None = None
) -> Path:
    """The java executable to run, checked to be Java `minimum` or newer; JavaError naming
    `purpose` (what needs it) otherwise."""
    env = os.environ if env is None else env
    java = find_java(env)
    if java is None:
        where = (
            f"JAVA_HOME is {env['JAVA_HOME']} but it has no executable bin/java"
            if env.get("JAVA_HOME")
            else "no `java` on PATH and JAVA_HOME is not set"
        )
        raise JavaError(f"{purpose} needs Java {minimum} or newer: {where}; {INSTALL_HINT}")
    try:
        result = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise JavaError(
            f"{purpose} needs Java {minimum} or newer: cannot run {java}: {e}"
        ) from None
    version = parse_java_version(result.stderr + result.stdout)
    if version is None:
        raise JavaError(
            f"{purpose} needs Java {minimum} or newer: `{java} -version` did not say which "
            f"version it is (exit status {result.returncode}): {result.stderr.strip()[:200]}"
        )
    if version < minimum:
        raise JavaError(
            f"{purpose} needs Java {minimum} or newer, but {java} is Java {version}; {INSTALL_HINT}"
        )
    return java


def log4j2_console(comment: str, level: str, *, stderr: bool = False,
                   loggers: Mapping[str, tuple[str, str]] | None = None) -> str:
    """A log4j2 properties file: every logger at `level` to the console (stdout, or
    stderr) in Kafka's log pattern, with `loggers` (key -> (logger name, level)) set
    apart. One text
    for the lab's Kafka nodes, its ZooKeeper servers and Kafka's tools."""
    name = "stderr" if stderr else "stdout"
    lines = [*(f"# {c}" for c in comment.splitlines()), "status = warn",
             f"appender.{name}.type = Console", f"appender.{name}.name = {name.upper()}"]
    if stderr:
        lines.append(f"appender.{name}.target = SYSTEM_ERR")
    lines += [f"appender.{name}.layout.type = PatternLayout",
              f"appender.{name}.layout.pattern = [%d] %p %m (%c)%n",
              f"rootLogger.level = {level}", f"rootLogger.appenderRef.{name}.ref = {name.upper()}"]
    for key, (logger, logger_level) in (loggers or {}).items():
        lines += [f"logger.{key}.name = {logger}", f"logger.{key}.level = {logger_level}"]
    return "\n".join(lines) + "\n"
