"""A minimal blocking Kafka client with exact control of the wire: one request at a time,
any API version, bodies built with `protocol.build` and decoded with kio. The group
checks (Observation E) use it where a real client would hide what the coordinator said."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_writer

from ..protocol.build import build
from ..protocol.framecheck import decode_entity


class RawClient:
    def __init__(self, address: str, client_id: str = "brownout-raw",
                 timeout: float = 15.0) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: dict[str, Any] | Any) -> int:
        """Send a request: `body` is a dict (built with `protocol.build`) or a kio request
        entity of this version."""
        self.correlation_id += 1
        cls: Any = load_request_schema(api_key, version)
        out = io.BytesIO()
        header_cls = cls.__header_schema__
        entity_writer(header_cls)(
            out,
            header_cls(request_api_key=api_key, request_api_version=version,
                       correlation_id=self.correlation_id, client_id=self.client_id),
        )
        entity_writer(cls)(out, build(cls, body) if isinstance(body, dict) else body)
        data = out.getvalue()
        self.sock.sendall(struct.pack(">i", len(data)) + data)
        return self.correlation_id

    def receive(self, api_key: int, version: int) -> Any:
        size = struct.unpack(">i", self._read(4))[0]
        frame = self._read(size)
        cls: Any = load_response_schema(api_key, version)
        header, offset = decode_entity(cls.__header_schema__, frame, 0)
        if header.correlation_id != self.correlation_id:
            raise ConnectionError(f"correlation id {header.correlation_id}, expected "
                                  f"{self.correlation_id}: connection out of sync")
        body, _ = decode_entity(cls, frame, offset)
        return body

    def request(self, api_key: int, version: int, body: dict[str, Any] | Any) -> Any:
        self.send(api_key, version, body)
        return self.receive(api_key, version)

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)
