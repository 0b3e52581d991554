"""Generate `brownout.protocol.zkapis` from Kafka 3.9's JSON message definitions.

    python tools/gen_zkapis.py KAFKA_CHECKOUT [--out src/brownout/protocol/zkapis]

KAFKA_CHECKOUT is an Apache Kafka source tree on the 3.9 branch (or its
`clients/src/main/resources/common/message` folder). The definitions themselves are not
part of Brownout: this script reads them and writes one module per message and version,
shaped like the modules kio generates from the same files (a frozen, slotted, kw-only
dataclass per struct, `kafka_type` and `tag` in the field metadata, the class variables
`__type__`, `__version__`, `__flexible__`, `__api_key__` and `__header_schema__`), so
that kio's entity_reader/entity_writer, framecheck and build treat them as kio's own.

kio 0.6.5 is generated from Kafka 4.x, where these ZooKeeper-era APIs no longer exist;
this fills exactly that gap and nothing more. The output is committed; rerun this after
changing it (it needs ruff, which tidies the output).
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import json
import keyword
import pathlib
import re
import subprocess
import sys
import textwrap
from typing import Any

# (api key, file stem of the definitions, package name, highest version to write or
# None for all). OffsetCommit v0-v1 are here because kio has only v2 and later (Kafka 4
# removed them) while Kafka 3.9 still serves them.
MESSAGES = (
    (4, "LeaderAndIsr", "leader_and_isr", None),
    (5, "StopReplica", "stop_replica", None),
    (6, "UpdateMetadata", "update_metadata", None),
    (7, "ControlledShutdown", "controlled_shutdown", None),
    (8, "OffsetCommit", "offset_commit", 1),
)

_PRIMITIVE_HINTS = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float64": "f64",
    "string": "str",
    "bytes": "bytes",
    "uuid": "uuid.UUID",
}
_INTEGERS = {"int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
# kio turns these int16 fields into its ErrorCode enum.
_ERROR_CODE_NAMES = {"ErrorCode", "PartitionErrorCode"}
# entityType -> the kio.schema.types class kio uses for it.
_ENTITY_TYPES = {"brokerId": "BrokerId", "topicName": "TopicName", "groupId": "GroupId"}
_BUILTINS = set(dir(builtins))

# Field notes in our own words (the definitions' descriptions stay in Kafka's tree).
# Only fields whose meaning is not plain from the name; keyed by (struct, field).
NOTES: dict[tuple[str, str], str] = {
    ("LeaderAndIsrRequest", "is_k_raft_controller"): (
        "True when a KRaft controller sends this during a ZooKeeper migration (KIP-866)."
    ),
    ("LeaderAndIsrRequest", "broker_epoch"): (
        "The receiving broker's epoch (its registration's czxid); -1 skips the check."
    ),
    ("LeaderAndIsrRequest", "type_"): (
        "0 unknown, 1 incremental, 2 full (every partition the broker hosts; sent by a "
        "migrating KRaft controller, after which the broker drops partitions not listed)."
    ),
    ("LeaderAndIsrPartitionState", "partition_epoch"): (
        "The zkVersion of the partition's state znode."
    ),
    ("LeaderAndIsrPartitionState", "is_new"): (
        "The replica is being created, so a missing log is expected, not a lost disk."
    ),
    ("LeaderAndIsrPartitionState", "leader_recovery_state"): (
        "1 while the leader recovers from an unclean election, else 0 (KIP-704)."
    ),
    ("LeaderAndIsrPartitionState", "adding_replicas"): "Replicas a reassignment adds.",
    ("LeaderAndIsrPartitionState", "removing_replicas"): "Replicas a reassignment removes.",
    ("LeaderAndIsrLiveLeader", "host_name"): "Host of the leader's inter-broker listener.",
    ("StopReplicaRequest", "delete_partitions"): (
        "Whether the broker also deletes the stopped replicas' logs (v0-v2, one flag for all)."
    ),
    ("StopReplicaPartitionState", "leader_epoch"): (
        "The controller's leader epoch for the partition: a broker ignores a request "
        "older than its own (-1: no check; -2: the topic is being deleted)."
    ),
    ("StopReplicaPartitionState", "delete_partition"): (
        "Whether the broker also deletes this replica's log."
    ),
    ("UpdateMetadataRequest", "type_"): (
        "0 unknown, 1 incremental, 2 full snapshot; set by a migrating KRaft controller."
    ),
    ("UpdateMetadataPartitionState", "zk_version"): (
        "The zkVersion of the partition's state znode."
    ),
    ("UpdateMetadataPartitionState", "offline_replicas"): (
        "Replicas whose log directory is offline."
    ),
    ("UpdateMetadataBroker", "v0_host"): "The broker's only host (v0 has no endpoints).",
    ("UpdateMetadataBroker", "v0_port"): "The broker's only port (v0 has no endpoints).",
    ("UpdateMetadataEndpoint", "security_protocol"): (
        "Kafka's SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL."
    ),
    ("ControlledShutdownResponse", "remaining_partitions"): (
        "Partitions the broker still leads; empty means it may shut down."
    ),
}


# -- reading the definitions -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Versions:
    low: int
    high: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str | None) -> Versions | None:
        if text is None or text == "none":
            return None
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)

    def versions(self) -> range:
        assert self.high is not None
        return range(self.low, self.high + 1)


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    versions: Versions
    nullable: Versions | None
    tagged: Versions | None
    tag: int | None
    default: Any
    entity_type: str | None
    struct: StructSpec | None  # for struct and struct-array fields


@dataclasses.dataclass(frozen=True)
class StructSpec:
    name: str
    fields: tuple[FieldSpec, ...]


@dataclasses.dataclass(frozen=True)
class MessageSpec:
    name: str
    api_key: int | None
    kind: str  # request, response or header
    valid: Versions
    flexible: Versions | None
    struct: StructSpec


def load(path: pathlib.Path, highest: int | None = None) -> MessageSpec:
    """The message defined in `path`; with `highest`, only its versions up to that one
    (fields that exist only in later versions are left out)."""
    # The files are JSON with whole-line // comments.
    text = "\n".join(
        line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")
    )
    raw = json.loads(text)
    common: dict[str, StructSpec] = {}
    raw_common = {s["name"]: s for s in raw.get("commonStructs", [])}

    def common_struct(name: str) -> StructSpec:
        if name not in common:
            common[name] = StructSpec(name, tuple(field(f) for f in raw_common[name]["fields"]))
        return common[name]

    def field(f: dict[str, Any]) -> FieldSpec:
        versions = Versions.parse(f.get("versions") or f.get("taggedVersions"))
        assert versions is not None, f
        kind = f["type"]
        element = kind.removeprefix("[]")
        struct = None
        if element not in _PRIMITIVE_HINTS and element != "records":
            if "fields" in f:
                struct = StructSpec(element, tuple(field(x) for x in f["fields"]))
            else:
                struct = common_struct(element)
        if "flexibleVersions" in f and raw["type"] != "header":
            # Only the header's client id overrides the message's encoding; kio special-
            # cases that one field by name.
            raise NotImplementedError(f"{f['name']}: a field-level flexibleVersions")
        if f["name"].endswith("Ms") and (highest is None or versions.low <= highest):
            raise NotImplementedError(f"{f['name']}: kio maps *Ms fields to timedeltas")
        return FieldSpec(
            name=f["name"],
            type=kind,
            versions=versions,
            nullable=Versions.parse(f.get("nullableVersions")),
            tagged=Versions.parse(f.get("taggedVersions")),
            tag=f.get("tag"),
            default=f.get("default"),
            entity_type=f.get("entityType"),
            struct=struct,
        )

    valid = Versions.parse(raw["validVersions"])
    assert valid is not None
    return MessageSpec(
        name=raw["name"],
        api_key=raw.get("apiKey"),
        kind=raw["type"],
        valid=valid,
        flexible=Versions.parse(raw["flexibleVersions"]),
        struct=StructSpec(raw["name"], tuple(field(f) for f in raw["fields"])),
    )


# -- writing modules -------------------------------------------------------------------


def snake(name: str) -> str:
    """kio's field names: isKRaftController -> is_k_raft_controller, Type -> type_."""
    out = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    out = re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", out).lower()
    return out + "_" if out in _BUILTINS or keyword.iskeyword(out) else out


def header_import(message: MessageSpec, version: int, flexible: bool) -> tuple[str, str]:
    """(module, class) of the header kio would attach; Kafka's rules for which one."""
    if message.kind == "response":
        return f"kio.schema.response_header.v{1 if flexible else 0}.header", "ResponseHeader"
    if message.api_key == 7 and version == 0:
        # ControlledShutdown v0 predates the client id in the request header.
        return "brownout.protocol.zkapis.request_header.v0.header", "RequestHeader"
    return f"kio.schema.request_header.v{2 if flexible else 1}.header", "RequestHeader"


class ModuleWriter:
    def __init__(self, message: MessageSpec, version: int) -> None:
        self.message = message
        self.version = version
        self.flexible = message.flexible is not None and version in message.flexible
        self.classes: list[str] = []
        self.seen: set[str] = set()
        self.imports: set[str] = set()
        self.primitives: set[str] = {"i16"}

    def hint(self, f: FieldSpec, nullable: bool) -> tuple[str, str | None]:
        """(type hint, kafka_type) of one field in this version."""
        element = f.type.removeprefix("[]")
        is_array = f.type.startswith("[]")
        if f.struct is not None:
            self.write_struct(f.struct)
            inner, kafka_type = f.struct.name, None
        elif element == "int16" and f.name in _ERROR_CODE_NAMES and not is_array:
            self.imports.add("from kio.schema.errors import ErrorCode")
            inner, kafka_type = "ErrorCode", "error_code"
        else:
            kafka_type = element
            if f.entity_type is not None:
                inner = _ENTITY_TYPES[f.entity_type]
                self.imports.add(f"from kio.schema.types import {inner}")
            else:
                inner = _PRIMITIVE_HINTS[element]
                if element == "uuid":
                    self.imports.add("import uuid")
                    # kio reads the all-zero uuid as None and writes None as zeros.
                    inner = "uuid.UUID | None"
                elif inner[0] in "iuf" and inner[1:].isdigit():
                    self.primitives.add(inner)
        if is_array:
            inner = f"tuple[{inner}, ...]"
        if nullable and not inner.endswith("| None"):
            inner = f"{inner} | None"
        return inner, kafka_type

    def default(self, f: FieldSpec, kafka_type: str | None, nullable: bool) -> str | None:
        if f.type.startswith("[]") and f.struct is None:
            return "()"
        if f.default is None:
            if f.tag is not None and f.struct is not None and f.type.startswith("[]"):
                return "()"
            return None
        if f.default == "null":
            assert nullable, f
            return "None"
        if kafka_type in _INTEGERS:
            value = int(str(f.default), 0)
            if f.entity_type is not None:
                return f"{_ENTITY_TYPES[f.entity_type]}({value})"
            return f"{_PRIMITIVE_HINTS[kafka_type]}({value})"
        if kafka_type == "error_code":
            return f"ErrorCode({int(str(f.default), 0)})"
        if kafka_type == "bool":
            return {"true": "True", "false": "False"}[str(f.default).lower()]
        if kafka_type == "string":
            return repr(f.default)
        raise NotImplementedError(f"default {f.default!r} for {f.name}")

    def write_struct(self, struct: StructSpec) -> None:
        if struct.name in self.seen:
            return
        self.seen.add(struct.name)
        body: list[str] = []
        for f in struct.fields:
            if self.version not in f.versions:
                continue
            tag = f.tag if f.tagged is not None and self.version in f.tagged else None
            nullable = f.nullable is not None and self.version in f.nullable
            hint, kafka_type = self.hint(f, nullable)
            name = snake(f.name)
            metadata = {}
            if kafka_type is not None:
                metadata["kafka_type"] = kafka_type
            if tag is not None:
                metadata["tag"] = tag
            default = self.default(f, kafka_type, nullable)
            args = []
            if metadata:
                args.append(f"metadata={metadata!r}".replace("'", '"'))
            if default is not None:
                args.append(f"default={default}")
            line = f"    {name}: {hint}"
            if args:
                line += f" = field({', '.join(args)})"
            body.append(line)
            note = NOTES.get((struct.name, name))
            if note:
                text = textwrap.fill(note, 90, subsequent_indent="    ")
                body.append(f'    """{text}"""')
        is_top = struct.name == self.message.struct.name
        kind = self.message.kind if is_top else "nested"
        header_module, header_cls = header_import(self.message, self.version, self.flexible)
        self.imports.add(f"from {header_module} import {header_cls}")
        head = [
            "@dataclass(frozen=True, slots=True, kw_only=True)",
            f"class {struct.name}:",
            f"    __type__: ClassVar = EntityType.{kind}",
            f"    __version__: ClassVar[i16] = i16({self.version})",
            f"    __flexible__: ClassVar[bool] = {self.flexible}",
            f"    __api_key__: ClassVar[i16] = i16({self.message.api_key})",
            f"    __header_schema__: ClassVar[type[{header_cls}]] = {header_cls}",
        ]
        self.classes.append("\n".join(head + body))

    def write_header(self) -> None:
        """The request header: no api key or header schema of its own."""
        body = []
        for f in self.message.struct.fields:
            if self.version not in f.versions:
                continue
            nullable = f.nullable is not None and self.version in f.nullable
            hint, kafka_type = self.hint(f, nullable)
            body.append(
                f'    {snake(f.name)}: {hint} = field(metadata={{"kafka_type": "{kafka_type}"}})'
            )
        head = [
            "@dataclass(frozen=True, slots=True, kw_only=True)",
            f"class {self.message.name}:",
            "    __type__: ClassVar = EntityType.header",
            f"    __version__: ClassVar[i16] = i16({self.version})",
            f"    __flexible__: ClassVar[bool] = {self.flexible}",
        ]
        self.classes.append("\n".join(head + body))

    def render(self, source: str, note: str) -> str:
        std = sorted(i for i in self.imports if i.startswith("import "))
        third = sorted(i for i in self.imports if i.startswith("from kio"))
        first = sorted(i for i in self.imports if i.startswith("from brownout"))
        lines = [
            '"""' + f"{self.message.name} v{self.version}, generated by tools/gen_zkapis.py "
            f"from Kafka 3.9's\n``{source}``.{note}\n" + '"""',
            "",
            *std,
            "from dataclasses import dataclass, field",
            "from typing import ClassVar",
            "",
            *third,
            "from kio.static.constants import EntityType",
            "from kio.static.primitive import " + ", ".join(sorted(self.primitives)),
        ]
        if first:
            lines += ["", *first]
        return "\n".join(lines) + "\n\n\n" + "\n\n\n".join(self.classes) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kafka", type=pathlib.Path)
    parser.add_argument(
        "--out", type=pathlib.Path, default=pathlib.Path("src/brownout/protocol/zkapis")
    )
    args = parser.parse_args()
    messages_dir: pathlib.Path = args.kafka
    nested = messages_dir / "clients/src/main/resources/common/message"
    if nested.is_dir():
        messages_dir = nested
    out: pathlib.Path = args.out

    def package(path: pathlib.Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        (path / "__init__.py").touch()

    header = load(messages_dir / "RequestHeader.json")
    writer = ModuleWriter(header, 0)
    writer.write_header()
    package(out / "request_header" / "v0")
    package(out / "request_header")
    (out / "request_header" / "v0" / "header.py").write_text(
        writer.render(
            "RequestHeader.json",
            "\n\nOnly ControlledShutdown v0 uses it; kio has headers v1 and v2 only.",
        )
    )

    index: dict[int, tuple[str, int, int]] = {}
    for api_key, stem, pkg, highest in MESSAGES:
        package(out / pkg)
        ranges = []
        for kind in ("Request", "Response"):
            message = load(messages_dir / f"{stem}{kind}.json", highest)
            assert message.api_key == api_key, message.name
            if highest is not None:
                message = dataclasses.replace(
                    message, valid=Versions(message.valid.low, highest))
            ranges.append(message.valid)
            for version in message.valid.versions():
                writer = ModuleWriter(message, version)
                writer.write_struct(message.struct)
                package(out / pkg / f"v{version}")
                module = out / pkg / f"v{version}" / f"{kind.lower()}.py"
                module.write_text(writer.render(f"{stem}{kind}.json", ""))
        assert ranges[0] == ranges[1], stem
        index[api_key] = (pkg, ranges[0].low, ranges[0].high or 0)

    lines = [
        '"""The APIs in this package: api key -> (package, lowest and highest version).',
        "",
        "Generated by tools/gen_zkapis.py.",
        '"""',
        "",
        "API_INDEX: dict[int, tuple[str, int, int]] = {",
        *(f"    {key}: {value!r}," for key, value in index.items()),
        "}",
    ]
    (out / "_index.py").write_text("\n".join(lines).replace("'", '"') + "\n")
    # The modules are written plainly; ruff sorts their imports and wraps long lines.
    for command in (("check", "--fix", "-q"), ("format", "-q")):
        subprocess.run([sys.executable, "-m", "ruff", *command, str(out)], check=True)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
