//! Turtle (RDF 1.1, W3C Recommendation 2014) of the catalogue's node trees.
//!
//! Hand-written rather than taken from an RDF crate (sophia, oxttl): the catalogue writes one
//! fixed tree shape whose predicates and datatypes are constants, so what is left to get right
//! is the escaping of strings and IRIs, which the tests below pin character by character; a
//! full RDF stack would add a parser, a graph store and their dependencies for that.

use std::fmt::Write as _;

use super::rdf::{Literal, Node, Object, Tag, PREFIXES};

/// A Turtle document: the prefixes, then each node with an IRI as a statement of its own
/// (nested nodes with an IRI are written after their parent and referenced by IRI there).
pub fn document(roots: &[Node]) -> String {
    let mut out = String::new();
    for (prefix, ns) in PREFIXES {
        let _ = writeln!(out, "@prefix {prefix}: <{ns}> .");
    }
    out.push_str(&statements(roots));
    out
}

/// The statements of `roots` and of the named nodes they contain, without the prefixes.
pub fn statements(roots: &[Node]) -> String {
    let mut out = String::new();
    let mut queue: std::collections::VecDeque<&Node> = roots.iter().collect();
    while let Some(node) = queue.pop_front() {
        out.push('\n');
        match &node.id {
            Some(iri) => write_iri(&mut out, iri),
            None => out.push_str("[]"),
        }
        write_properties(&mut out, node, 1, &mut queue);
        out.push_str(" .\n");
    }
    out
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("    ");
    }
}

/// `node`'s `a` and predicate-object list, one predicate a line at `depth`.
fn write_properties<'a>(
    out: &mut String,
    node: &'a Node,
    depth: usize,
    queue: &mut std::collections::VecDeque<&'a Node>,
) {
    let mut first = true;
    let mut separator = |out: &mut String| {
        out.push_str(if first { "\n" } else { " ;\n" });
        first = false;
        indent(out, depth);
    };
    if !node.types.is_empty() {
        separator(out);
        out.push_str("a ");
        out.push_str(&node.types.join(", "));
    }
    for (predicate, objects) in node.props.iter().filter(|(_, o)| !o.is_empty()) {
        separator(out);
        out.push_str(predicate);
        out.push(' ');
        for (i, object) in objects.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_object(out, object, depth, queue);
        }
    }
}

fn write_object<'a>(
    out: &mut String,
    object: &'a Object,
    depth: usize,
    queue: &mut std::collections::VecDeque<&'a Node>,
) {
    match object {
        Object::Iri(iri) => write_iri(out, iri),
        Object::Literal(literal) => write_literal(out, literal),
        Object::Node(node) => match &node.id {
            Some(iri) => {
                write_iri(out, iri);
                queue.push_back(node);
            }
            None => {
                out.push('[');
                write_properties(out, node, depth + 1, queue);
                out.push('\n');
                indent(out, depth);
                out.push(']');
            }
        },
    }
}

/// An IRIREF. The dataset's IRIs were checked when it was parsed; a character IRIREF cannot
/// hold is still percent-encoded here (it is ASCII), which keeps the IRI an IRI.
pub fn write_iri(out: &mut String, iri: &str) {
    out.push('<');
    for c in iri.chars() {
        if (c as u32) <= 0x20 || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '^' | '`' | '\\') {
            let _ = write!(out, "%{:02X}", c as u32);
        } else {
            out.push(c);
        }
    }
    out.push('>');
}

/// A STRING_LITERAL_QUOTE with its language tag or datatype.
pub fn write_literal(out: &mut String, literal: &Literal) {
    out.push('"');
    for c in literal.lexical.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // other control characters are legal raw, but invisible: escaped as UCHAR
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    match &literal.tag {
        Tag::Plain => {}
        Tag::Lang(lang) => {
            out.push('@');
            out.push_str(lang);
        }
        Tag::Datatype(datatype) => {
            out.push_str("^^");
            out.push_str(datatype);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(object: Object) -> String {
        let Object::Literal(l) = object else {
            unreachable!()
        };
        let mut out = String::new();
        write_literal(&mut out, &l);
        out
    }

    #[test]
    fn strings_escape_quotes_backslashes_and_control_characters() {
        assert_eq!(
            literal(Object::plain("say \"hi\" \\ bye")),
            r#""say \"hi\" \\ bye""#
        );
        assert_eq!(
            literal(Object::plain("a\nb\rc\td\u{8}e\u{c}f")),
            r#""a\nb\rc\td\be\ff""#
        );
        assert_eq!(
            literal(Object::plain("bell\u{7}del\u{7f}")),
            r#""bell\u0007del\u007F""#
        );
        // non-ASCII text is written as it is (Turtle is UTF-8)
        assert_eq!(
            literal(Object::lang("Gesundheitsdaten für Ärzte", "de")),
            "\"Gesundheitsdaten für Ärzte\"@de"
        );
        assert_eq!(
            literal(Object::typed("2024-01-31", "xsd:date")),
            "\"2024-01-31\"^^xsd:date"
        );
        // a triple-quote attempt stays inside one literal
        assert_eq!(literal(Object::plain("\"\"\" .")), r#""\"\"\" .""#);
    }

    #[test]
    fn iris_percent_encode_what_an_iriref_cannot_hold() {
        let mut out = String::new();
        write_iri(&mut out, "https://x.eu/a b<c>\"d{e}|f^g`h\\i");
        assert_eq!(
            out,
            "<https://x.eu/a%20b%3Cc%3E%22d%7Be%7D%7Cf%5Eg%60h%5Ci>"
        );
        let mut out = String::new();
        write_iri(&mut out, "https://x.eu/ärzte?q=1#f");
        assert_eq!(out, "<https://x.eu/ärzte?q=1#f>");
    }

    #[test]
    fn nested_blank_nodes_are_inline_named_nodes_follow() {
        let root = Node::named("https://hdab.eu/c", &["dcat:Catalog"])
            .with(
                "dct:title",
                vec![Object::lang("A", "en"), Object::lang("B", "de")],
            )
            .one(
                "dcat:contactPoint",
                Object::node(
                    Node::blank(&["vcard:Kind"])
                        .one("vcard:hasEmail", Object::iri("mailto:a@b.eu")),
                ),
            )
            .one(
                "dcat:dataset",
                Object::node(Node::named("https://hdab.eu/d/1", &["dcat:Dataset"])),
            )
            .with("dct:description", vec![]);
        assert_eq!(
            statements(&[root]),
            "
<https://hdab.eu/c>
    a dcat:Catalog ;
    dct:title \"A\"@en, \"B\"@de ;
    dcat:contactPoint [
        a vcard:Kind ;
        vcard:hasEmail <mailto:a@b.eu>
    ] ;
    dcat:dataset <https://hdab.eu/d/1> .

<https://hdab.eu/d/1>
    a dcat:Dataset .
"
        );
    }

    #[test]
    fn the_document_declares_every_prefix_once() {
        let doc = document(&[]);
        assert_eq!(doc.lines().count(), PREFIXES.len());
        assert!(doc.contains("@prefix healthdcatap: <http://healthdataportal.eu/ns/health#> .\n"));
        assert!(doc.contains("@prefix dcatap: <http://data.europa.eu/r5r/> .\n"));
    }
}
