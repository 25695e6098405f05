//! Federated studies at the gateway: the round loop that drives every live study through
//! governance, task dispatch, collection and DP aggregation ([`rounds`]). What travels to and
//! from the data-holder nodes (`ehds_core::wire`) and the parameters and messages of secure
//! aggregation (`ehds_core::secure_aggregation`) are the vocabulary shared with the nodes.

pub mod engine;
pub mod fleet;
pub mod parameter_files;
pub mod rounds;

use std::{sync::Arc, time::Duration};

use crate::{
    authz::Authorizer,
    configuration::FederationSettings,
    store::{Store, StoreError},
};
use ehds_core::domain::{
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent, Outcome},
    audit_details::StudyFailed,
    time, StudyId,
};
use fleet::Fleet;
pub use fleet::Signal;
use rounds::Step;

/// A committed change the round loop or the nodes' long polls wait for ([`Federation::changed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A study was submitted or cancelled.
    Study,
    /// A permit was suspended, reinstated, revoked, amended or extended.
    Permit,
    /// A holder's result was accepted.
    NodeResult,
    /// A holder's secure-aggregation message was accepted.
    SecaggMessage,
    /// A statistics run was started: its holders' nodes learn of it.
    Statistics,
}

/// The round loop's view of the gateway.
pub struct Federation {
    pub store: Arc<dyn Store>,
    pub authz: Arc<Authorizer>,
    pub settings: FederationSettings,
    /// Seals the study noise keys kept in the database.
    pub vault: Arc<crate::secret::KeyVault>,
    /// The other replicas on the database: the signals that wake this process's waiters
    /// (the round loop, the nodes' long polls, secure-aggregation stages, event streams)
    /// and the leases on work done once.
    pub fleet: Arc<Fleet>,
    /// The parameter file of each recent round, built once for all its holders.
    pub parameter_files: parameter_files::ParameterFiles,
}

impl Federation {
    pub fn new(
        store: Arc<dyn Store>,
        authz: Arc<Authorizer>,
        settings: FederationSettings,
        vault: Arc<crate::secret::KeyVault>,
    ) -> Self {
        Self {
            fleet: Arc::new(Fleet::new(
                store.clone(),
                Duration::from_secs(settings.lease_seconds),
            )),
            store,
            authz,
            settings,
            vault,
            parameter_files: Default::default(),
        }
    }

    /// Wakes whoever waits on `change`, which a service reports once its transaction has
    /// committed: the one place that decides who learns of what. The round loop also runs at
    /// every tick (`federation.tick_millis`), so a wake-up only makes it act sooner.
    pub fn changed(&self, change: Change) {
        match change {
            // the loop opens a submitted study's first round; a cancelled study's tasks closed,
            // so the nodes' long polls answer at once
            Change::Study => {
                self.signal(Signal::RoundLoop);
                self.signal(Signal::Tasks);
            }
            // governance runs first in every step: a revoked or suspended permit stops or pauses
            // its studies and discards the round in flight, a reinstated one resumes them
            Change::Permit | Change::NodeResult | Change::SecaggMessage => {
                self.signal(Signal::RoundLoop)
            }
            // a node's loop asks for statistics tasks when its long poll for tasks answers
            Change::Statistics => self.signal(Signal::Tasks),
        }
    }

    /// Wakes the waiters for `signal` in this replica and the others.
    pub fn signal(&self, signal: Signal) {
        self.fleet.signal(signal);
    }

    /// Drives every live study until none can progress; returns how many transitions ran.
    pub async fn drive_all(&self) -> anyhow::Result<usize> {
        let ids = {
            let mut tx = self.store.read().await?;
            tx.live_study_ids().await?
        };
        let mut steps = 0;
        for id in ids {
            // the replica holding the study's lease drives it; the others only wake it
            if self.fleet.hold(&study_lease(id)).await? {
                steps += self.drive(id).await;
            }
        }
        Ok(steps)
    }

    async fn drive(&self, id: StudyId) -> usize {
        let mut steps = 0;
        loop {
            match rounds::advance(self, id).await {
                // renewed before the next step: a replica that stalled past its lease stops
                // driving the study another replica took over
                Ok(Step::Progressed)
                    if !matches!(self.fleet.hold(&study_lease(id)).await, Ok(true)) =>
                {
                    return steps + 1
                }
                Ok(Step::Progressed) => steps += 1,
                Ok(Step::Waiting | Step::Done) => return steps,
                Err(e) if matches!(e.downcast_ref::<StoreError>(), Some(StoreError::Conflict)) => {
                    // another request or replica changed the study first; look again next tick
                    return steps;
                }
                Err(e) if e.downcast_ref::<fl_engine::EngineError>().is_some() => {
                    tracing::error!(study = %id, error = %e, "the engine refused a round; failing the study");
                    if let Err(e2) = self.fail(id, &e.to_string()).await {
                        tracing::error!(study = %id, error = %e2, "could not record the failure");
                    }
                    return steps;
                }
                Err(e) => {
                    tracing::error!(study = %id, error = ?e, "round loop step failed");
                    return steps;
                }
            }
        }
    }

    async fn fail(&self, id: StudyId, reason: &str) -> anyhow::Result<()> {
        let now = time::now();
        let mut tx = self.store.begin().await?;
        let Some(mut study) = tx.get_study(id).await? else {
            return Ok(());
        };
        let version = study.row_version;
        if study.fail(reason.to_owned(), now).is_err() {
            return Ok(());
        }
        if let Some(round) = tx.open_round(id).await? {
            rounds::close_open_round(
                &mut *tx,
                round,
                ehds_core::domain::study::RoundPhase::Failed,
                reason,
                now,
            )
            .await?;
        }
        tx.update_study(&study, version).await?;
        let mut event = NewAuditEvent::success(
            &Actor::system(),
            AuditAction::StudyFail,
            AuditSubject::Study(id),
        )
        .permit(study.spec.permit_id)
        .details(&StudyFailed { reason });
        event.outcome = Outcome::Failure;
        tx.append_audit(event).await?;
        tx.commit().await?;
        self.signal(Signal::Tasks);
        Ok(())
    }

    /// Runs the loop until the process stops: on every wake-up and at least every tick.
    pub async fn run(self: Arc<Self>) {
        let tick = Duration::from_millis(self.settings.tick_millis.max(10));
        loop {
            if let Err(e) = self.drive_all().await {
                tracing::error!(error = ?e, "round loop failed");
            }
            tokio::select! {
                _ = self.fleet.waiters.round_loop.notified() => {},
                _ = tokio::time::sleep(tick) => {},
            }
        }
    }
}

/// The lease on a study's round loop.
fn study_lease(id: StudyId) -> String {
    format!("study:{id}")
}
