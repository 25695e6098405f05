//! The governance side of the API: opt-outs, applications and permits, studies, the audit
//! trail. Answers whose representation the gateway keeps inside its HTTP layer come back as
//! JSON documents; the rest as the gateway's own domain types.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::{Call, ClientError, GatewayClient};
use ehds_core::domain::{
    application::{Application, ApplicationRequest},
    audit::AuditEntry,
    check::CheckOutcome,
    ApplicationId, PermitId, StudyId,
};

/// An opt-out file for `POST /v1/opt-outs/import`, imported all or nothing.
pub enum OptOutImport {
    /// One JSON object per line (`subject_pseudonym`, `member_state`, ...).
    Ndjson(Bytes),
    /// A FHIR R4 Bundle of Consent resources.
    FhirBundle(Bytes),
}

/// A released model: the safetensors file and the digest the gateway recorded for it.
#[derive(Debug, Clone)]
pub struct ModelFile {
    pub bytes: Bytes,
    /// `x-model-digest`: the SHA-256 the audit trail names.
    pub digest: String,
    /// `x-model-round`: the round whose global model this is.
    pub round: Option<u64>,
    /// `x-model-selection`: `best_validation` or `last`.
    pub selection: Option<String>,
}

/// `?k=v&...`, encoded.
fn query(pairs: &[(&str, &str)]) -> String {
    let encoded = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    if encoded.is_empty() {
        encoded
    } else {
        format!("?{encoded}")
    }
}

impl GatewayClient {
    /// Liveness: the process answers.
    pub async fn healthz(&self) -> Result<(), ClientError> {
        self.send(Call::get("/healthz")).await.map(drop)
    }

    /// Readiness: the gateway can serve requests (its database answers).
    pub async fn readyz(&self) -> Result<(), ClientError> {
        self.send(Call::get("/readyz")).await.map(drop)
    }

    /// Imports opt-outs as the registrar; answers the import report.
    pub async fn import_opt_outs(&self, file: OptOutImport) -> Result<Value, ClientError> {
        let (content_type, bytes) = match file {
            OptOutImport::Ndjson(b) => ("application/x-ndjson", b),
            OptOutImport::FhirBundle(b) => ("application/fhir+json", b),
        };
        self.send_json(Call::post("/v1/opt-outs/import").body(content_type, bytes))
            .await
    }

    /// Submits a data access application as the caller.
    pub async fn create_application(
        &self,
        request: &ApplicationRequest,
    ) -> Result<Application, ClientError> {
        self.send_json(Call::post("/v1/applications").json(request)?)
            .await
    }

    /// Approves a submitted application as it stands (an HDAB officer's decision without
    /// conditions); returns the permit issued.
    pub async fn approve_application(&self, id: ApplicationId) -> Result<PermitId, ClientError> {
        let call = Call::post(format!("/v1/applications/{id}/decision"))
            .json(&serde_json::json!({ "decision": "approve" }))?;
        let what = call.what();
        let decided: Value = self.send_json(call).await?;
        decided["permit"]["id"]
            .as_str()
            .and_then(|s| PermitId::parse(s).ok())
            .ok_or_else(|| ClientError::decode(what, "the decision names no permit"))
    }

    /// A permit with its state and privacy budget.
    pub async fn permit(&self, id: PermitId) -> Result<Value, ClientError> {
        self.send_json(Call::get(format!("/v1/permits/{id}"))).await
    }

    /// The governance check: may this permit cover `check` (purpose, categories, data
    /// holders, epsilon) now?
    pub async fn check_permit(
        &self,
        id: PermitId,
        check: &impl Serialize,
    ) -> Result<CheckOutcome, ClientError> {
        self.send_json(Call::post(format!("/v1/permits/{id}/check")).json(check)?)
            .await
    }

    /// Submits a federated study (the body of `POST /v1/studies`); answers the study.
    pub async fn create_study(&self, request: &impl Serialize) -> Result<Value, ClientError> {
        self.send_json(Call::post("/v1/studies").json(request)?)
            .await
    }

    pub async fn study(&self, id: StudyId) -> Result<Value, ClientError> {
        self.send_json(Call::get(format!("/v1/studies/{id}"))).await
    }

    /// The study's rounds with their figures, and its status.
    pub async fn study_rounds(&self, id: StudyId) -> Result<Value, ClientError> {
        self.send_json(Call::get(format!("/v1/studies/{id}/rounds")))
            .await
    }

    /// The released model (the study's `release` choice), once it passed the output check.
    pub async fn study_model(&self, id: StudyId) -> Result<ModelFile, ClientError> {
        let answer = self
            .send(Call::get(format!("/v1/studies/{id}/model")))
            .await?;
        let header = |name: &str| {
            answer
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Ok(ModelFile {
            digest: header("x-model-digest").unwrap_or_default(),
            round: header("x-model-round").and_then(|r| r.parse().ok()),
            selection: header("x-model-selection"),
            bytes: answer.body,
        })
    }

    /// Audit entries matching the filter pairs (`action`, `resource_id`, `limit`, ...).
    pub async fn audit_events(
        &self,
        filter: &[(&str, &str)],
    ) -> Result<Vec<AuditEntry>, ClientError> {
        self.send_json(Call::get(format!("/v1/audit/events{}", query(filter))))
            .await
    }

    /// The matching audit entries as a FHIR R4 Bundle of AuditEvent resources.
    pub async fn audit_events_fhir(&self, filter: &[(&str, &str)]) -> Result<Value, ClientError> {
        let mut pairs = vec![("format", "fhir")];
        pairs.extend_from_slice(filter);
        self.send_json(Call::get(format!("/v1/audit/events{}", query(&pairs))))
            .await
    }

    /// Statistics runs matching the filter pairs (`permit_id`, `application_id`, `status`).
    pub async fn statistics_runs(&self, filter: &[(&str, &str)]) -> Result<Value, ClientError> {
        self.send_json(Call::get(format!("/v1/statistics{}", query(filter))))
            .await
    }

    /// An officer's release (`release`) or withholding (`withhold`) of a flagged answer.
    pub async fn review_statistics(
        &self,
        run: &str,
        decision: &str,
        justification: &str,
    ) -> Result<Value, ClientError> {
        let body = serde_json::json!({ "decision": decision, "justification": justification });
        self.send_json(Call::post(format!("/v1/statistics/{run}/review")).json(&body)?)
            .await
    }

    /// Verifies the whole hash chain; answers the verification report.
    pub async fn verify_audit(&self) -> Result<Value, ClientError> {
        self.send_json(Call::get("/v1/audit/verify")).await
    }
}
