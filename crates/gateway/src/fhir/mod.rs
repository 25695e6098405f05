//! The gateway's FHIR R4 mapping: opt-outs imported as Consent resources and the audit trail
//! exported as AuditEvent resources. (The nodes' reading of patient data is in `node`.)

pub mod audit_event;
pub mod consent;
