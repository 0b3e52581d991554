"""What kafka-dump-log.sh --cluster-metadata-decoder prints as a metadata log record's
payload (Kafka 4.x: MetadataRecordSerde.read, then the record as JSON, or
"Error at OFFSET, skipping. MESSAGE" when that read fails).

Kafka frames each metadata record as unsigned varints (frame version 1, record type,
record version) before its fields. The node's __cluster_metadata records are its own
JSON, and its leader-change entries its own text, so Kafka's decoder stops at the frame
version (the first byte, '{' or 'l'), and so does this one, word for word. A record in
Kafka's frame is refused: the twin has no schemas for Kafka's metadata records, and the
node never writes one.
"""

from __future__ import annotations

from brownout.protocol.errors import CorruptRecordError

FRAME_VERSION = 1
_INT16_MAX = 32767


class KafkaMetadataRecordError(CorruptRecordError):
    """A record in Kafka's own metadata frame, which this decoder does not read."""


def metadata_payload(offset: int, value: bytes | None) -> str:
    """The payload text Kafka's cluster metadata decoder prints for one record."""
    if value is None:
        # Kafka's tool prints the JVM's NullPointerException text here.
        raise CorruptRecordError(f"metadata record at offset {offset} has a null value")
    return f"Error at {offset}, skipping. {_frame_error(offset, value)}"


def _frame_error(offset: int, value: bytes) -> str:
    frame_version = _unsigned_varint(value)
    if frame_version is None:
        return "Error while reading frame version"
    if frame_version > _INT16_MAX:
        return "Value for frame version was too large."
    frame_version = _as_short(frame_version)
    if frame_version == 0:
        return ("Could not deserialize metadata record with frame version 0. Note that "
                "upgrades from the preview release of KRaft in 2.8 to newer versions are "
                "not supported.")
    if frame_version != FRAME_VERSION:
        return (f"Could not deserialize metadata record due to unknown frame version "
                f"{frame_version}(only frame version {FRAME_VERSION} is supported)")
    raise KafkaMetadataRecordError(
        f"the record at offset {offset} is one of Kafka's metadata records (frame version "
        f"1), which this dump does not decode; kafka-dump-log.sh does")


def _unsigned_varint(data: bytes) -> int | None:
    """Kafka's ByteUtils.readUnsignedVarint; None where it throws (the value ends
    first, or runs past five bytes)."""
    value = 0
    for i, byte in enumerate(data[:5]):
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            # A fifth byte's high bits overflow Java's int as they do here.
            value &= 0xFFFFFFFF
            return value - (1 << 32) if value >= 1 << 31 else value
    return None


def _as_short(value: int) -> int:
    # Kafka keeps the frame version as a Java short, so a negative int wraps.
    return ((value + 0x8000) & 0xFFFF) - 0x8000
