//! The small RDF model the catalogue is rendered from: a tree of nodes (the dataset, its
//! blank-node contact point, period, distributions...) whose predicates and datatypes are
//! prefixed names of [`PREFIXES`]. The Turtle and JSON-LD writers both walk the same tree, so
//! the HealthDCAT-AP mapping is written once (in `graph.rs`).

/// The vocabularies of HealthDCAT-AP the catalogue uses: `(prefix, namespace)`.
pub const PREFIXES: [(&str, &str); 17] = [
    ("adms", "http://www.w3.org/ns/adms#"),
    ("dcat", "http://www.w3.org/ns/dcat#"),
    ("dcatap", "http://data.europa.eu/r5r/"),
    ("dct", "http://purl.org/dc/terms/"),
    ("dpv", "https://w3id.org/dpv#"),
    ("dqv", "http://www.w3.org/ns/dqv#"),
    // The gateway's own terms (feature availability at a holder's node): a URN, so that the
    // catalogue claims no web domain for them.
    ("ehdsgw", "urn:ehds-gateway:catalogue:"),
    ("foaf", "http://xmlns.com/foaf/0.1/"),
    ("healthdcatap", "http://healthdataportal.eu/ns/health#"),
    ("hydra", "http://www.w3.org/ns/hydra/core#"),
    ("oa", "http://www.w3.org/ns/oa#"),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("skos", "http://www.w3.org/2004/02/skos/core#"),
    ("vcard", "http://www.w3.org/2006/vcard/ns#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
];

/// The full IRI of a prefixed name of [`PREFIXES`].
pub fn expand(prefixed: &str) -> String {
    let (prefix, local) = prefixed
        .split_once(':')
        .expect("a prefixed name has a colon");
    let ns = PREFIXES
        .iter()
        .find(|(p, _)| *p == prefix)
        .map(|(_, ns)| *ns)
        .unwrap_or_else(|| panic!("undeclared prefix `{prefix}`"));
    format!("{ns}{local}")
}

/// How a literal is tagged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// A plain string (`xsd:string`).
    Plain,
    /// A language-tagged string; the tag was checked when the dataset was parsed.
    Lang(String),
    /// A typed literal; the datatype is a prefixed name (`xsd:date`).
    Datatype(&'static str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    pub lexical: String,
    pub tag: Tag,
}

/// The object of a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    Iri(String),
    Literal(Literal),
    /// A node described in place: a blank node, or a resource with an IRI of its own.
    Node(Box<Node>),
}

impl Object {
    pub fn plain(text: impl Into<String>) -> Self {
        Self::Literal(Literal {
            lexical: text.into(),
            tag: Tag::Plain,
        })
    }

    pub fn lang(text: impl Into<String>, lang: impl Into<String>) -> Self {
        Self::Literal(Literal {
            lexical: text.into(),
            tag: Tag::Lang(lang.into()),
        })
    }

    pub fn typed(text: impl Into<String>, datatype: &'static str) -> Self {
        Self::Literal(Literal {
            lexical: text.into(),
            tag: Tag::Datatype(datatype),
        })
    }

    pub fn iri(iri: impl Into<String>) -> Self {
        Self::Iri(iri.into())
    }

    pub fn node(node: Node) -> Self {
        Self::Node(Box::new(node))
    }
}

/// A resource and what is said about it, in the order it was said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Node {
    /// `None`: a blank node.
    pub id: Option<String>,
    /// `rdf:type`s, as prefixed names.
    pub types: Vec<&'static str>,
    /// Predicates (prefixed names) with their objects; a predicate without objects is left
    /// out by the writers.
    pub props: Vec<(&'static str, Vec<Object>)>,
}

impl Node {
    pub fn blank(types: &[&'static str]) -> Self {
        Self {
            id: None,
            types: types.to_vec(),
            props: Vec::new(),
        }
    }

    pub fn named(id: impl Into<String>, types: &[&'static str]) -> Self {
        Self {
            id: Some(id.into()),
            types: types.to_vec(),
            props: Vec::new(),
        }
    }

    /// Adds `objects` under `predicate` (nothing when empty).
    pub fn with(mut self, predicate: &'static str, objects: Vec<Object>) -> Self {
        self.add(predicate, objects);
        self
    }

    pub fn add(&mut self, predicate: &'static str, objects: Vec<Object>) {
        if !objects.is_empty() {
            self.props.push((predicate, objects));
        }
    }

    /// Adds one object under `predicate`.
    pub fn one(self, predicate: &'static str, object: Object) -> Self {
        self.with(predicate, vec![object])
    }

    /// Adds an optional object under `predicate`.
    pub fn maybe(self, predicate: &'static str, object: Option<Object>) -> Self {
        self.with(predicate, object.into_iter().collect())
    }
}
