//! Study services: submission under a permit (with the study's noise key), the budget a
//! permit's live studies hold, cancellation, and the release of the final model after the
//! output check a model must pass before it leaves the processing environment.

use serde::Serialize;

use super::Requester;
use crate::{
    authz::Action,
    federation::{
        engine::{initial_checkpoint, Combination},
        rounds::close_open_round,
    },
    provenance::{self, Provenance},
    secret::KeyVault,
    store::{Store, StoreError, Tx},
};
use ehds_core::domain::{
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent},
    audit_details::{ModelReleased, NoiseKeysSealed, StudyCreated, StudyHalted},
    check::{check, CheckRequest, DenyReason},
    permit::TransitionError,
    small_cell::SmallCellRule,
    study::{
        choose_release, OutputCheck, ReleaseChoice, Round, RoundPhase, SiteContribution, Study,
        StudySpec, StudyStatus,
    },
    study_request::{assess, StudyRefusal},
    time::Timestamp,
    OrgId, Permit, PermitId,
};

/// The secret a study's noise is drawn from.
pub struct NoiseKey {
    key: Vec<u8>,
    /// Derived from a seed the researcher chose (development mode only): runs can be replayed.
    reproducible: bool,
}

/// Why no noise key was made.
#[derive(Debug)]
pub enum NoiseKeyError {
    /// A noise seed was asked for, and the gateway is not in development mode.
    ReproducibleNotAllowed,
    Internal(anyhow::Error),
}

impl NoiseKey {
    /// A fresh secret, or with `seed` (accepted in development mode only) one derived from it so
    /// that runs can be replayed.
    pub fn new(seed: Option<u64>, dev: bool) -> Result<Self, NoiseKeyError> {
        use sha2::{Digest, Sha256};
        match seed {
            None => Ok(Self {
                key: ehds_core::key_file::random_key()
                    .map_err(NoiseKeyError::Internal)?
                    .to_vec(),
                reproducible: false,
            }),
            Some(_) if !dev => Err(NoiseKeyError::ReproducibleNotAllowed),
            Some(seed) => {
                let mut h = Sha256::new();
                h.update(b"ehds-gateway reproducible noise");
                h.update(seed.to_le_bytes());
                Ok(Self {
                    key: h.finalize().to_vec(),
                    reproducible: true,
                })
            }
        }
    }
}

/// A fresh seed for a study's model initialisation and sampling.
pub fn random_seed() -> anyhow::Result<u64> {
    let key = ehds_core::key_file::random_key()?;
    Ok(u64::from_le_bytes(key[..8].try_into().expect("8 bytes")))
}

/// The epsilon the whole plan of `study` spends (composed under Rényi DP); NaN if the plan
/// cannot be accounted.
pub fn epsilon_planned(study: &Study) -> f64 {
    study
        .spec
        .dp
        .epsilon_for_rounds(study.spec.rounds)
        .unwrap_or(f64::NAN)
}

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
/// live studies hold, then stored with its sealed noise key and its initial checkpoint, and
/// audited.
#[allow(clippy::too_many_arguments)]
#[tracing::instrument(name = "Submitting a study", skip_all, fields(permit = %permit.id()))]
pub async fn submit(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    vault: &KeyVault,
    permit: &Permit,
    spec: StudySpec,
    organisation: Option<OrgId>,
    noise_key: &NoiseKey,
    now: Timestamp,
) -> Result<Study, SubmitError> {
    let reserved = reserved_budget(tx, permit.id())
        .await
        .map_err(SubmitError::Store)?;
    let reasons = assess(&spec, permit, reserved, now).map_err(SubmitError::Internal)?;
    if !reasons.is_empty() {
        return Err(SubmitError::NotPermitted(reasons));
    }
    let organisation = organisation.ok_or(SubmitError::NoOrganisation)?;
    let study = Study::new(organisation, &by.principal.sub, spec, now);
    let sealed = vault
        .seal(study.id.to_string().as_bytes(), &noise_key.key)
        .map_err(SubmitError::Internal)?;
    tx.insert_study(&study, &sealed)
        .await
        .map_err(SubmitError::Store)?;
    // the one way its rounds combine updates, decided here: a specification submission admitted
    // has exactly one (`Combination`)
    Combination::of(&study.spec).map_err(SubmitError::Internal)?;
    let checkpoint = initial_checkpoint(&study).map_err(SubmitError::Internal)?;
    tx.insert_checkpoint(&checkpoint, now)
        .await
        .map_err(SubmitError::Store)?;
    let spec = &study.spec;
    tx.append_audit(
        by.audit(Action::StudyCreate, AuditSubject::Study(study.id))
            .permit(permit.id())
            .details(&StudyCreated {
                title: &spec.title,
                purpose: spec.purpose,
                categories: &spec.categories,
                data_holders: &spec.data_holders,
                strategy: spec.strategy.name(),
                rounds: spec.rounds,
                dp: &spec.dp,
                epsilon_planned: epsilon_planned(&study),
                reproducible_noise: noise_key.reproducible,
            }),
    )
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
            .map_err(StoreError::Other)?;
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

/// The reason as a sentence, shown beside its code in the refusal.
impl std::fmt::Display for OutputRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooFewSites { sites, min_sites } => write!(
                f,
                "{sites} site(s) contributed to the final aggregate; the output check needs \
                 at least {min_sites}"
            ),
            Self::SiteBelowMinSamples {
                sites,
                min_samples_per_site,
            } => write!(
                f,
                "{sites} contributing site(s) trained on fewer than {min_samples_per_site} \
                 samples, the output check's minimum per site"
            ),
        }
    }
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

/// Why a study was not cancelled; nothing was stored.
#[derive(Debug)]
pub enum CancelError {
    /// The study is no longer running or suspended.
    Transition(TransitionError),
    Store(StoreError),
}

impl From<StoreError> for CancelError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Cancels a running or suspended study for `reason`; the round in flight is discarded.
#[tracing::instrument(name = "Cancelling a study", skip_all, fields(study = %study.id))]
pub async fn cancel(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    study: &mut Study,
    reason: &str,
    now: Timestamp,
) -> Result<(), CancelError> {
    let version = study.row_version;
    study
        .cancel(reason.to_owned(), now)
        .map_err(CancelError::Transition)?;
    let discarded = match tx.open_round(study.id).await? {
        Some(round) => Some(
            close_open_round(
                &mut *tx,
                round,
                RoundPhase::Discarded,
                "the study was cancelled",
                now,
            )
            .await?,
        ),
        None => None,
    };
    tx.update_study(study, version).await?;
    tx.append_audit(
        by.audit(Action::StudyCancel, AuditSubject::Study(study.id))
            .permit(study.spec.permit_id)
            .details(&StudyHalted {
                reason,
                discarded_round: discarded,
                rounds_done: study.rounds_done,
            }),
    )
    .await?;
    Ok(())
}

/// The final model as it leaves: the safetensors file and its digest.
#[derive(Debug)]
pub struct ReleasedModel {
    /// The safetensors file, its signed provenance in the metadata.
    pub bytes: Vec<u8>,
    pub digest: String,
    /// Which round's model this is, and why.
    pub choice: ReleaseChoice,
    pub provenance: Provenance,
}

/// What a release signs with: the audit log's key, and the small-cell rule for the
/// contributors' sample count.
pub struct ReleaseSigning<'a> {
    pub signer: &'a translog::NoteSigner,
    pub small_cells: SmallCellRule,
}

/// Why the final model may not leave.
#[derive(Debug)]
pub enum ReleaseError {
    /// Only a completed study's model is released.
    NotCompleted(StudyStatus),
    /// The study's permit is missing from the store.
    PermitMissing(PermitId),
    /// The permit no longer covers releasing the model, for every one of these reasons.
    NotPermitted(Vec<DenyReason>),
    /// No round was aggregated.
    NoAggregatedRound,
    /// The final aggregate rests on too few sites or samples to leave.
    OutputCheck(Vec<OutputRefusal>),
    /// The study has no checkpoint.
    NoCheckpoint,
    Store(StoreError),
    Internal(anyhow::Error),
}

impl From<StoreError> for ReleaseError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Releases the final aggregate of `study` (an export, audited with its digest): only for a
/// completed study, while the permit is active and covers the study's purpose, and only after
/// the output check.
#[tracing::instrument(name = "Releasing a study's model", skip_all, fields(study = %study.id))]
pub async fn release_model(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    study: &Study,
    signing: &ReleaseSigning<'_>,
    now: Timestamp,
) -> Result<ReleasedModel, ReleaseError> {
    if study.status() != StudyStatus::Completed {
        return Err(ReleaseError::NotCompleted(study.status()));
    }
    let permit_id = study.spec.permit_id;
    let permit = tx
        .get_permit(permit_id)
        .await?
        .ok_or(ReleaseError::PermitMissing(permit_id))?;
    let outcome = check(
        &permit,
        &CheckRequest {
            purpose: study.spec.purpose,
            categories: study.spec.categories.clone(),
            data_holders: vec![],
            epsilon: None,
        },
        now,
    );
    if !outcome.allowed {
        return Err(ReleaseError::NotPermitted(outcome.reasons));
    }
    let rounds = tx.list_rounds(study.id).await?;
    let aggregated: Vec<u64> = rounds
        .iter()
        .filter(|r| r.phase == RoundPhase::Aggregated)
        .map(|r| r.round)
        .collect();
    let evaluations = tx.list_evaluations(study.id).await?;
    let choice = choose_release(study.spec.release, &aggregated, &evaluations)
        .ok_or(ReleaseError::NoAggregatedRound)?;
    let released = rounds
        .iter()
        .rfind(|r| r.phase == RoundPhase::Aggregated && r.round == choice.round)
        .ok_or(ReleaseError::NoAggregatedRound)?;
    let reasons = output_check(&study.spec.output_check, released);
    if !reasons.is_empty() {
        return Err(ReleaseError::OutputCheck(reasons));
    }
    let checkpoint = tx
        .checkpoint_at(study.id, choice.round)
        .await?
        .ok_or(ReleaseError::NoCheckpoint)?;
    let digest = fl_engine::load_safetensors(&checkpoint.global)
        .map_err(|e| ReleaseError::Internal(e.into()))?
        .1
        .digest;
    tx.append_audit(
        by.audit(Action::StudyModel, AuditSubject::Study(study.id))
            .permit(permit_id)
            .details(&ModelReleased {
                round: checkpoint.round,
                digest: &digest,
                bytes: checkpoint.global.len(),
                epsilon_spent: study.epsilon_spent,
                sites: released
                    .summary
                    .sites
                    .iter()
                    .filter(|s| s.contributed)
                    .count(),
                dp: study.spec.dp.level,
                selection: choice.selection,
                validation_loss: choice.validation_loss,
            }),
    )
    .await?;
    // the tree head now covers the release's own entry
    let (audit_log_size, root) = crate::app::audit::tree_head(tx).await?;
    let contributors: Vec<&SiteContribution> = released
        .summary
        .sites
        .iter()
        .filter(|s| s.contributed)
        .collect();
    let statement = Provenance {
        study: study.id,
        permit: permit_id,
        method: study.spec.strategy.spec().name().to_owned(),
        round: choice.round,
        rounds: study.rounds_done,
        selection: choice.selection,
        dp: study.spec.dp.level,
        epsilon: study.epsilon_spent,
        delta: study.spec.dp.delta,
        contributors: contributors.iter().map(|s| s.data_holder.clone()).collect(),
        samples: signing
            .small_cells
            .column(&contributors.iter().map(|s| s.samples).collect::<Vec<_>>())
            .total,
        digest: digest.clone(),
        audit_log_size,
        audit_log_root: super::audit::b64(&root),
        released_at: now,
    };
    let bytes = provenance::attach(&checkpoint.global, &statement, signing.signer)
        .map_err(ReleaseError::Internal)?;
    Ok(ReleasedModel {
        bytes,
        digest,
        choice,
        provenance: statement,
    })
}

/// Seals study noise keys stored in clear by versions before the vault existed, in one
/// transaction with its audit entry.
pub async fn seal_stored_noise_keys(store: &dyn Store, vault: &KeyVault) -> anyhow::Result<usize> {
    let mut tx = store.begin().await?;
    let mut sealed = 0;
    for (study, stored) in tx.study_noise_keys().await? {
        if KeyVault::is_sealed(&stored) {
            continue;
        }
        let key = vault.seal(study.to_string().as_bytes(), &stored)?;
        tx.set_study_noise_key(study, &key).await?;
        sealed += 1;
    }
    if sealed > 0 {
        tx.append_audit(
            NewAuditEvent::success(
                &Actor::system(),
                AuditAction::SystemNoiseKeysSealed,
                AuditSubject::Studies,
            )
            .details(&NoiseKeysSealed { studies: sealed }),
        )
        .await?;
        tracing::warn!(studies = sealed, "sealed study noise keys stored in clear; old database pages may still hold them until the file is vacuumed");
    }
    tx.commit().await?;
    Ok(sealed)
}
