"""ACL requests naming an UNKNOWN code (0) are refused while parsing, as Kafka's
DescribeAclsRequest, CreateAclsRequest and DeleteAclsRequest constructors refuse them:
the client loses its connection rather than getting an answer."""

from __future__ import annotations

import io

import pytest
from kio.serial import entity_writer

from brownout.protocol.apis import ApiKey, request_class
from brownout.protocol.build import build
from brownout.protocol.errors import InvalidRequestError
from brownout.protocol.parse_checks import parse_refusal

from .test_framecheck import decode, request_frame

# resource type TOPIC, pattern LITERAL, operation READ, permission ALLOW
FILTER = {"resource_type_filter": 2, "resource_name_filter": "t", "pattern_type_filter": 3,
          "principal_filter": None, "host_filter": None, "operation": 3,
          "permission_type": 3}
CREATION = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
            "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}


def frame(key: ApiKey, body: dict) -> bytes:
    cls = request_class(key, 2)
    out = io.BytesIO()
    entity_writer(cls)(out, build(cls, body))
    return request_frame(key, 2, out.getvalue())


def acl_requests(field: str | None) -> list[tuple[ApiKey, dict]]:
    def unknown(entry: dict, name: str) -> dict:
        return {**entry, name: 0} if name in entry else entry

    creation_field = {"resource_type_filter": "resource_type",
                      "pattern_type_filter": "resource_pattern_type"}.get(field or "", field)
    return [
        (ApiKey.DESCRIBE_ACLS, unknown(FILTER, field) if field else FILTER),
        (ApiKey.DELETE_ACLS, {"filters": [FILTER, unknown(FILTER, field) if field else FILTER]}),
        (ApiKey.CREATE_ACLS,
         {"creations": [unknown(CREATION, creation_field) if field else CREATION]}),
    ]


@pytest.mark.parametrize("field", ["resource_type_filter", "pattern_type_filter",
                                   "operation", "permission_type"])
def test_an_unknown_code_in_any_acl_field_closes_the_connection(field: str):
    for key, body in acl_requests(field):
        with pytest.raises(InvalidRequestError, match="contains UNKNOWN elements"):
            decode(frame(key, body))


def test_acl_requests_with_known_codes_decode():
    for key, body in acl_requests(None):
        request = decode(frame(key, body))
        assert parse_refusal(key, request.body) is None


def test_other_codes_kafka_does_not_know_pass_the_parse():
    # Only 0 is UNKNOWN's code: 127 reaches the handler (SECURITY_DISABLED without an
    # authorizer), as in Kafka.
    request = decode(frame(ApiKey.DESCRIBE_ACLS, {**FILTER, "operation": 127}))
    assert request.body.operation == 127
