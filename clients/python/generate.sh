#!/usr/bin/env bash
# Regenerates ehds_gateway_client/ from openapi/openapi.json.
#   clients/python/generate.sh          rewrite the committed package
#   clients/python/generate.sh --check  exit 1 if the committed package differs from a fresh one
set -euo pipefail
cd "$(dirname "$0")"
GENERATOR_VERSION=0.29.1
GENERATOR="${OPENAPI_PYTHON_CLIENT:-openapi-python-client}"
if ! "$GENERATOR" --version 2>/dev/null | grep -q "$GENERATOR_VERSION"; then
  echo "needs openapi-python-client $GENERATOR_VERSION (pip install openapi-python-client==$GENERATOR_VERSION)" >&2
  exit 2
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Two shapes of the gateway's document are beyond the generator: prepare_openapi.py rewrites
# them into equivalent ones. The generator still leaves out POST /v1/opt-outs/import (NDJSON
# body), warns, and exits non-zero for the warning.
python3 prepare_openapi.py ../../openapi/openapi.json "$out/openapi.json"
"$GENERATOR" generate --path "$out/openapi.json" --meta none --config generator-config.yaml \
  --output-path "$out/ehds_gateway_client" >"$out/generate.log" 2>&1 || true
if [ ! -f "$out/ehds_gateway_client/client.py" ]; then
  cat "$out/generate.log" >&2
  exit 1
fi
if [ "${1:-}" = "--check" ]; then
  diff -r "$out/ehds_gateway_client" ehds_gateway_client >&2 || {
    echo "ehds_gateway_client/ is stale: run clients/python/generate.sh" >&2
    exit 1
  }
else
  rm -rf ehds_gateway_client
  cp -r "$out/ehds_gateway_client" ehds_gateway_client
fi
