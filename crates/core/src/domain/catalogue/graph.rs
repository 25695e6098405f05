//! The HealthDCAT-AP mapping, written once: a catalogue entry, and the HDAB's `dcat:Catalog`
//! page of entries, as node trees (`rdf.rs`) that `turtle.rs` and `jsonld.rs` serialise.

use super::{
    rdf::{expand, Node, Object},
    AccessRights, CatalogueEntry, ContactPoint, Email, Iri, LangText, EHDS_ELI,
};
use crate::domain::{DataCategory, DatasetId, MemberState, Purpose};

/// The HDAB as the catalogue names it (`healthdcatap:hdab`, the catalogue's publisher).
#[derive(Debug, Clone, PartialEq)]
pub struct Hdab {
    pub name: String,
    pub email: Option<Email>,
    pub url: Option<Iri>,
    pub member_state: Option<MemberState>,
}

/// Where the catalogue lives: the gateway's public base URL (no trailing slash) and its HDAB.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    pub base: &'a str,
    pub hdab: &'a Hdab,
}

/// One page of the catalogue (`hydra:PartialCollectionView`): 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageView {
    pub page: u64,
    pub per_page: u64,
    pub total: u64,
}

impl PageView {
    pub fn last(&self) -> u64 {
        self.total.div_ceil(self.per_page).max(1)
    }
}

impl Site<'_> {
    pub fn catalogue_iri(&self) -> String {
        format!("{}/v1/catalogue", self.base)
    }

    pub fn dataset_iri(&self, id: DatasetId) -> String {
        format!("{}/v1/catalogue/datasets/{id}", self.base)
    }

    fn page_iri(&self, view: &PageView, page: u64) -> String {
        format!(
            "{}?page={page}&per_page={}",
            self.catalogue_iri(),
            view.per_page
        )
    }

    /// The HDAB as a `foaf:Agent` with its contact point.
    fn hdab_agent(&self) -> Node {
        let hdab = self.hdab;
        Node::blank(&["foaf:Agent"])
            .one("foaf:name", Object::plain(&hdab.name))
            .one(
                "dcat:contactPoint",
                Object::node(
                    Node::blank(&["vcard:Kind"])
                        .one("vcard:fn", Object::plain(&hdab.name))
                        .maybe(
                            "vcard:hasEmail",
                            hdab.email.as_ref().map(|m| Object::iri(m.mailto())),
                        )
                        .maybe(
                            "vcard:hasURL",
                            Some(Object::iri(
                                hdab.url
                                    .as_ref()
                                    .map(|u| u.as_str().to_owned())
                                    .unwrap_or_else(|| self.base.to_owned()),
                            )),
                        ),
                ),
            )
    }

    /// One entry as a `dcat:Dataset`.
    pub fn dataset(&self, entry: &CatalogueEntry) -> Node {
        let d = &entry.dataset;
        let iri = self.dataset_iri(entry.id);
        let publisher = Node::blank(&["foaf:Agent"])
            .one("foaf:name", Object::plain(&d.publisher.name))
            .one(
                "dct:identifier",
                Object::plain(d.publisher.organisation.as_str()),
            )
            .one("dcat:contactPoint", Object::node(contact(&d.contact_point)));
        let mut node = Node::named(&iri, &["dcat:Dataset"])
            .one("dct:identifier", Object::plain(&d.identifier))
            .with("dct:title", texts(&d.title))
            .with("dct:description", texts(&d.description))
            .with("dcat:keyword", texts(&d.keywords))
            .with(
                "dcat:theme",
                d.themes.iter().map(|t| Object::iri(t.iri())).collect(),
            )
            .one("dct:type", Object::iri(d.dataset_type.iri()))
            .one("dct:accessRights", Object::iri(d.access_rights.iri()))
            .with(
                "dcatap:applicableLegislation",
                d.applicable_legislation
                    .iter()
                    .map(|l| Object::iri(l.as_str()))
                    .collect(),
            )
            .one("dct:publisher", Object::node(publisher))
            .one("dcat:contactPoint", Object::node(contact(&d.contact_point)))
            .one("healthdcatap:hdab", Object::node(self.hdab_agent()))
            .with(
                "healthdcatap:healthCategory",
                d.health_categories
                    .iter()
                    .map(|c| Object::iri(category_iri(*c)))
                    .collect(),
            )
            .one(
                "dct:provenance",
                Object::node(
                    Node::blank(&["dct:ProvenanceStatement"])
                        .with("rdfs:label", texts(&d.provenance)),
                ),
            )
            .maybe(
                "dct:temporal",
                d.temporal.map(|p| {
                    Object::node(
                        Node::blank(&["dct:PeriodOfTime"])
                            .one(
                                "dcat:startDate",
                                Object::typed(p.start.to_string(), "xsd:date"),
                            )
                            .maybe(
                                "dcat:endDate",
                                p.end.map(|e| Object::typed(e.to_string(), "xsd:date")),
                            ),
                    )
                }),
            )
            .with(
                "dct:spatial",
                d.spatial
                    .iter()
                    .map(|m| Object::iri(country_iri(m)))
                    .collect(),
            );
        for (predicate, count) in [
            (
                "healthdcatap:numberOfRecords",
                d.number_of_records.map(|c| c.get()),
            ),
            (
                "healthdcatap:numberOfUniqueIndividuals",
                d.number_of_unique_individuals.map(|c| c.get()),
            ),
            (
                "healthdcatap:minTypicalAge",
                d.min_typical_age.map(u64::from),
            ),
            (
                "healthdcatap:maxTypicalAge",
                d.max_typical_age.map(u64::from),
            ),
        ] {
            node.add(
                predicate,
                count
                    .map(|n| Object::typed(n.to_string(), "xsd:nonNegativeInteger"))
                    .into_iter()
                    .collect(),
            );
        }
        node.add(
            "healthdcatap:populationCoverage",
            texts(&d.population_coverage),
        );
        node.add(
            "dpv:hasPurpose",
            d.purposes
                .iter()
                .map(|p| Object::iri(purpose_iri(*p)))
                .collect(),
        );
        node.add(
            "dpv:hasLegalBasis",
            d.legal_basis.iter().map(|b| Object::iri(b.iri())).collect(),
        );
        if let Some(label) = &d.quality_label {
            node.add(
                "dqv:hasQualityAnnotation",
                label
                    .statements()
                    .iter()
                    .map(|s| {
                        Object::node(
                            Node::blank(&["dqv:QualityAnnotation"])
                                .one("oa:motivatedBy", Object::iri(expand("dqv:qualityAssessment")))
                                .one("oa:hasTarget", Object::iri(&iri))
                                .one(
                                    "dct:conformsTo",
                                    Object::iri(format!(
                                        "http://data.europa.eu/eli/reg/2025/327/art_78/par_3/pnt_{}/oj",
                                        s.element.article_point()
                                    )),
                                )
                                .one(
                                    "oa:hasBody",
                                    Object::node(
                                        Node::blank(&["oa:TextualBody"])
                                            .one("rdf:value", Object::plain(&s.statement)),
                                    ),
                                )
                                .maybe(
                                    "rdfs:seeAlso",
                                    s.evidence.as_ref().map(|e| Object::iri(e.as_str())),
                                ),
                        )
                    })
                    .collect(),
            );
        }
        node.add(
            "dcat:distribution",
            d.distributions
                .iter()
                .map(|dist| {
                    Object::node(
                        Node::blank(&["dcat:Distribution"])
                            .one("dcat:accessURL", Object::iri(dist.access_url.as_str()))
                            .with("dct:title", texts(&dist.title))
                            .one("dcatap:applicableLegislation", Object::iri(EHDS_ELI))
                            .maybe(
                                "dcat:mediaType",
                                dist.media_type.as_ref().map(|m| Object::iri(m.iri())),
                            )
                            .maybe(
                                "dct:format",
                                dist.format.as_ref().map(|f| Object::iri(f.iri())),
                            ),
                    )
                })
                .collect(),
        );
        node.add(
            "ehdsgw:availableFeature",
            d.available_features
                .iter()
                .map(|f| Object::plain(f.as_str()))
                .collect(),
        );
        node.add(
            "dcat:version",
            d.version.iter().map(Object::plain).collect(),
        );
        node.add(
            "owl:versionInfo",
            vec![Object::plain(entry.revision.to_string())],
        );
        node.add("dct:issued", vec![date_time(entry.issued)]);
        node.add("dct:modified", vec![date_time(entry.modified)]);
        if d.access_rights == AccessRights::NonPublic {
            // how to get access: an application to the HDAB for a data permit
            node.add(
                "dcat:landingPage",
                vec![Object::iri(format!("{}/v1/applications", self.base))],
            );
        }
        node
    }

    /// A page of the HDAB's catalogue: the `dcat:Catalog` with the page's datasets and the
    /// `hydra:PartialCollectionView` that harvesters follow to the next page.
    pub fn catalogue(&self, entries: &[CatalogueEntry], view: PageView) -> Node {
        let hdab = self.hdab;
        let mut paging = Node::named(
            self.page_iri(&view, view.page),
            &["hydra:PartialCollectionView"],
        )
        .one("hydra:first", Object::iri(self.page_iri(&view, 1)))
        .one("hydra:last", Object::iri(self.page_iri(&view, view.last())))
        .one(
            "hydra:totalItems",
            Object::typed(view.total.to_string(), "xsd:nonNegativeInteger"),
        );
        if view.page > 1 {
            let previous = (view.page - 1).min(view.last());
            paging.add(
                "hydra:previous",
                vec![Object::iri(self.page_iri(&view, previous))],
            );
        }
        if view.page < view.last() {
            paging.add(
                "hydra:next",
                vec![Object::iri(self.page_iri(&view, view.page + 1))],
            );
        }
        Node::named(self.catalogue_iri(), &["dcat:Catalog"])
            .one(
                "dct:title",
                Object::lang(format!("Dataset catalogue of {}", hdab.name), "en"),
            )
            .one(
                "dct:description",
                Object::lang(
                    format!(
                        "The datasets available for secondary use through {} under Regulation (EU) 2025/327 (Art. 77), in HealthDCAT-AP.",
                        hdab.name
                    ),
                    "en",
                ),
            )
            .one("dct:publisher", Object::node(self.hdab_agent()))
            .one("dcatap:applicableLegislation", Object::iri(EHDS_ELI))
            .one("foaf:homepage", Object::iri(self.base))
            .maybe(
                "dct:spatial",
                hdab.member_state.as_ref().map(|m| Object::iri(country_iri(m))),
            )
            .with(
                "dcat:dataset",
                entries
                    .iter()
                    .map(|e| Object::node(self.dataset(e)))
                    .collect(),
            )
            .one("hydra:view", Object::node(paging))
    }
}

fn texts(texts: &[LangText]) -> Vec<Object> {
    texts
        .iter()
        .map(|t| Object::lang(&t.text, &t.lang))
        .collect()
}

fn contact(c: &ContactPoint) -> Node {
    Node::blank(&["vcard:Kind"])
        .one("vcard:fn", Object::plain(&c.name))
        .maybe(
            "vcard:hasEmail",
            c.email.as_ref().map(|m| Object::iri(m.mailto())),
        )
        .maybe(
            "vcard:hasURL",
            c.url.as_ref().map(|u| Object::iri(u.as_str())),
        )
}

fn date_time(t: crate::domain::time::Timestamp) -> Object {
    Object::typed(
        t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "xsd:dateTime",
    )
}

/// An Art. 51(1) category, named by the ELI of its point: HealthDCAT-AP's own vocabulary of
/// health categories is not yet published as IRIs.
pub fn category_iri(c: DataCategory) -> String {
    format!(
        "http://data.europa.eu/eli/reg/2025/327/art_51/par_1/pnt_{}/oj",
        c.article_point()
    )
}

/// An Art. 53(1) purpose, named by the ELI of its point.
pub fn purpose_iri(p: Purpose) -> String {
    format!(
        "http://data.europa.eu/eli/reg/2025/327/art_53/par_1/pnt_{}/oj",
        p.article_point()
    )
}

/// A Member State in the EU country vocabulary (ISO 3166-1 alpha-3 codes).
pub fn country_iri(m: &MemberState) -> String {
    const ALPHA3: [(&str, &str); 30] = [
        ("AT", "AUT"),
        ("BE", "BEL"),
        ("BG", "BGR"),
        ("CY", "CYP"),
        ("CZ", "CZE"),
        ("DE", "DEU"),
        ("DK", "DNK"),
        ("EE", "EST"),
        ("ES", "ESP"),
        ("FI", "FIN"),
        ("FR", "FRA"),
        ("GR", "GRC"),
        ("HR", "HRV"),
        ("HU", "HUN"),
        ("IE", "IRL"),
        ("IT", "ITA"),
        ("LT", "LTU"),
        ("LU", "LUX"),
        ("LV", "LVA"),
        ("MT", "MLT"),
        ("NL", "NLD"),
        ("PL", "POL"),
        ("PT", "PRT"),
        ("RO", "ROU"),
        ("SE", "SWE"),
        ("SI", "SVN"),
        ("SK", "SVK"),
        ("IS", "ISL"),
        ("LI", "LIE"),
        ("NO", "NOR"),
    ];
    let code = ALPHA3
        .iter()
        .find(|(two, _)| *two == m.as_str())
        .map(|(_, three)| *three)
        .expect("every member state has an alpha-3 code");
    format!("http://publications.europa.eu/resource/authority/country/{code}")
}
