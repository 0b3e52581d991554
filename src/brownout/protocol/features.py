"""Kafka's feature flags (KIP-584) as ApiVersions v3+ carries them, for a KRaft node.

A Kafka broker or controller lists the features its software supports (versions from
min to max) and those the cluster has finalized (a level each), with the epoch of the
finalized set: in KRaft the offset of the metadata image that holds it. The node
implements Kafka 3.9's metadata (its storage is formatted at metadata.version 3.9-IV0,
level 21) and nothing that a newer level or another feature turns on: no KIP-848 or
share groups (group.version, share.version), no transactions (transaction.version).
Eligible leader replicas, Kafka 4.x's eligible.leader.replicas.version, are a controller
setting here as in Kafka 3.7-3.9 (eligible.leader.replicas.enable). So it supports and
finalizes metadata.version only, at 21, whichever version ranges it advertises.

Kafka leaves out of ApiVersions below v4 every supported feature whose lowest version
is 0 (older clients cannot read such a range), which removes kraft.version and the like
from a 3.9 answer; metadata.version starts above 0.
"""

from __future__ import annotations

from typing import Any

from .apis import API_VERSIONS_3_9, API_VERSIONS_4_0

METADATA_VERSION = "metadata.version"
# metadata.version 3.9-IV0: the level the node's metadata is at.
METADATA_VERSION_LEVEL = 21
# The lowest metadata.version a broker of each release supports: 3.0-IV1 in Kafka 3.9;
# Kafka 4.0 gave up those below 3.3-IV3.
MIN_METADATA_VERSION = {API_VERSIONS_3_9: 1, API_VERSIONS_4_0: 7}


def api_versions_features(release: str, epoch: int) -> dict[str, Any]:
    """The feature fields of an ApiVersions v3+ answer of a KRaft node advertising
    `release`'s version ranges, its metadata image at offset `epoch`."""
    return {
        "supported_features": [{"name": METADATA_VERSION,
                                "min_version": MIN_METADATA_VERSION[release],
                                "max_version": METADATA_VERSION_LEVEL}],
        "finalized_features_epoch": epoch,
        "finalized_features": [{"name": METADATA_VERSION,
                                "max_version_level": METADATA_VERSION_LEVEL,
                                "min_version_level": METADATA_VERSION_LEVEL}],
    }
