//! FHIR R4 Consent: the opt-outs a bulk import may carry as a Bundle.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::app::optouts::{import_id, ImportItem};
use ehds_core::domain::{time, Errors, FieldError, MemberState, SubjectPseudonym};

/// Reads a FHIR R4 Bundle of Consent resources: `provision.type` deny is an opt-out, status
/// `inactive` its withdrawal, `provision.period.start` its effective time.
pub fn parse_opt_out_bundle(
    body: &[u8],
    default_state: &str,
) -> Result<Vec<ImportItem>, Vec<FieldError>> {
    let bundle: Value = serde_json::from_slice(body)
        .map_err(|e| vec![FieldError::new("", "malformed_json", e.to_string())])?;
    if bundle.get("resourceType").and_then(Value::as_str) != Some("Bundle") {
        return Err(vec![FieldError::new(
            "resourceType",
            "not_a_bundle",
            "expected a FHIR Bundle",
        )]);
    }
    let mut errors = Errors::default();
    let mut items = Vec::new();
    let entries = bundle
        .get("entry")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("entry[{i}]");
        let Some(consent) = entry.get("resource") else {
            errors.push(&field, "missing_resource", "bundle entry has no resource");
            continue;
        };
        if consent.get("resourceType").and_then(Value::as_str) != Some("Consent") {
            errors.push(
                &field,
                "not_a_consent",
                "only Consent resources can be imported",
            );
            continue;
        }
        let withdrawn = match consent.get("status").and_then(Value::as_str) {
            Some("active") => false,
            Some("inactive") => true,
            other => {
                errors.push(
                    format!("{field}.status"),
                    "unsupported_consent_status",
                    format!("status {other:?} is neither `active` nor `inactive`"),
                );
                continue;
            }
        };
        let provision = consent.get("provision");
        if provision
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            != Some("deny")
        {
            errors.push(
                format!("{field}.provision.type"),
                "not_an_opt_out",
                "an opt-out is a Consent with provision.type `deny`",
            );
            continue;
        }
        let policy_ok = consent
            .get("policyRule")
            .and_then(|r| r.get("coding"))
            .and_then(Value::as_array)
            .is_none_or(|codes| {
                codes
                    .iter()
                    .any(|c| c.get("code").and_then(Value::as_str) == Some("OPTOUT"))
            });
        if !policy_ok {
            errors.push(
                format!("{field}.policyRule"),
                "not_an_opt_out",
                "policyRule must be OPTOUT",
            );
            continue;
        }
        let patient = consent.get("patient");
        let pseudonym = patient
            .and_then(|p| p.get("identifier"))
            .and_then(|i| i.get("value"))
            .and_then(Value::as_str)
            .or_else(|| {
                patient
                    .and_then(|p| p.get("reference"))
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("Patient/"))
            });
        let Some(subject) = pseudonym
            .and_then(|p| errors.take(format!("{field}.patient"), SubjectPseudonym::parse(p)))
        else {
            if pseudonym.is_none() {
                errors.push(
                    format!("{field}.patient"),
                    "missing_patient",
                    "Consent.patient must name the subject's pseudonym",
                );
            }
            continue;
        };
        let start = provision
            .and_then(|p| p.get("period"))
            .and_then(|p| p.get("start"))
            .and_then(Value::as_str);
        let effective_at = match start.map(DateTime::parse_from_rfc3339) {
            None => None,
            Some(Ok(t)) => Some(time::normalise(t.with_timezone(&Utc))),
            Some(Err(e)) => {
                errors.push(
                    format!("{field}.provision.period.start"),
                    "invalid_date",
                    e.to_string(),
                );
                continue;
            }
        };
        let Some(member_state) = errors.take(field.clone(), MemberState::parse(default_state))
        else {
            continue;
        };
        items.push(ImportItem {
            record_id: consent
                .get("id")
                .and_then(Value::as_str)
                .map(|id| import_id(&format!("Consent/{id}"))),
            subject,
            member_state,
            effective_at,
            withdrawn,
        });
    }
    errors.into_result(|| items)
}
