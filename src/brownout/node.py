"""One Brownout node: `python -m brownout.node server.properties [--override k=v]...`.

The process's entry point: it reads the config, sets up Kafka-like logging, runs the
server the config describes (server/: a KRaft node's shared quorum, broker and
controller, or a ZooKeeper-mode broker) until SIGTERM, and exits non-zero after a fatal
error. The servers shut down in order on SIGTERM (stop accepting, finish in-flight work,
checkpoint, mark the logs cleanly shut down); kill -9 skips all that, which is what
recovery is for.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # before the package's imports: see without_hypothesis
    from .common.startup import without_hypothesis

    without_hypothesis()

from .common.config import ConfigError
from .common.events import EventLog
from .common.kafka_config import KafkaConfig
from .common.tasks import cancel_and_wait
from .server.kafka_raft_server import KafkaRaftServer
from .server.kafka_server import KafkaServer
from .server.shared import NodeStartupError

__all__ = ["KafkaRaftServer", "KafkaServer", "NodeStartupError", "load_config", "main", "run"]

log = logging.getLogger("kafka.Kafka")  # the process, whichever server it runs


# -- entry point ----------------------------------------------------------------------


class _KafkaFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        t = time.localtime(record.created)
        return time.strftime("%Y-%m-%d %H:%M:%S", t) + f",{int(record.msecs):03d}"


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_KafkaFormatter("[%(asctime)s] %(levelname)s %(message)s (%(name)s)"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m brownout.node",
        description="Start one Brownout node (a Kafka-compatible broker/controller).",
    )
    parser.add_argument("config", type=Path, help="server.properties file")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE",
        help="override a property from the file (like kafka-server-start.sh --override)",
    )
    parser.add_argument("--events", type=Path, help="write structured events (JSON lines) here")
    return parser.parse_args(argv)


def load_config(path: Path, overrides: list[str]) -> KafkaConfig:
    from .common.properties import read_properties

    if not path.is_file():
        raise NodeStartupError(f"config file {path} does not exist")
    try:
        raw = read_properties(path)
    except OSError as e:  # unreadable, or not text
        raise NodeStartupError(f"cannot read {path}: {e.strerror or e}") from None
    for item in overrides:
        key, eq, value = item.partition("=")
        if not eq:
            raise NodeStartupError(f"--override expects KEY=VALUE, got {item!r}")
        raw[key.strip()] = value
    config = KafkaConfig(raw)
    check_listener_security(config)
    check_authorizer(config)
    return config


def check_authorizer(config: KafkaConfig) -> None:
    """Fail at load on an authorizer the node does not implement."""
    from .broker.acl_apis import AuthorizerConfigError, authorizer_from_config

    try:
        if authorizer_from_config(config, tuple) is not None and config.is_zookeeper_mode:
            raise AuthorizerConfigError(
                "authorizer.class.name is only supported in KRaft mode here: a ZooKeeper-"
                "mode broker keeps its ACLs in ZooKeeper, which is not implemented")
    except AuthorizerConfigError as e:
        raise ConfigError(str(e)) from e


def check_listener_security(config: KafkaConfig) -> None:
    """Fail at load, with the key named, on SASL or SSL settings a listener cannot use
    (a missing JAAS config, a JKS key store), not later while binding."""
    from .security.listeners import listener_security

    for endpoint in config.listeners:
        if endpoint.security_protocol != "PLAINTEXT":
            try:
                listener_security(config, endpoint)
            except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
                raise ConfigError(f"listener {endpoint.listener}: {e}") from e


async def run(config: KafkaConfig, events: EventLog) -> BaseException | None:
    """Run a node until it is asked to stop; returns the fatal error that stopped it."""
    node: KafkaRaftServer | KafkaServer
    if config.is_zookeeper_mode:
        node = KafkaServer(config, events=events)
    else:
        node = KafkaRaftServer(config, events=events)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_stop)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    starting = asyncio.create_task(node.start())
    stopping = asyncio.create_task(node.wait_stopped())
    try:
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()  # raises NodeStartupError / OSError
            await stopping
        else:
            log.info("Stop requested while starting")
            with contextlib.suppress(Exception):
                await cancel_and_wait(starting)
    finally:
        stopping.cancel()
        await node.shutdown()
    return node.fatal_error


def dump_tasks() -> None:
    """SIGUSR1: write every asyncio task's stack to the log (``kill -USR1 PID`` on a node
    that looks stuck; a blocked event loop needs py-spy instead)."""
    import io

    for task in asyncio.all_tasks():
        out = io.StringIO()
        task.print_stack(limit=12, file=out)
        log.info("Task dump: %s", out.getvalue().rstrip())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging(os.environ.get("BROWNOUT_LOG_LEVEL", "INFO"))
    try:
        config = load_config(args.config, args.override)
    except (ConfigError, NodeStartupError) as e:
        log.error("Invalid configuration in %s: %s", args.config, e)
        return 2
    for key, value in config.unknown.items():
        log.warning("The configuration '%s' was supplied but isn't a known config.", key)
        del value
    events = EventLog(args.events, node_id=config.node_id)
    # The lab's power-loss fault reads what this node made durable (storage.durability).
    from .storage import durability

    durability.open_from_environment(
        [*(config.log_dirs if config.is_broker else []), config.metadata_log_dir])
    try:
        fatal = asyncio.run(run(config, events))
        if fatal is not None:
            log.error("Exiting node %d after a fatal error: %r", config.node_id, fatal)
            return 1
    except NodeStartupError as e:
        log.error("Exiting node %d: %s", config.node_id, e)
        return 1
    except OSError as e:
        log.error("Exiting node %d: %s", config.node_id, e)
        return 1
    finally:
        events.close()
        durability.close_journal()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
