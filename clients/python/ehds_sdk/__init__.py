"""The ehds-gateway Python SDK: a thin layer over the client generated from the gateway's
OpenAPI document (`ehds_gateway_client`)."""

from .gateway import (
    TERMINAL,
    Gateway,
    GatewayError,
    ModelDownload,
    rounds_frame,
    statistics_frame,
)
from .provenance import Provenance, ProvenanceError, verify_model

__all__ = [
    "TERMINAL",
    "Gateway",
    "GatewayError",
    "ModelDownload",
    "Provenance",
    "ProvenanceError",
    "rounds_frame",
    "statistics_frame",
    "verify_model",
]
