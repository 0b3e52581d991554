"""A broker's quota and SCRAM handlers: describes from its metadata cache, and the
error responses Kafka gives a principal without the cluster permissions (the alterations
themselves go to the controller: tests/unit/controller/test_client_quotas_and_scram.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from brownout.broker.acl_apis import AuthHelper
from brownout.broker.apis import ClientContext
from brownout.broker.quota_apis import QuotaApis
from brownout.protocol.apis import ApiKey, request_class
from brownout.protocol.build import build
from brownout.protocol.connection import Request, RequestHeader
from brownout.security.mechanisms import ScramCredential

CTX = ClientContext(listener="PLAINTEXT", client_host="/127.0.0.1", principal="User:bob")
ALICE = (("user", "alice"),)


class Cache:
    def client_quotas(self) -> dict[Any, dict[str, float]]:
        return {ALICE: {"producer_byte_rate": 1024.0},
                (("client-id", "c1"), ("user", "alice")): {"request_percentage": 5.0}}

    def scram_credentials(self) -> dict[str, dict[int, ScramCredential]]:
        return {"alice": {1: ScramCredential(b"s", b"k", b"k", 8192)}}


class Deny:
    def allowed(self, *args: Any) -> bool:
        return False


def call(apis: QuotaApis, key: ApiKey, version: int, body: dict[str, Any]) -> Any:
    request = Request(RequestHeader(key, version, 1, "c"), build(request_class(key, version),
                                                                 body), 0)
    return asyncio.run(apis.handlers()[key](request, CTX))


def apis(auth: AuthHelper) -> QuotaApis:
    return QuotaApis(Cache(), None, auth)  # type: ignore[arg-type]


def test_describes_answer_from_the_metadata_cache():
    answer = call(apis(AuthHelper(None)), ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {
        "components": [{"entity_type": "user", "match_type": 0, "match": "alice"}],
        "strict": True})
    assert (answer.error_code, answer.error_message) == (ErrorCode.none, "")
    assert [([(e.entity_type, e.entity_name) for e in entry.entity],
             [(v.key, v.value) for v in entry.values]) for entry in answer.entries] == [
        ([("user", "alice")], [("producer_byte_rate", 1024.0)])]
    scram = call(apis(AuthHelper(None)), ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                 {"users": None})
    assert [(r.user, [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in scram.results] == [("alice", [(1, 8192)])]


def test_a_principal_without_cluster_permissions_gets_kafkas_error_responses():
    denied = apis(AuthHelper(Deny()))  # type: ignore[arg-type]
    answer = call(denied, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})
    assert (answer.error_code, answer.error_message, answer.entries) == (
        ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", None)
    altered = call(denied, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [
        {"entity": [{"entity_type": "user", "entity_name": "x"}],
         "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]}]})
    assert [(e.error_code, [(d.entity_type, d.entity_name) for d in e.entity])
            for e in altered.entries] == [(ErrorCode.cluster_authorization_failed,
                                           [("user", "x")])]
    scram = call(denied, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                 {"users": [{"name": "a"}, {"name": "b"}]})
    assert scram.error_code == ErrorCode.cluster_authorization_failed
    assert [(r.user, r.error_code) for r in scram.results] == [
        ("", ErrorCode.cluster_authorization_failed)] * 2
    upserted = call(denied, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {
        "deletions": [{"name": "z", "mechanism": 1}],
        "upsertions": [{"name": "a", "mechanism": 1, "iterations": 4096, "salt": b"s",
                        "salted_password": b"p"}]})
    assert [(r.user, r.error_code) for r in upserted.results] == [
        ("a", ErrorCode.cluster_authorization_failed),
        ("z", ErrorCode.cluster_authorization_failed)]
