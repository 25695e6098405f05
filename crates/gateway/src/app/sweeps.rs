//! The periodic jobs that make time's effects visible on the record: permits that expired and
//! the deadlines of the procedure on applications, and statistics runs whose holders' time ran out. Validity and deadlines never depend on these
//! sweeps (both are computed from time); the sweeps record what time did, once, and act where
//! the regulation says time acts (an unanswered request for information lapses, Art. 68(4)).

use super::applications::{self, DeadlineSweep, ProcedureRules};
use super::statistics::{self, StatisticsSettings};
use crate::store::Store;
use ehds_core::domain::{
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent},
    audit_details::PermitExpired,
    time,
};

/// Records in the audit trail every expiry that time has made effective.
#[tracing::instrument(name = "Sweeping expired permits", skip_all)]
pub async fn sweep_expired(store: &dyn Store) -> anyhow::Result<usize> {
    let now = time::now();
    let mut tx = store.begin().await?;
    let lapsed = tx.list_lapsed_permits(now).await?;
    for mut permit in lapsed.iter().cloned() {
        let before = permit.row_version();
        if permit.record_expiry(now) {
            tx.update_permit(&permit, before).await?;
            tx.append_audit(
                NewAuditEvent::success(
                    &Actor::system(),
                    AuditAction::PermitExpire,
                    AuditSubject::Permit(permit.id()),
                )
                .permit(permit.id())
                .details(&PermitExpired {
                    expires_at: permit.record().expires_at,
                }),
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(lapsed.len())
}

/// Acts on the passed deadlines of the procedure, in one transaction.
pub async fn sweep_application_deadlines(
    store: &dyn Store,
    rules: &ProcedureRules,
) -> anyhow::Result<DeadlineSweep> {
    let mut tx = store.begin().await?;
    let done = applications::sweep_deadlines(&mut *tx, rules, time::now()).await?;
    tx.commit().await?;
    Ok(done)
}

/// Answers every statistics run whose holders' deadline passed with what arrived, in one
/// transaction.
pub async fn sweep_statistics(
    store: &dyn Store,
    settings: &StatisticsSettings,
) -> anyhow::Result<usize> {
    let mut tx = store.begin().await?;
    let done = statistics::sweep(&mut *tx, settings, time::now()).await?;
    tx.commit().await?;
    Ok(done)
}

/// Every sweep, in turn.
pub async fn sweep(store: &dyn Store, rules: &ProcedureRules) -> anyhow::Result<()> {
    sweep_expired(store).await?;
    sweep_application_deadlines(store, rules).await?;
    sweep_statistics(store, &rules.statistics).await?;
    Ok(())
}
