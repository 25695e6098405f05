#!/usr/bin/env python3
"""Generate the clinosim test corpus: three hospitals' FHIR Bulk Data exports written by a
third-party hospital simulator, as it writes them.

Generator: the PyPI package `clinosim` (MIT), run through its own command line. Install it once
in a virtual environment of its own and point this script at it:

    python3 -m venv /tmp/clinosim && /tmp/clinosim/bin/pip install clinosim==0.6.5
    python3 scripts/generate-clinosim-corpus.py /tmp/clinosim tests/data/clinosim

For each hospital the script runs `clinosim simulate --format fhir-r4` (a US hospital's
catchment population over one quarter; one NDJSON file per resource type, `Patient/<id>`
references: a FHIR Bulk Data export) with the seed and population in HOSPITALS below, and
gzips the files of the resource types the node reads (Patient, Encounter, Observation,
Condition, MedicationRequest, MedicationStatement, Medication: what a Bulk Data `$export` with
`_type` would hand over; the simulator's other 20-odd types would make the corpus ten times
larger) unchanged into tests/data/clinosim/<hospital>/<Type>.ndjson.gz (gzip without a time
stamp). It writes SOURCE.md with the package version it ran.

Run once; the tests and CI read only the committed output and download nothing.
"""
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "clinosim"
VERSION = "0.6.5"
START, END = "2025-01-01", "2025-03-31"
HOSPITALS = [("h1", 31, 200), ("h2", 32, 200), ("h3", 33, 200)]
TYPES = ["Patient", "Encounter", "Observation", "Condition", "MedicationRequest",
         "MedicationStatement", "Medication"]


def main(venv: str, out: str) -> None:
    bin_dir = Path(venv) / "bin"
    version = subprocess.run(
        [str(bin_dir / "python"), "-c",
         f"import importlib.metadata as m; print(m.version('{PACKAGE}'))"],
        check=True, capture_output=True, text=True).stdout.strip()
    if version != VERSION:
        sys.exit(f"{PACKAGE} {version} is installed; this corpus is made with {VERSION}")
    out_dir = Path(out)
    rows, commands = [], []
    for name, seed, population in HOSPITALS:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = ["clinosim", "simulate", "-p", str(population), "-s", str(seed),
                   "--country", "US", "--start", START, "--end", END, "--format", "fhir-r4",
                   "-o", tmp]
            subprocess.run([str(bin_dir / cmd[0]), *cmd[1:]], check=True,
                           stdout=subprocess.DEVNULL)
            commands.append(" ".join(cmd[:-1] + [f"<tmp>  # {name}"]))
            site = out_dir / name
            if site.exists():
                shutil.rmtree(site)
            site.mkdir(parents=True)
            for t in TYPES:
                f = Path(tmp) / "fhir_r4" / f"{t}.ndjson"
                if not f.exists():
                    continue
                data = f.read_bytes()
                lines = sum(1 for l in data.splitlines() if l.strip())
                with open(site / (f.name + ".gz"), "wb") as raw:
                    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                        gz.write(data)
                rows.append(f"| `{name}/{f.name}.gz` | {lines} |")
    table = "\n".join(rows)
    cmds = "\n".join(f"    {c}" for c in commands)
    (out_dir / "SOURCE.md").write_text(f"""# clinosim synthetic hospital FHIR R4 exports

Three hospitals' FHIR R4 Bulk Data exports (one NDJSON file per resource type, gzipped)
written by a third-party hospital simulator: the PyPI package `{PACKAGE}` version {version}
("Clinically Realistic Hospital Data Simulator", physiology-driven synthetic EHR / FHIR R4),
run through its own command line for a US hospital's catchment population from {START} to
{END}:

{cmds}

Licence: the generator is MIT (copyright its authors); the records are synthetic, of no real
person. Only the resource types the node reads are kept (what a Bulk Data `$export` with
`_type` hands over); every file of those types is the generator's output, unchanged, only
gzipped: ICD-10-CM problem-list Conditions established before the stay, encounter diagnoses
resolved with an abatement, `deceasedBoolean` false beside the odd `deceasedDateTime`,
ambulatory, emergency and inpatient Encounters, LOINC vitals and labs, MedicationRequests in
RxNorm and some with a drug name only, no tags of this project.

| File | Resources |
|---|---|
{table}

Regenerate with `scripts/generate-clinosim-corpus.py` (see its header); the tests read only
these files.
""", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
