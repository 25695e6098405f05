//! JSON-LD 1.1 of the catalogue's node trees: one object per node, nested nodes embedded, with
//! an `@context` that declares the prefixes (so every key is a compact IRI that expands to
//! exactly the predicate of the Turtle form).

use serde_json::{json, Map, Value};

use super::rdf::{Literal, Node, Object, Tag, PREFIXES};

/// The `@context` of every catalogue document.
pub fn context() -> Value {
    Value::Object(
        PREFIXES
            .iter()
            .map(|(prefix, ns)| ((*prefix).to_owned(), json!(ns)))
            .collect(),
    )
}

/// `root` as a JSON-LD document with its context.
pub fn document(root: &Node) -> Value {
    let mut object = Map::new();
    object.insert("@context".into(), context());
    if let Value::Object(body) = node(root) {
        object.extend(body);
    }
    Value::Object(object)
}

/// One node, without context.
pub fn node(n: &Node) -> Value {
    let mut object = Map::new();
    if let Some(id) = &n.id {
        object.insert("@id".into(), json!(id));
    }
    if !n.types.is_empty() {
        object.insert("@type".into(), json!(n.types));
    }
    for (predicate, objects) in n.props.iter().filter(|(_, o)| !o.is_empty()) {
        let values: Vec<Value> = objects.iter().map(value).collect();
        object.insert((*predicate).to_owned(), Value::Array(values));
    }
    Value::Object(object)
}

fn value(object: &Object) -> Value {
    match object {
        Object::Iri(iri) => json!({ "@id": iri }),
        Object::Node(n) => node(n),
        Object::Literal(Literal { lexical, tag }) => match tag {
            Tag::Plain => json!({ "@value": lexical }),
            Tag::Lang(lang) => json!({ "@value": lexical, "@language": lang }),
            Tag::Datatype(datatype) => json!({ "@value": lexical, "@type": datatype }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_literals_and_iris_map_to_their_json_ld_forms() {
        let root = Node::named("https://hdab.eu/d/1", &["dcat:Dataset"])
            .with(
                "dct:title",
                vec![Object::lang("Ü \"x\"", "de"), Object::plain("plain")],
            )
            .one(
                "healthdcatap:numberOfRecords",
                Object::typed("1200", "xsd:nonNegativeInteger"),
            )
            .one("dcat:theme", Object::iri("http://e.eu/HEAL"))
            .one(
                "dcat:contactPoint",
                Object::node(Node::blank(&["vcard:Kind"]).one("vcard:fn", Object::plain("Desk"))),
            );
        let doc = document(&root);
        assert_eq!(doc["@context"]["dct"], "http://purl.org/dc/terms/");
        assert_eq!(doc["@context"].as_object().unwrap().len(), PREFIXES.len());
        let mut body = doc.as_object().unwrap().clone();
        body.remove("@context");
        assert_eq!(
            Value::Object(body),
            json!({
                "@id": "https://hdab.eu/d/1",
                "@type": ["dcat:Dataset"],
                "dct:title": [
                    { "@value": "Ü \"x\"", "@language": "de" },
                    { "@value": "plain" }
                ],
                "healthdcatap:numberOfRecords": [
                    { "@value": "1200", "@type": "xsd:nonNegativeInteger" }
                ],
                "dcat:theme": [{ "@id": "http://e.eu/HEAL" }],
                "dcat:contactPoint": [{
                    "@type": ["vcard:Kind"],
                    "vcard:fn": [{ "@value": "Desk" }]
                }]
            })
        );
        // keys keep the order they were written in, like the Turtle form
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys[..3], ["@context", "@id", "@type"]);
    }
}
