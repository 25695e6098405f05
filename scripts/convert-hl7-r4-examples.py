#!/usr/bin/env python3
"""Convert the official HL7 FHIR R4 example resources into the NDJSON test corpus.

Input: the `hl7.fhir.r4.examples` 4.0.1 package tarball, as `npm pack hl7.fhir.r4.examples@4.0.1`
fetches it once (the FHIR package published by HL7, licence CC0-1.0). Output: one NDJSON file per
resource type the node reads (every standalone example of that type, one per line, in file-name
order) and SOURCE.md, in tests/data/hl7-r4-examples/.

    python3 scripts/convert-hl7-r4-examples.py hl7.fhir.r4.examples-4.0.1.tgz tests/data/hl7-r4-examples

The tests read only the committed output; nothing is downloaded at run time or in CI.
"""
import hashlib
import json
import sys
import tarfile
from pathlib import Path

TYPES = ["Patient", "Encounter", "Observation", "Condition", "MedicationRequest",
         "MedicationStatement", "Medication"]


def main(tgz: str, out: str) -> None:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha512(Path(tgz).read_bytes()).hexdigest()
    with tarfile.open(tgz) as tar:
        package = json.load(tar.extractfile("package/package.json"))
        members = sorted(m.name for m in tar.getmembers() if m.isfile())
        counts = {}
        for t in TYPES:
            lines = []
            for name in members:
                base = name.rsplit("/", 1)[-1]
                if not (base.startswith(t + "-") and base.endswith(".json")):
                    continue
                resource = json.load(tar.extractfile(name))
                if resource.get("resourceType") != t:
                    continue
                # compact, keys in their original order: the content is HL7's, unchanged
                lines.append(json.dumps(resource, ensure_ascii=False, separators=(",", ":")))
            (out_dir / f"{t}.ndjson").write_text("\n".join(lines) + "\n", encoding="utf-8")
            counts[t] = len(lines)
    rows = "\n".join(f"| `{t}.ndjson` | {counts[t]} |" for t in TYPES)
    (out_dir / "SOURCE.md").write_text(f"""# HL7 FHIR R4 example resources

Every standalone example resource of the types the node reads, from the official FHIR R4
examples package published by HL7: `{package['name']}` version {package['version']}
("{package['title']}", FHIR {', '.join(package['fhirVersions'])}, {package['url']}).

Licence: {package['license']} (HL7 publishes the FHIR specification and its examples under
Creative Commons "No Rights Reserved", CC0 1.0). Copyright HL7 International; the resources
are unchanged, only re-serialised one per line.

Package tarball SHA-512: `{digest}`

| File | Resources |
|---|---|
{rows}

Regenerate with `scripts/convert-hl7-r4-examples.py` (see its header).
""", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
