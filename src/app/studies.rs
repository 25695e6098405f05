//! Study services: submission under a permit, the budget a permit's live studies hold, and the
//! output check a model must pass before it leaves the processing environment.

use serde::Serialize;

use crate::{
    domain::{
        study::{OutputCheck, Round, SiteContribution, Study, StudySpec},
        study_request::{assess, StudyRefusal},
        time::Timestamp,
        OrgId, Permit, PermitId,
    },
    federation::rounds::initial_checkpoint,
    secret::KeyVault,
    store::{StoreError, Tx},
};

/// Why a study was not accepted.
#[derive(Debug)]
pub enum SubmitError {
    /// The permit does not cover the study, for every one of these reasons.
    NotPermitted(Vec<StudyRefusal>),
    /// The submitter's token names no organisation to run the study for.
    NoOrganisation,
    Store(StoreError),
    Internal(anyhow::Error),
}

/// Accepts `spec` under `permit` on `tx`: judged against the permit and the budget its other
/// live studies hold, then stored with its sealed noise key and its initial checkpoint.
#[allow(clippy::too_many_arguments)]
#[tracing::instrument(name = "Submitting a study", skip_all, fields(permit = %permit.id()))]
pub async fn submit(
    tx: &mut dyn Tx,
    vault: &KeyVault,
    permit: &Permit,
    spec: StudySpec,
    organisation: Option<OrgId>,
    submitter: &str,
    noise_key: &[u8],
    now: Timestamp,
) -> Result<Study, SubmitError> {
    let reserved = reserved_budget(tx, permit.id())
        .await
        .map_err(SubmitError::Store)?;
    let reasons = assess(&spec, permit, reserved, now)
        .map_err(|e| SubmitError::Internal(anyhow::anyhow!(e)))?;
    if !reasons.is_empty() {
        return Err(SubmitError::NotPermitted(reasons));
    }
    let organisation = organisation.ok_or(SubmitError::NoOrganisation)?;
    let study = Study::new(organisation, submitter, spec, now);
    let sealed = vault
        .seal(study.id.to_string().as_bytes(), noise_key)
        .map_err(SubmitError::Internal)?;
    tx.insert_study(&study, &sealed)
        .await
        .map_err(SubmitError::Store)?;
    let checkpoint = initial_checkpoint(&study).map_err(SubmitError::Internal)?;
    tx.insert_checkpoint(&checkpoint, now)
        .await
        .map_err(SubmitError::Store)?;
    Ok(study)
}

/// The budget of `permit` that its live studies have planned but not yet spent. Plans accepted
/// earlier hold it: a later study cannot count on it.
#[tracing::instrument(name = "Reserving the budget of live studies", skip(tx))]
pub async fn reserved_budget(tx: &mut dyn Tx, permit: PermitId) -> crate::store::Result<f64> {
    let mut reserved = 0.0;
    for other in tx.live_studies_for_permit(permit).await? {
        let planned = other
            .spec
            .dp
            .epsilon_for_rounds(other.spec.rounds)
            .map_err(|e| StoreError::Other(anyhow::anyhow!(e)))?;
        reserved += (planned - other.epsilon_spent).max(0.0);
    }
    Ok(reserved)
}

/// Why the output check refused a release.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum OutputRefusal {
    /// Fewer sites contributed to the final aggregate than the check demands.
    TooFewSites { sites: usize, min_sites: usize },
    /// `sites` contributing sites trained on fewer samples than the check demands (how many,
    /// not which: naming a small site would itself disclose something).
    SiteBelowMinSamples {
        sites: usize,
        min_samples_per_site: u64,
    },
}

/// Every reason the final aggregate of `last` may not leave under `check`.
#[tracing::instrument(name = "Output check", skip_all, fields(round = last.round))]
pub fn output_check(check: &OutputCheck, last: &Round) -> Vec<OutputRefusal> {
    let contributed: Vec<&SiteContribution> = last
        .summary
        .sites
        .iter()
        .filter(|s| s.contributed)
        .collect();
    let mut reasons = Vec::new();
    if contributed.len() < check.min_sites {
        reasons.push(OutputRefusal::TooFewSites {
            sites: contributed.len(),
            min_sites: check.min_sites,
        });
    }
    let small = contributed
        .iter()
        .filter(|s| s.samples < check.min_samples_per_site)
        .count();
    if small > 0 {
        reasons.push(OutputRefusal::SiteBelowMinSamples {
            sites: small,
            min_samples_per_site: check.min_samples_per_site,
        });
    }
    reasons
}
