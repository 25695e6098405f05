//! Sample study requests and their parsed specifications, for the tests of this crate and of the
//! crates that take a study (the node's policy: `ehds-core`'s `fixtures` feature).

use super::{parse_study, FederationLimits, OutputFloor, SecureAggregationRequest, StudyRequest};
use crate::domain::{study::StudySpec, PermitId};

pub const FEATURES: &str = r#"{"name": "t", "features": [
        {"name": "age", "category": "ehr_data",
         "source": {"observation": {"system": "http://loinc.org", "code": "30525-0"}},
         "transform": {"kind": "number"}}],
      "label": {"name": "chd", "category": "ehr_data",
        "source": {"condition": {"system": "http://snomed.info/sct", "code": "53741008"}}}}"#;

pub fn request() -> StudyRequest {
    serde_json::from_value(serde_json::json!({
        "title": "t", "permit_id": PermitId::new().to_string(), "purpose": "scientific_research",
        "categories": ["ehr_data"], "data_holders": ["hosp-1", "hosp-2"],
        "feature_spec": serde_json::from_str::<serde_json::Value>(FEATURES).unwrap(),
        "model": {"architecture": "logistic"}, "strategy": {"name": "fedavg"},
        "optimizer": {"name": "sgd", "lr": 0.1}, "local_steps": 10, "batch_size": 4,
        "rounds": 10, "min_sites": 2, "round_deadline_seconds": 60,
        "dp": {"level": "client", "clip_norm": 1.0, "noise_multiplier": 1.0}
    }))
    .unwrap()
}

pub const FLOOR: OutputFloor = OutputFloor {
    min_sites: 2,
    min_samples_per_site: 10,
};

pub const LIMITS: FederationLimits = FederationLimits {
    max_update_bytes: 64 * 1024 * 1024,
};

/// A FedAvg study of two holders over `rounds` rounds with client-level DP (clip 1, noise
/// multiplier 1).
pub fn spec(rounds: u64) -> StudySpec {
    let mut r = request();
    r.rounds = rounds;
    parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap()
}

pub fn distributed_request(dp: serde_json::Value) -> StudyRequest {
    let mut r = request();
    r.data_holders = ["hosp-1", "hosp-2", "hosp-3", "hosp-4"]
        .map(String::from)
        .to_vec();
    r.secure_aggregation = Some(SecureAggregationRequest::default());
    r.dp = serde_json::from_value(dp).unwrap();
    r
}

/// A FedAvg study of four holders under secure aggregation with client-level DP (clip 1,
/// noise multiplier 1): distributed DP for at least `min_survivors` holders.
pub fn distributed_spec(min_survivors: u32) -> StudySpec {
    let r = distributed_request(serde_json::json!({"level": "client", "clip_norm": 1.0,
        "noise_multiplier": 1.0, "min_survivors": min_survivors}));
    parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap()
}
