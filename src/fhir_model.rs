//! FHIR Bundles in the `fhir-sdk` R4B model types, for the tests and the extraction benchmark:
//! the node agent itself streams FHIR JSON (`ehds_node::fhir_source`) and carries no model of
//! every FHIR type, so a Bundle another tool built with these types is checked to read the same.

use ehds_node::{fhir_source::extract_json, FeatureSpec, SiteRows, SourceError};
use fhir_sdk::r4b::resources::Bundle;

/// Parse a Bundle from FHIR JSON into the `fhir-sdk` model. Anything else (invalid JSON,
/// another resource type) is a `SourceError`.
pub fn parse_bundle(json: &str) -> Result<Bundle, SourceError> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(SourceError::Json)?;
    match value.get("resourceType").and_then(|t| t.as_str()) {
        Some("Bundle") => serde_json::from_value(value).map_err(SourceError::Json),
        Some(other) => Err(SourceError::NotABundle(other.to_owned())),
        None => Err(SourceError::NotABundle(
            "JSON value without resourceType".into(),
        )),
    }
}

/// Extract every subject of a Bundle already parsed into the `fhir-sdk` model.
pub fn extract(spec: &FeatureSpec, bundle: &Bundle) -> Result<SiteRows, SourceError> {
    let json = serde_json::to_string(bundle).map_err(SourceError::Json)?;
    extract_json(spec, &json)
}
