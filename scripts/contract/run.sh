#!/usr/bin/env bash
# The API contract is what the server does: schemathesis generates requests from the committed
# openapi/openapi.json (valid and invalid ones, every operation, then stateful sequences) and
# sends them to a live gateway, once with a token of each role, and checks every answer against
# the document: no server error, every status, content type, header and body documented,
# invalid requests refused, authentication not ignored.
#
#   scripts/contract/run.sh [sqlite|postgres] [examples per operation]
#
# SCHEMATHESIS names the schemathesis program (default: on the PATH); EHDS_GATEWAY_BIN the
# gateway (default target/debug/ehds-gateway); TEST_POSTGRES_URL the administrative PostgreSQL
# URL for the postgres backend. Fails when any check fails or fewer than MIN_REQUESTS (5000)
# requests were sent in all.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BACKEND="${1:-sqlite}"
EXAMPLES="${2:-5}"
GATEWAY="${EHDS_GATEWAY_BIN:-$ROOT/target/debug/ehds-gateway}"
SCHEMATHESIS="${SCHEMATHESIS:-schemathesis}"
MIN_REQUESTS="${MIN_REQUESTS:-5000}"
SEED="${CONTRACT_SEED:-20261129}"
PG_ADMIN_URL="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

WORK="$(mktemp -d)"
DB_NAME=""
cleanup() {
  [ -n "${GATEWAY_PID:-}" ] && kill "$GATEWAY_PID" 2>/dev/null && wait "$GATEWAY_PID" 2>/dev/null
  [ -n "$DB_NAME" ] && psql "$PG_ADMIN_URL" -qc "drop database if exists $DB_NAME" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

case "$BACKEND" in
  sqlite) DATABASE_URL="sqlite://$WORK/gateway.db?mode=rwc" ;;
  postgres)
    DB_NAME="ehds_contract_$$"
    psql "$PG_ADMIN_URL" -qc "create database $DB_NAME" >/dev/null
    DATABASE_URL="${PG_ADMIN_URL%/*}/$DB_NAME"
    ;;
  *) echo "backend: sqlite or postgres" >&2; exit 2 ;;
esac

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
BASE="http://127.0.0.1:$PORT"
export EHDS_DATA_DIR="$WORK/data" EHDS_DATABASE_URL="$DATABASE_URL" EHDS_LISTEN="127.0.0.1:$PORT"
# The run sends thousands of requests without valid credentials from one address on purpose
# (to check that each is refused with 401): the per-source limit would answer them 429.
export EHDS_HTTP__UNAUTHENTICATED_PER_SOURCE_PER_MINUTE=1000000
export EHDS_HTTP__UNAUTHENTICATED_AUDITED_PER_MINUTE=1000000
# One token per role sends the whole run as fast as the gateway answers: the per-caller quota
# would answer much of it 429 (documented, but it would hide what the operations themselves do).
export EHDS_HTTP__PER_PRINCIPAL_PER_SECOND=0
# Long polls answer within a second, not the production 20 s.
export EHDS_FEDERATION__LONG_POLL_MAX_SECONDS=1
"$GATEWAY" serve --dev >"$WORK/gateway.log" 2>&1 &
GATEWAY_PID=$!
ready() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$BASE/readyz" 2>/dev/null; }
for _ in $(seq 1 120); do
  ready && break
  sleep 0.5
done
ready || { cat "$WORK/gateway.log" >&2; exit 1; }

# schemathesis keeps its cache in the working directory
cd "$WORK"
total=0
status=0
# sub role organisation: one token per role of the API
for caller in "olaf hdab_officer hdab-de" "alice researcher uni-a" "audrey auditor hdab-de" \
  "cleveland data_holder cleveland" "rita optout_registrar hdab-de"; do
  read -r sub role org <<<"$caller"
  token="$("$GATEWAY" token --sub "$sub" --role "$role" --org "$org")"
  echo "== $BACKEND, as $role"
  out="$WORK/$role.txt"
  if ! SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$ROOT/scripts/contract" \
    "$SCHEMATHESIS" --config-file "$ROOT/scripts/contract/schemathesis.toml" run \
    "$ROOT/openapi/openapi.json" --url "$BASE" \
    -H "Authorization: Bearer $token" \
    --max-examples "$EXAMPLES" --seed "$SEED" --workers 2 --request-timeout 30 \
    --phases examples,coverage,fuzzing,stateful --no-color >"$out" 2>&1; then
    status=1
    cat "$out"
  else
    tail -n 4 "$out"
  fi
  sent="$(sed -n 's/^ *\([0-9][0-9]*\) generated.*/\1/p' "$out" | tail -n 1)"
  total=$((total + ${sent:-0}))
done
echo "== $BACKEND: $total requests"
if [ "$status" != 0 ]; then
  echo "the server does not do what openapi/openapi.json says (above); gateway log:" >&2
  grep -E '"level":"(ERROR|WARN)"' "$WORK/gateway.log" | tail -n 20 >&2 || true
  exit 1
fi
if [ "$total" -lt "$MIN_REQUESTS" ]; then
  echo "only $total requests were sent (at least $MIN_REQUESTS expected)" >&2
  exit 1
fi
