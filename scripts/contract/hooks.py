"""Serialisers schemathesis lacks for the gateway's bulk opt-out import (NDJSON, and a FHIR
Bundle of Consent), so that the import is fuzzed like every other operation."""

import json

import schemathesis


def _bytes(value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode("utf-8", "surrogatepass")


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, list):
        return b"\n".join(_bytes(v) for v in value)
    return _bytes(value)


@schemathesis.serializer("application/fhir+json")
def fhir_json(ctx, value):
    return _bytes(value)
