#!/usr/bin/env python3
"""Generate the carebundle test corpus: three hospitals' FHIR Bulk Data exports written by a
third-party synthetic FHIR generator, as it writes them.

Generator: the PyPI package `carebundle` (Apache-2.0), run through its own command line. Install
it once in a virtual environment of its own and point this script at it:

    python3 -m venv /tmp/carebundle && /tmp/carebundle/bin/pip install carebundle==0.5.0
    python3 scripts/generate-carebundle-corpus.py /tmp/carebundle tests/data/carebundle

For each hospital the script runs `carebundle generate --format ndjson` (one NDJSON file per
resource type, `Patient/<id>` references: a FHIR Bulk Data export) with the seed, cohort and
age range in HOSPITALS below, and gzips every file it wrote, unchanged, into
tests/data/carebundle/<hospital>/<Type>.ndjson.gz (gzip without a time stamp, so a rerun with
the same version writes the same bytes). It writes SOURCE.md with the package version it ran.

Run once; the tests and CI read only the committed output and download nothing.
"""
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "carebundle"
VERSION = "0.5.0"
REFERENCE_DATE = "2026-01-01"

# hospital, seed, patients, age range: three clinics of one region, each drawn from the
# generator's `mixed` cohort (healthy 50 %, hypertension 30 %, type 2 diabetes 15 %, CKD
# stage 3 5 %), of both sexes, with their own age mix
HOSPITALS = [
    ("h1", 101, 40, "30-85"),
    ("h2", 202, 40, "45-90"),
    ("h3", 303, 40, "25-75"),
]


def main(venv: str, out: str) -> None:
    bin_dir = Path(venv) / "bin"
    version = subprocess.run(
        [str(bin_dir / "python"), "-c",
         f"import importlib.metadata as m; print(m.version('{PACKAGE}'))"],
        check=True, capture_output=True, text=True).stdout.strip()
    if version != VERSION:
        sys.exit(f"{PACKAGE} {version} is installed; this corpus is made with {VERSION}")
    out_dir = Path(out)
    rows = []
    commands = []
    for name, seed, count, ages in HOSPITALS:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = ["carebundle", "generate", "--profile", "mixed", "--count", str(count),
                   "--seed", str(seed), "--sex", "mixed", "--age-range", ages,
                   "--reference-date", REFERENCE_DATE, "--format", "ndjson", "--out", tmp]
            subprocess.run([str(bin_dir / cmd[0]), *cmd[1:]], check=True)
            commands.append(" ".join(cmd[:-1] + [f"<tmp>  # {name}"]))
            site = out_dir / name
            if site.exists():
                shutil.rmtree(site)
            site.mkdir(parents=True)
            for f in sorted(Path(tmp).glob("*.ndjson")):
                data = f.read_bytes()
                lines = sum(1 for l in data.splitlines() if l.strip())
                with open(site / (f.name + ".gz"), "wb") as raw:
                    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                        gz.write(data)
                rows.append(f"| `{name}/{f.name}.gz` | {lines} |")
    table = "\n".join(rows)
    cmds = "\n".join(f"    {c}" for c in commands)
    (out_dir / "SOURCE.md").write_text(f"""# carebundle synthetic FHIR R4 exports

Three hospitals' FHIR R4 Bulk Data exports (one NDJSON file per resource type, gzipped)
written by a third-party generator of synthetic patients: the PyPI package `{PACKAGE}`
version {version} ("Clinically coherent synthetic FHIR(R) R4 test data for Python", US Core
6.1.0 profiles), run through its own command line with its `mixed` cohort (healthy,
hypertension, type 2 diabetes and CKD stage 3 patients drawn by prevalence), reference date
{REFERENCE_DATE}:

{cmds}

Licence: the generator is Apache-2.0 (copyright its authors); the records are synthetic, of no
real person, and every resource is marked so by the generator (`meta.security` HTEST and its
narrative). The files are the generator's output, unchanged, only gzipped: ICD-10-CM problem-list
Conditions with date-only onsets, LOINC vitals and labs with display-text units beside the UCUM
code (`beats/minute`), blood pressure as a panel with components, RxNorm MedicationRequests
authored on a date, no tags of this project.

| File | Resources |
|---|---|
{table}

Regenerate with `scripts/generate-carebundle-corpus.py` (see its header); the tests read only
these files.
""", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
