"""Rewrites openapi/openapi.json into an equivalent document that openapi-python-client 0.29
can generate from (see README.md, "Generated code"); the gateway's document stays as it is.

Two shapes of the gateway's document defeat the generator:
- an object variant of a `oneOf` with an inline object property (serde's externally tagged
  enum, e.g. StudyTask's `{"multiclass": {...}}`, or BackboneRequest's `mlp` with its `norm`):
  the generator names the inner model twice and drops the whole union. The inner object
  moves to its own component.
- a `oneOf` variant that is `allOf` of a `$ref` and an inline object (serde's internally
  tagged enum, e.g. StrategyConfig's `{"name": "fedavg", ...}`): the generator cannot read the
  union. The variant becomes one component with both parts' properties.
"""

from __future__ import annotations

import copy
import json
import sys


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.replace("-", "_").split("_"))


def main(source: str, target: str) -> None:
    doc = json.load(open(source))
    schemas = doc["components"]["schemas"]
    added: dict[str, dict] = {}
    for name, schema in list(schemas.items()):
        for i, variant in enumerate(schema.get("oneOf", [])):
            props = variant.get("properties", {})
            if variant.get("type") != "object":
                continue
            if len(props) == 1:
                tag = next(iter(props))
                prefix = f"{name}{camel(tag)}"
                names = {tag: prefix}
            else:
                tags = [p["enum"][0] for p in props.values() if len(p.get("enum", [])) == 1]
                prefix = f"{name}{camel(tags[0] if tags else str(i))}"
                names = {prop: f"{prefix}{camel(prop)}" for prop in props}
            for prop, inner in props.items():
                if inner.get("type") == "object":
                    added[names[prop]] = inner
                    props[prop] = {"$ref": f"#/components/schemas/{names[prop]}"}
        for i, variant in enumerate(schema.get("oneOf", [])):
            parts = variant.get("allOf")
            if not parts or len(parts) != 2 or "$ref" not in parts[0]:
                continue
            base = copy.deepcopy(schemas[parts[0]["$ref"].rsplit("/", 1)[1]])
            extra = parts[1]
            merged = {
                "type": "object",
                "properties": {**base.get("properties", {}), **extra.get("properties", {})},
                "required": sorted(set(base.get("required", [])) | set(extra.get("required", []))),
            }
            if "description" in base:
                merged["description"] = base["description"]
            tag = next(iter(extra.get("properties", {}).values()), {}).get("enum", [str(i)])[0]
            new = f"{name}{camel(tag)}"
            added[new] = merged
            schema["oneOf"][i] = {"$ref": f"#/components/schemas/{new}"}
    clash = set(added) & set(schemas)
    if clash:
        sys.exit(f"component names already taken: {sorted(clash)}")
    schemas.update(added)
    with open(target, "w") as out:
        json.dump(doc, out, indent=2, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
