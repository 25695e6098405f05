#!/usr/bin/env python3
"""Validates HealthDCAT-AP catalogues (Turtle `.ttl`, JSON-LD `.jsonld`) against the SHACL
shapes committed in crates/core/src/domain/catalogue/shapes with pyshacl.

    validate.py PATH...                       every file must conform
    validate.py --expect-invalid PATH...      every file must NOT conform
        [--expect-path dct:title ...]         ... and each listed path must be reported

A Turtle file and a JSON-LD file of the same name must also hold the same graph.

A directory stands for the `.ttl` and `.jsonld` files in it. Exits 1 when a file does not
meet the expectation, 2 when there is nothing to validate.
"""

import argparse
import pathlib
import sys

from pyshacl import validate
from rdflib import Graph, Namespace, URIRef
from rdflib.compare import isomorphic
from rdflib.namespace import RDF

SHAPES = pathlib.Path(__file__).resolve().parents[2] / "crates/core/src/domain/catalogue/shapes"
SH = Namespace("http://www.w3.org/ns/shacl#")
PREFIXES = {
    "dcat": "http://www.w3.org/ns/dcat#",
    "dcatap": "http://data.europa.eu/r5r/",
    "dct": "http://purl.org/dc/terms/",
    "dpv": "https://w3id.org/dpv#",
    "dqv": "http://www.w3.org/ns/dqv#",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "healthdcatap": "http://healthdataportal.eu/ns/health#",
    "vcard": "http://www.w3.org/2006/vcard/ns#",
}
# Fewer node shapes than this means a shapes file went missing: the check must not pass on
# an empty shapes graph.
MIN_NODE_SHAPES = 20


def load_shapes() -> Graph:
    shapes = Graph()
    files = sorted(SHAPES.glob("*.ttl"))
    for f in files:
        shapes.parse(f, format="turtle")
    count = len(set(shapes.subjects(RDF.type, SH.NodeShape)))
    if count < MIN_NODE_SHAPES:
        sys.exit(f"only {count} node shapes in {SHAPES}: a shapes file is missing")
    print(f"shapes: {', '.join(f.name for f in files)} ({count} node shapes)")
    return shapes


def compact(term) -> str:
    if isinstance(term, URIRef):
        for prefix, ns in PREFIXES.items():
            if str(term).startswith(ns):
                return f"{prefix}:{str(term)[len(ns):]}"
        return str(term)
    return "(complex path)"


def files(paths):
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            yield from sorted(q for q in p.iterdir() if q.suffix in (".ttl", ".jsonld"))
        else:
            yield p


def parse(path: pathlib.Path) -> Graph:
    data = Graph()
    data.parse(path, format="turtle" if path.suffix == ".ttl" else "json-ld")
    return data


def check(path: pathlib.Path, shapes: Graph):
    data = parse(path)
    if len(data) == 0:
        sys.exit(f"{path}: no triples")
    conforms, report, _ = validate(
        data, shacl_graph=shapes, inference="none", allow_warnings=True
    )
    results = []
    for result in report.subjects(RDF.type, SH.ValidationResult):
        severity = report.value(result, SH.resultSeverity)
        if severity != SH.Violation:
            continue
        focus = report.value(result, SH.focusNode)
        results.append(
            (
                compact(report.value(result, SH.resultPath)),
                str(report.value(result, SH.resultMessage) or ""),
                str(focus),
            )
        )
    return conforms, len(data), sorted(results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--expect-invalid", action="store_true")
    parser.add_argument("--expect-path", action="append", default=[])
    args = parser.parse_args()
    shapes = load_shapes()
    checked = 0
    failed = []
    for path in files(args.paths):
        checked += 1
        conforms, triples, results = check(path, shapes)
        paths = {p for p, _, _ in results}
        print(f"{path}: {triples} triples, {'conforms' if conforms else 'does not conform'}")
        for p, message, focus in results:
            print(f"    {p}: {message} ({focus})")
        if args.expect_invalid:
            missing = [p for p in args.expect_path if p not in paths]
            if conforms:
                failed.append(f"{path}: conforms, but was expected not to")
            elif missing:
                failed.append(f"{path}: expected violations at {', '.join(missing)} not reported")
        elif not conforms:
            failed.append(f"{path}: does not conform")
        twin = path.with_suffix(".jsonld")
        if path.suffix == ".ttl" and twin.exists() and not isomorphic(parse(path), parse(twin)):
            failed.append(f"{path}: {twin.name} holds a different graph")
    if checked == 0:
        print("nothing to validate", file=sys.stderr)
        return 2
    for f in failed:
        print(f"FAILED {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
