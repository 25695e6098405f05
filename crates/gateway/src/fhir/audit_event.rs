//! FHIR R4 AuditEvent: the export of the audit trail (IHE BALP shape).

use serde_json::{json, Value};

use ehds_core::domain::{
    audit::{AuditEntry, Outcome},
    audit_action::{AuditAction, FhirAction, FhirEventType},
    time,
};

/// One entry as a FHIR R4 AuditEvent (IHE BALP shape): the caller is the requesting agent,
/// the gateway the observer, the permit the governing policy.
pub fn from_entry(e: &AuditEntry, public_url: &str) -> Value {
    let outcome = match e.outcome {
        Outcome::Success => "0",
        Outcome::Denied => "4",
        Outcome::Failure => "8",
    };
    // A name this version does not know (written by a later one) is exported as a RESTful
    // operation that updates.
    let action = e.audit_action();
    let fhir_type = action
        .as_ref()
        .map_or(FhirEventType::Rest, AuditAction::fhir_type);
    let (type_code, type_display, subtype) = match fhir_type {
        FhirEventType::ConsentAlert => (
            "110113",
            "Security Alert",
            json!({"system": "http://dicom.nema.org/resources/ontology/DCM", "code": "110113", "display": "AuthZconsent"}),
        ),
        // the release of a model out of the processing environment: a privacy disclosure
        FhirEventType::Export => (
            "110106",
            "Export",
            json!({"system": "http://dicom.nema.org/resources/ontology/DCM", "code": "110106", "display": "Export"}),
        ),
        FhirEventType::Rest => (
            "rest",
            "RESTful Operation",
            json!({"system": "urn:ehds-gateway:audit-action", "code": e.action}),
        ),
    };
    let type_system = if type_code == "rest" {
        "http://terminology.hl7.org/CodeSystem/audit-event-type"
    } else {
        "http://dicom.nema.org/resources/ontology/DCM"
    };
    let roles: Vec<Value> = e
        .actor
        .roles
        .iter()
        .map(|r| json!({"coding": [{"system": "urn:ehds-gateway:role", "code": r}]}))
        .collect();
    let mut agent = json!({
        "type": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/v3-ParticipationType", "code": "IRCP", "display": "information recipient"}]},
        "who": {"identifier": {"system": "urn:ehds-gateway:subject", "value": e.actor.sub}},
        "requestor": true,
        "role": roles,
    });
    if let Some(p) = &e.permit_id {
        agent["policy"] = json!([format!("{public_url}/v1/permits/{p}")]);
    }
    let mut entities = vec![json!({
        "what": {"identifier": {"system": "urn:ehds-gateway:audit-chain", "value": e.seq.to_string()}},
        "type": {"system": "http://terminology.hl7.org/CodeSystem/audit-entity-type", "code": "4", "display": "Other"},
        "detail": [
            {"type": "hash", "valueString": e.hash},
            {"type": "prev_hash", "valueString": e.prev_hash},
            {"type": "detail", "valueString": e.detail.to_string()},
        ],
    })];
    if let Some(id) = &e.resource_id {
        // a federated round is a job the gateway runs (audit-entity-type 20)
        let (code, display) = if action.as_ref().is_some_and(AuditAction::is_round_work) {
            ("20", "Job")
        } else {
            ("2", "System Object")
        };
        entities.push(json!({
            "what": {"identifier": {"system": format!("urn:ehds-gateway:{}", e.resource_type), "value": id}},
            "type": {"system": "http://terminology.hl7.org/CodeSystem/audit-entity-type", "code": code, "display": display},
        }));
    }
    json!({
        "resourceType": "AuditEvent",
        "id": e.id.to_string(),
        "type": {"system": type_system, "code": type_code, "display": type_display},
        "subtype": [subtype],
        "action": action.as_ref().map_or(FhirAction::Update, AuditAction::fhir_action).code(),
        "recorded": time::canonical(&e.recorded_at),
        "outcome": outcome,
        "outcomeDesc": e.detail.get("detail").and_then(Value::as_str).unwrap_or(e.outcome.as_str()),
        "agent": [agent],
        "source": {
            "observer": {"display": "ehds-gateway"},
            "type": [{"system": "http://terminology.hl7.org/CodeSystem/security-source-type", "code": "4", "display": "Application Server"}],
        },
        "entity": entities,
    })
}
