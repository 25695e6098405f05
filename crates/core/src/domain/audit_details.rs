//! The `detail` of every audit entry the gateway writes, one type per kind of entry.
//!
//! The stored detail is covered by the entry's hash, so these types must serialise to exactly
//! the JSON the gateway has always written. serde_json's `preserve_order` is on in this build
//! (cedar-policy-core enables it), so an object keeps the order its keys were written in: every
//! struct declares its fields in the stored key order, under the stored names, and an absent
//! value is written as `null` (no field is skipped). Reordering, renaming or skipping a field
//! changes the bytes of every later entry of that kind; the tests below pin each shape.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{
    audit::FirstBadEntry,
    check::DenyReason,
    dp_requirement::DpRequirement,
    optout::FilterPolicy,
    permit::PermitTerms,
    study::{DpLevel, DpPlan, ModelRelease, RoundRefusal},
    time::Timestamp,
    ApplicationId, DataCategory, OrgId, Purpose, StatisticsRunId, StudyId,
};

// ---------------------------------------------------------------------------------------------
// Requests.

/// A listing: how many records the caller was shown.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub returned: usize,
}

/// A refused request (`http.<method>` or the handler's action): what was refused and where.
#[derive(Debug, Serialize)]
pub struct Refusal<'a> {
    pub code: &'a str,
    pub detail: String,
    pub method: &'a str,
    pub path: String,
}

/// `http.refusals_summarised`: the refusals held back from the trail in the last window.
#[derive(Debug, Serialize)]
pub struct RefusalsSummarised<'a> {
    pub refusals: u64,
    pub by_code: &'a BTreeMap<&'static str, u64>,
    pub window_seconds: u64,
}

/// `catalogue.create`, `catalogue.update` and `catalogue.withdraw`: the dataset's revision
/// and the holder's identifier of it (its whole description is kept with each revision).
#[derive(Debug, Serialize)]
pub struct CatalogueChanged<'a> {
    pub revision: i64,
    pub identifier: &'a str,
    pub status: &'a str,
}

/// `application.create`.
#[derive(Debug, Serialize)]
pub struct ApplicationCreated<'a> {
    pub title: &'a str,
    pub purposes: &'a [Purpose],
    pub categories: &'a [DataCategory],
}

/// `application.decide` on the application: the decision and its stated reason.
#[derive(Debug, Serialize)]
pub struct ApplicationDecided<'a> {
    pub decision: &'a str,
    pub reason: Option<&'a str>,
}

/// `application.assess`, `application.respond` and `application.lapse`: one step of the
/// procedure, the states it moved between and what it set.
#[derive(Debug, Serialize)]
pub struct ApplicationStep<'a> {
    pub step: &'a str,
    pub from: &'a str,
    pub to: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    /// The deadline the new state runs against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Timestamp>,
}

/// `application.deadline`: a deadline of the procedure passed.
#[derive(Debug, Serialize)]
pub struct ApplicationDeadlinePassed<'a> {
    /// `decision`, `information`, `fee_response`, `publication`, or `answer` (a data
    /// request's Art. 69(4) answer).
    pub deadline: &'a str,
    pub due_at: Timestamp,
    pub status: &'a str,
}

/// `application.decide` on the permit an approval issued.
#[derive(Debug, Serialize)]
pub struct PermitIssued {
    event: &'static str,
    pub application_id: ApplicationId,
    pub expires_at: Timestamp,
    pub optout_exception: bool,
    /// The privacy plans the decision allows (entries before the term existed lack the key).
    pub dp_requirement: DpRequirement,
}

impl PermitIssued {
    pub fn new(
        application_id: ApplicationId,
        expires_at: Timestamp,
        optout_exception: bool,
        dp_requirement: DpRequirement,
    ) -> Self {
        Self {
            event: "permit.issued",
            application_id,
            expires_at,
            optout_exception,
            dp_requirement,
        }
    }
}

/// A permit lifecycle transition (`permit.suspend`, `.reinstate`, `.revoke`, `.amend`,
/// `.extend`): the row versions around it, the state after it, and the change itself.
#[derive(Debug, Serialize)]
pub struct PermitTransition<'a> {
    pub from: i64,
    pub to: i64,
    pub status: &'a str,
    pub change: PermitChange<'a>,
}

/// What a lifecycle transition changed (the `change` of [`PermitTransition`]).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PermitChange<'a> {
    Suspended {
        reason: &'a str,
    },
    Reinstated {
        reason: Option<&'a str>,
    },
    Revoked {
        reason: &'a str,
    },
    Amended {
        reason: &'a str,
        terms_version: i64,
        previous_terms: &'a PermitTerms,
    },
    Extended {
        reason: &'a str,
        previous_expires_at: Timestamp,
        expires_at: Timestamp,
    },
}

/// `permit.check`: the outcome and the processing asked about.
#[derive(Debug, Serialize)]
pub struct PermitChecked<'a> {
    pub allowed: bool,
    pub reasons: &'a [DenyReason],
    pub purpose: Purpose,
    pub categories: &'a [DataCategory],
    pub data_holders: &'a [OrgId],
    pub epsilon: Option<f64>,
}

/// `statistics.request`: a run dispatched to the holders.
#[derive(Debug, Serialize)]
pub struct StatisticsRequested<'a> {
    pub statistic: &'a str,
    pub application_id: Option<ApplicationId>,
    pub data_holders: &'a [OrgId],
    pub registry_version: i64,
    /// ε charged to the permit (differential privacy), if any.
    pub epsilon: Option<f64>,
}

/// `node.statistics.result`: a holder's part arrived (its values stay with the gateway).
#[derive(Debug, Serialize)]
pub struct StatisticsContributed {
    pub run_id: StatisticsRunId,
    pub registry_version: i64,
}

/// `statistics.complete`: the partials pooled and the output checked.
#[derive(Debug, Serialize)]
pub struct StatisticsCompleted<'a> {
    pub status: &'a str,
    pub holders_answered: usize,
    pub holders_missing: &'a [OrgId],
    pub flags: &'a [String],
}

/// `statistics.review`: an officer released or withheld a flagged answer.
#[derive(Debug, Serialize)]
pub struct StatisticsReviewed<'a> {
    pub decision: &'a str,
    pub justification: &'a str,
}

/// `optout.register`.
#[derive(Debug, Serialize)]
pub struct OptOutRegistered<'a> {
    pub registry_version: i64,
    pub effective_at: Timestamp,
    pub channel: &'a str,
}

/// `optout.withdraw`.
#[derive(Debug, Serialize)]
pub struct OptOutWithdrawn {
    pub registry_version: i64,
    pub effective_at: Timestamp,
}

/// `optout.import`.
#[derive(Debug, Serialize)]
pub struct OptOutsImported<'a> {
    pub format: &'a str,
    pub registered: usize,
    pub withdrawn: usize,
    pub unchanged: usize,
    pub registry_version: i64,
}

/// `optout.filter`: which registry state was applied, and how many subjects were left out
/// (never which).
#[derive(Debug, Serialize)]
pub struct OptOutsFiltered {
    pub registry_version: i64,
    pub reference_time: Timestamp,
    pub policy: FilterPolicy,
    pub exception_applied: bool,
    pub checked: usize,
    pub excluded: usize,
}

/// `optout.filter` by the match protocol (`POST /v1/opt-outs/match`): the registry state
/// applied and how many elements were evaluated and sent. The gateway never learns which of
/// the holder's subjects were left out, nor how many.
#[derive(Debug, Serialize)]
pub struct OptOutsMatched {
    pub registry_version: i64,
    pub reference_time: Timestamp,
    pub policy: FilterPolicy,
    pub exception_applied: bool,
    /// Blinded elements the holder sent (its cohort padded, so an upper bound).
    pub evaluated: usize,
    /// Opted-out subjects in the permit's scope, before padding.
    pub in_scope: usize,
    /// Entries sent, with padding.
    pub sent: usize,
    /// In-scope opt-outs without a match key (registered before match keys were kept).
    pub unmatchable: usize,
}

/// `audit.read`: the exact span an export returns.
#[derive(Debug, Serialize)]
pub struct AuditExported {
    pub returned: u64,
    pub format: String,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
}

/// `audit.verify`.
#[derive(Debug, Serialize)]
pub struct ChainVerified<'a> {
    pub valid: bool,
    pub entries_checked: u64,
    pub first_bad: Option<&'a FirstBadEntry>,
}

/// `audit.proof`: which checkpoint or proof of the verifiable log was served. A checkpoint
/// covers the tree up to and including its own entry.
#[derive(Debug, Serialize)]
pub struct LogProofServed {
    pub proof: &'static str,
    pub index: Option<u64>,
    pub from: Option<u64>,
    pub size: Option<u64>,
}

/// `study.create`.
#[derive(Debug, Serialize)]
pub struct StudyCreated<'a> {
    pub title: &'a str,
    pub purpose: Purpose,
    pub categories: &'a [DataCategory],
    pub data_holders: &'a [OrgId],
    pub strategy: &'a str,
    pub rounds: u64,
    pub dp: &'a DpPlan,
    pub epsilon_planned: f64,
    pub reproducible_noise: bool,
}

/// `study.read` of one of a study's views.
#[derive(Debug, Serialize)]
pub struct StudyViewed {
    pub view: &'static str,
}

/// A study paused or ended before its plan ran out: `study.cancel` (by its researcher),
/// `study.suspend` and `study.stop` (by the round loop, when the permit stopped covering it).
#[derive(Debug, Serialize)]
pub struct StudyHalted<'a> {
    pub reason: &'a str,
    pub discarded_round: Option<u64>,
    pub rounds_done: u64,
}

/// `study.model`: the release of the final aggregate (an export).
#[derive(Debug, Serialize)]
pub struct ModelReleased<'a> {
    pub round: u64,
    pub digest: &'a str,
    pub bytes: usize,
    pub epsilon_spent: f64,
    pub sites: usize,
    /// The study's DP level; `none` records that no formal DP was applied to the model.
    pub dp: DpLevel,
    /// Why this round's model: `best_validation` or `last` (entries before the choice existed
    /// lack the key and released the last round).
    pub selection: ModelRelease,
    /// Example-weighted validation loss of the released model, where holders evaluated it.
    pub validation_loss: Option<f64>,
}

/// `node.tasks`: the tasks handed to a node.
#[derive(Debug, Serialize)]
pub struct TasksDelivered {
    pub delivered: Vec<String>,
}

/// `node.task.parameters`: the parameters a node downloaded.
#[derive(Debug, Serialize)]
pub struct ParametersSent {
    pub study: StudyId,
    pub round: u64,
    pub bytes: usize,
}

/// `node.task.secagg`: a node's secure-aggregation message, accepted by the relay (its stage
/// only: the message itself holds keys, ciphertexts or a masked vector).
#[derive(Debug, Serialize)]
pub struct SecaggMessageAccepted<'a> {
    pub study: StudyId,
    pub round: u64,
    pub stage: &'a str,
}

/// `study.round.secagg`: a secure-aggregation stage of a round closed, with how many holders
/// the next stage waits for.
#[derive(Debug, Serialize)]
pub struct SecaggStageClosed<'a> {
    pub round: u64,
    pub attempt: u32,
    pub stage: &'a str,
    pub continuing: usize,
}

/// `node.task.result`: the result a node delivered (counts only).
#[derive(Debug, Serialize)]
pub struct ResultAccepted<'a> {
    pub study: StudyId,
    pub round: u64,
    pub kind: &'a str,
    pub num_examples: u64,
    pub excluded_subjects: u64,
    pub bytes: Option<usize>,
}

// ---------------------------------------------------------------------------------------------
// System events.

/// `permit.expire`.
#[derive(Debug, Serialize)]
pub struct PermitExpired {
    pub expires_at: Timestamp,
}

/// `system.noise_keys_sealed`.
#[derive(Debug, Serialize)]
pub struct NoiseKeysSealed {
    pub studies: usize,
}

/// `study.fail`.
#[derive(Debug, Serialize)]
pub struct StudyFailed<'a> {
    pub reason: &'a str,
}

/// `study.resume`.
#[derive(Debug, Serialize)]
pub struct StudyResumed {
    pub next_round: u64,
}

/// `study.round.start`.
#[derive(Debug, Serialize)]
pub struct RoundStarted<'a> {
    pub round: u64,
    pub attempt: u32,
    pub participants: &'a [OrgId],
    pub registry_version: i64,
    pub epsilon_round: f64,
    pub epsilon_remaining: f64,
    pub deadline: Timestamp,
}

/// `study.round.fail`: the round could not aggregate (a missed quorum, a stopped secure
/// aggregation, FLTrust without its root update).
#[derive(Debug, Serialize)]
pub struct RoundFailed<'a> {
    pub round: u64,
    pub attempt: u32,
    pub reason: Option<&'a str>,
    pub study_status: &'a str,
}

/// `study.round.refuse` before a round opens (or before the evaluation): every reason.
#[derive(Debug, Serialize)]
pub struct RoundRefused<'a> {
    pub round: u64,
    pub reason: &'a str,
    pub reasons: &'a [RoundRefusal],
}

/// `study.round.refuse` at aggregation: the permit's budget could not pay for the round.
#[derive(Debug, Serialize)]
pub struct RoundUnpaid<'a> {
    pub reason: &'a str,
    pub epsilon_round: f64,
}

/// `study.round.aggregate`.
#[derive(Debug, Serialize)]
pub struct RoundAggregated<'a> {
    pub round: u64,
    pub attempt: u32,
    pub contributors: usize,
    pub missing: usize,
    pub samples: usize,
    pub epsilon_round: f64,
    pub epsilon_total: f64,
    pub permit_epsilon_spent: f64,
    pub clipped_updates: Option<usize>,
    pub model_digest: &'a str,
}

/// `study.evaluate.start`.
#[derive(Debug, Serialize)]
pub struct EvaluationStarted<'a> {
    pub round: u64,
    pub participants: &'a [OrgId],
    pub deadline: Timestamp,
}

/// `study.complete`.
#[derive(Debug, Serialize)]
pub struct StudyCompleted {
    pub rounds: u64,
    pub epsilon_spent: f64,
    pub evaluations: usize,
    pub missing_evaluations: usize,
}

#[cfg(test)]
mod tests {
    //! Each type against the `json!` object it replaced, with the same values: equal values
    //! and, what the hash covers, equal bytes.

    use serde_json::{json, Value};

    use super::*;
    use crate::domain::{
        audit::{ChainProblem, NewAuditEvent},
        study::RoundReason,
        time,
    };

    fn same(typed: impl Serialize, old: Value) {
        let event = NewAuditEvent::success(
            &crate::domain::audit::Actor::system(),
            crate::domain::audit::AuditAction::PermitExpire,
            crate::domain::audit::AuditSubject::AuditLog,
        )
        .details(&typed);
        assert_eq!(event.detail, old);
        assert_eq!(
            serde_json::to_string(&event.detail).unwrap(),
            serde_json::to_string(&old).unwrap()
        );
    }

    fn org(s: &str) -> OrgId {
        OrgId::parse(s).unwrap()
    }

    #[test]
    fn request_details_keep_their_stored_shape() {
        same(Listed { returned: 3 }, json!({ "returned": 3usize }));
        same(
            CatalogueChanged {
                revision: 2,
                identifier: "icu-2024",
                status: "published",
            },
            json!({ "revision": 2, "identifier": "icu-2024", "status": "published" }),
        );
        same(
            Refusal {
                code: "forbidden",
                detail: "no".into(),
                method: "POST",
                path: "/v1/x".into(),
            },
            json!({ "code": "forbidden", "detail": "no", "method": "POST", "path": "/v1/x" }),
        );
        let counts: BTreeMap<&'static str, u64> =
            [("missing_token", 4), ("invalid_token", 1)].into();
        let total: u64 = counts.values().sum();
        same(
            RefusalsSummarised {
                refusals: total,
                by_code: &counts,
                window_seconds: 60,
            },
            json!({ "refusals": total, "by_code": counts, "window_seconds": 60 }),
        );
        let purposes = vec![Purpose::ScientificResearch];
        let categories = vec![DataCategory::EhrData];
        same(
            ApplicationCreated {
                title: "t",
                purposes: &purposes,
                categories: &categories,
            },
            json!({ "title": "t", "purposes": purposes, "categories": categories }),
        );
        for reason in [None, Some("because".to_owned())] {
            same(
                ApplicationDecided {
                    decision: "rejected",
                    reason: reason.as_deref(),
                },
                json!({ "decision": "rejected", "reason": reason }),
            );
        }
        let id = ApplicationId::new();
        let at = time::now();
        same(
            PermitIssued::new(id, at, true, DpRequirement::NoneAllowed),
            json!({ "event": "permit.issued", "application_id": id, "expires_at": at,
                    "optout_exception": true, "dp_requirement": "none_allowed" }),
        );
        let holders = vec![org("hospital-a"), org("hospital-b")];
        let reasons = vec![DenyReason::BudgetExceeded {
            requested: 1.0,
            remaining: 0.5,
        }];
        for epsilon in [None, Some(0.5)] {
            same(
                PermitChecked {
                    allowed: false,
                    reasons: &reasons,
                    purpose: purposes[0],
                    categories: &categories,
                    data_holders: &holders,
                    epsilon,
                },
                json!({ "allowed": false, "reasons": reasons, "purpose": purposes[0],
                        "categories": categories, "data_holders": holders, "epsilon": epsilon }),
            );
        }
        same(
            OptOutRegistered {
                registry_version: 7,
                effective_at: at,
                channel: "api",
            },
            json!({ "registry_version": 7i64, "effective_at": at, "channel": "api" }),
        );
        same(
            OptOutWithdrawn {
                registry_version: 8,
                effective_at: at,
            },
            json!({ "registry_version": 8i64, "effective_at": at }),
        );
        same(
            OptOutsImported {
                format: "application/x-ndjson",
                registered: 3,
                withdrawn: 1,
                unchanged: 0,
                registry_version: 12,
            },
            json!({ "format": "application/x-ndjson", "registered": 3, "withdrawn": 1,
                    "unchanged": 0, "registry_version": 12 }),
        );
        same(
            OptOutsFiltered {
                registry_version: 12,
                reference_time: at,
                policy: FilterPolicy::default(),
                exception_applied: false,
                checked: 10,
                excluded: 2,
            },
            json!({ "registry_version": 12, "reference_time": at, "policy": FilterPolicy::default(),
                    "exception_applied": false, "checked": 10, "excluded": 2 }),
        );
        for (first, last) in [(None, None), (Some(4), Some(9))] {
            same(
                AuditExported {
                    returned: 6,
                    format: "fhir".into(),
                    first_seq: first,
                    last_seq: last,
                },
                json!({ "returned": 6u64, "format": "fhir", "first_seq": first, "last_seq": last }),
            );
        }
        let bad = FirstBadEntry {
            seq: 3,
            problem: ChainProblem::SequenceGap { expected: 2 },
        };
        for first_bad in [None, Some(bad)] {
            same(
                ChainVerified {
                    valid: first_bad.is_none(),
                    entries_checked: 5,
                    first_bad: first_bad.as_ref(),
                },
                json!({ "valid": first_bad.is_none(), "entries_checked": 5u64,
                        "first_bad": first_bad }),
            );
        }
    }

    #[test]
    fn permit_transitions_keep_their_stored_shape() {
        let now = time::now();
        let permit = crate::domain::permit::sample_permit(now);
        let later = now + chrono::Duration::days(400);
        let reason = "non-compliance".to_owned();
        let cases: Vec<(PermitChange, Value)> = vec![
            (
                PermitChange::Suspended { reason: &reason },
                json!({ "reason": reason }),
            ),
            (
                PermitChange::Reinstated { reason: None },
                json!({ "reason": None::<String> }),
            ),
            (
                PermitChange::Reinstated {
                    reason: Some(&reason),
                },
                json!({ "reason": Some(reason.clone()) }),
            ),
            (
                PermitChange::Revoked { reason: &reason },
                json!({ "reason": reason }),
            ),
            (
                PermitChange::Amended {
                    reason: &reason,
                    terms_version: 2,
                    previous_terms: permit.terms(),
                },
                json!({ "reason": reason, "terms_version": 2i64,
                        "previous_terms": permit.terms().clone() }),
            ),
            (
                PermitChange::Extended {
                    reason: &reason,
                    previous_expires_at: permit.record().expires_at,
                    expires_at: later,
                },
                json!({ "reason": reason, "previous_expires_at": permit.record().expires_at,
                        "expires_at": later }),
            ),
        ];
        for (change, old) in cases {
            same(
                PermitTransition {
                    from: 1,
                    to: 2,
                    status: "suspended",
                    change,
                },
                json!({ "from": 1i64, "to": 2i64, "status": "suspended", "change": old }),
            );
        }
    }

    #[test]
    fn study_and_node_details_keep_their_stored_shape() {
        let dp = DpPlan {
            level: crate::domain::study::DpLevel::Client,
            clip_norm: 1.0,
            noise_multiplier: 1.1,
            target_epsilon: None,
            sampling_rate: 1.0,
            steps_per_round: 1,
            delta: 1e-5,
            distributed: None,
        };
        let categories = vec![DataCategory::EhrData];
        let holders = vec![org("hosp-1"), org("hosp-2")];
        for planned in [2.5, f64::NAN] {
            same(
                StudyCreated {
                    title: "t",
                    purpose: Purpose::ScientificResearch,
                    categories: &categories,
                    data_holders: &holders,
                    strategy: "fedavg",
                    rounds: 3,
                    dp: &dp,
                    epsilon_planned: planned,
                    reproducible_noise: true,
                },
                json!({
                    "title": "t", "purpose": Purpose::ScientificResearch,
                    "categories": categories, "data_holders": holders,
                    "strategy": "fedavg", "rounds": 3u64,
                    "dp": dp, "epsilon_planned": planned,
                    "reproducible_noise": true,
                }),
            );
        }
        same(StudyViewed { view: "rounds" }, json!({ "view": "rounds" }));
        for discarded in [None, Some(2u64)] {
            same(
                StudyHalted {
                    reason: "the permit is suspended",
                    discarded_round: discarded,
                    rounds_done: 1,
                },
                json!({ "reason": "the permit is suspended", "discarded_round": discarded,
                        "rounds_done": 1u64 }),
            );
        }
        same(
            ModelReleased {
                round: 3,
                digest: "ab12",
                bytes: 1024,
                epsilon_spent: 2.5,
                sites: 4,
                dp: DpLevel::NoFormalDp,
                selection: ModelRelease::BestValidation,
                validation_loss: Some(0.5),
            },
            json!({ "round": 3u64, "digest": "ab12", "bytes": 1024usize, "epsilon_spent": 2.5,
                    "sites": 4usize, "dp": "none", "selection": "best_validation",
                    "validation_loss": 0.5 }),
        );
        let ids = vec!["a".to_owned(), "b".to_owned()];
        same(
            TasksDelivered {
                delivered: ids.clone(),
            },
            json!({ "delivered": ids }),
        );
        let study = StudyId::new();
        same(
            ParametersSent {
                study,
                round: 2,
                bytes: 99,
            },
            json!({ "study": study, "round": 2u64, "bytes": 99usize }),
        );
        for bytes in [None, Some(512usize)] {
            same(
                ResultAccepted {
                    study,
                    round: 2,
                    kind: "fit",
                    num_examples: 40,
                    excluded_subjects: 2,
                    bytes,
                },
                json!({ "study": study, "round": 2u64, "kind": "fit", "num_examples": 40u64,
                        "excluded_subjects": 2u64, "bytes": bytes }),
            );
        }
    }

    #[test]
    fn system_event_details_keep_their_stored_shape() {
        let at = time::now();
        same(
            PermitExpired { expires_at: at },
            json!({ "expires_at": at }),
        );
        same(NoiseKeysSealed { studies: 2 }, json!({ "studies": 2usize }));
        same(StudyFailed { reason: "boom" }, json!({ "reason": "boom" }));
        same(
            StudyResumed { next_round: 3 },
            json!({ "next_round": 3u64 }),
        );
        let participants = vec![OrgId::parse("hospital-a").unwrap()];
        same(
            RoundStarted {
                round: 1,
                attempt: 2,
                participants: &participants,
                registry_version: 5,
                epsilon_round: 0.25,
                epsilon_remaining: 7.75,
                deadline: at,
            },
            json!({ "round": 1u64, "attempt": 2u32, "participants": participants,
                    "registry_version": 5i64, "epsilon_round": 0.25, "epsilon_remaining": 7.75,
                    "deadline": at }),
        );
        for reason in [
            None,
            Some("1 of 4 results by the deadline; 2 needed".to_owned()),
        ] {
            same(
                RoundFailed {
                    round: 1,
                    attempt: 1,
                    reason: reason.as_deref(),
                    study_status: "running",
                },
                json!({ "round": 1u64, "attempt": 1u32, "reason": reason,
                        "study_status": "running" }),
            );
        }
        let reasons = vec![
            RoundRefusal::Permit(DenyReason::BudgetExceeded {
                requested: 1.0,
                remaining: 0.5,
            }),
            RoundRefusal::Round(RoundReason::PolicyDenied {
                action: "study.run",
            }),
            RoundRefusal::Round(RoundReason::QuorumImpossible {
                permitted_holders: 1,
                min_sites: 2,
            }),
            RoundRefusal::Round(RoundReason::RootHolderRemoved {
                holder: crate::domain::OrgId::parse("va").unwrap(),
            }),
        ];
        same(
            RoundRefused {
                round: 2,
                reason: "the permit no longer covers the study",
                reasons: &reasons,
            },
            json!({ "round": 2u64, "reason": "the permit no longer covers the study",
                    "reasons": reasons }),
        );
        same(
            RoundUnpaid {
                reason: "no budget",
                epsilon_round: 0.5,
            },
            json!({ "reason": "no budget", "epsilon_round": 0.5 }),
        );
        for clipped in [None, Some(3usize)] {
            same(
                RoundAggregated {
                    round: 2,
                    attempt: 1,
                    contributors: 4,
                    missing: 0,
                    samples: 400,
                    epsilon_round: 0.5,
                    epsilon_total: 1.0,
                    permit_epsilon_spent: 1.0,
                    clipped_updates: clipped,
                    model_digest: "cafe",
                },
                json!({ "round": 2u64, "attempt": 1u32, "contributors": 4usize,
                        "missing": 0usize, "samples": 400usize, "epsilon_round": 0.5,
                        "epsilon_total": 1.0, "permit_epsilon_spent": 1.0,
                        "clipped_updates": clipped, "model_digest": "cafe" }),
            );
        }
        same(
            EvaluationStarted {
                round: 3,
                participants: &participants,
                deadline: at,
            },
            json!({ "round": 3u64, "participants": participants, "deadline": at }),
        );
        same(
            StudyCompleted {
                rounds: 3,
                epsilon_spent: 1.5,
                evaluations: 4,
                missing_evaluations: 0,
            },
            json!({ "rounds": 3u64, "epsilon_spent": 1.5, "evaluations": 4usize,
                    "missing_evaluations": 0usize }),
        );
    }
}
