#!/usr/bin/env python3
"""Write the example imaging federation: scikit-learn's handwritten digits as FHIR R4B Bundles
of three data holders, each subject a Patient, a Media holding its 8x8 grayscale PNG and an
Observation with the digit (0-9) as a coded value.

Input: fl_engine/data/digits/digits.csv (`set,label,p0..p63`, intensities 0..16, written once
by scripts/convert-public-datasets.py from the copy bundled in scikit-learn). Nothing is
downloaded; only the Python standard library is used (the PNGs are written by hand: zlib and
CRC-32 come with Python).

Outputs, under examples/digits-federation/:

* imaging-a.json, imaging-b.json, imaging-c.json: one Bundle (type `collection`) each. The
  first SUBJECTS_PER_SITE * 3 rows of the CSV are dealt to the sites in turn (row i to site
  i mod 3), so every site sees every digit (IID sites). A row's `set` becomes the Patient's
  split tag: `train` and `val` rows are `train` (the node draws its own validation part from
  them), `test` rows `test`. imaging-a and imaging-b carry each PNG inline
  (`Media.content.data`); imaging-c keeps it in a `Binary` that `Media.content.url` names, the
  other way an export may hold images.

Run from the repository root:

    python3 scripts/digits-federation.py
"""
import base64
import csv
import hashlib
import json
import struct
import sys
import zlib
from pathlib import Path

SUBJECTS_PER_SITE = 150
SITES = ["imaging-a", "imaging-b", "imaging-c"]
BY_BINARY = {"imaging-c"}

SPLIT_SYSTEM = "urn:ehds-gateway:split"
DCM = "http://dicom.nema.org/resources/ontology/DCM"
MEDIA_TYPE = "http://terminology.hl7.org/CodeSystem/media-type"
OBSERVATION_SYSTEM = "urn:ehds-gateway:example:observation"
DIGIT_SYSTEM = "urn:ehds-gateway:example:digit"


def png_gray8(width, height, pixels):
    """An 8-bit grayscale PNG (no interlace, filter 0 on every row)."""

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(
        b"\x00" + bytes(pixels[y * width : (y + 1) * width]) for y in range(height)
    )
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def pseudonym(site, row):
    digest = hashlib.sha256(f"{site}:{row}".encode()).hexdigest()[:16]
    return f"psn-{site}-{digest}"


def entries(site, row, label, split, pixels):
    pid = pseudonym(site, row)
    # 0..16 as shipped, spread over 0..255 (16 -> 255): the node scales back to [0, 1]
    png = png_gray8(8, 8, [round(v * 255 / 16) for v in pixels])
    data = base64.b64encode(png).decode()
    patient = {
        "resourceType": "Patient",
        "id": pid,
        "meta": {"tag": [{"system": SPLIT_SYSTEM, "code": split}]},
    }
    media = {
        "resourceType": "Media",
        "id": f"{pid}-image",
        "status": "completed",
        "type": {"coding": [{"system": MEDIA_TYPE, "code": "image"}]},
        "modality": {"coding": [{"system": DCM, "code": "DOC", "display": "Document"}]},
        "subject": {"reference": f"Patient/{pid}"},
        "createdDateTime": "1998-01-01",
        "height": 8,
        "width": 8,
        "content": {"contentType": "image/png"},
    }
    out = [patient]
    if site in BY_BINARY:
        media["content"]["url"] = f"Binary/{pid}-image"
        out.append(media)
        out.append(
            {
                "resourceType": "Binary",
                "id": f"{pid}-image",
                "contentType": "image/png",
                "data": data,
            }
        )
    else:
        media["content"]["data"] = data
        out.append(media)
    out.append(
        {
            "resourceType": "Observation",
            "id": f"{pid}-digit",
            "status": "final",
            "code": {"coding": [{"system": OBSERVATION_SYSTEM, "code": "handwritten-digit"}]},
            "subject": {"reference": f"Patient/{pid}"},
            "valueCodeableConcept": {"coding": [{"system": DIGIT_SYSTEM, "code": str(label)}]},
        }
    )
    return out


def main():
    root = Path(__file__).resolve().parent.parent
    source = root / "fl_engine" / "data" / "digits" / "digits.csv"
    out = root / "examples" / "digits-federation"
    out.mkdir(parents=True, exist_ok=True)
    bundles = {s: [] for s in SITES}
    with source.open(newline="") as f:
        for i, rec in enumerate(csv.DictReader(f)):
            if i >= SUBJECTS_PER_SITE * len(SITES):
                break
            site = SITES[i % len(SITES)]
            split = "test" if rec["set"] == "test" else "train"
            pixels = [int(rec[f"p{k}"]) for k in range(64)]
            bundles[site].extend(entries(site, i, int(rec["label"]), split, pixels))
    for site, resources in bundles.items():
        # one entry per line: small diffs, readable with grep
        lines = [json.dumps({"resource": r}, separators=(",", ":")) for r in resources]
        text = (
            '{"resourceType":"Bundle","type":"collection","entry":[\n'
            + ",\n".join(lines)
            + "\n]}\n"
        )
        (out / f"{site}.json").write_text(text)
        print(site, len(resources), "resources", len(text), "bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
