//! The SQL of the `Tx` interface, written once for both backends. Queries use `$n` placeholders,
//! which PostgreSQL and sqlx's SQLite driver both accept; column types differ only in the
//! migrations.

/// The task columns every task read needs: all but the stored update, which only the
/// aggregation reads (`task_result`), so that listing a round's N tasks does not load N models.
macro_rules! task_columns {
    () => {
        "task_id, study_id, round_id, round, kind, data_holder, status, created_at, deadline, completed_at, report"
    };
}
pub(crate) use task_columns;

macro_rules! impl_tx {
    ($tx:ty, $db:ty) => {
        mod rows {
            use sqlx::{types::Json, Row};
            use uuid::Uuid;

            use ehds_core::domain::{
                audit::{Actor, AuditEntry, Outcome},
                optout::{OptOutEvent, OptOutEventKind},
                permit::{PermitRecord, PermitState},
                Application, ApplicationId, ApplicationStatus, MemberState, OptOutId, OrgId, Permit, PermitId,
            };
            use crate::store::{PermitVersion, Result, StoreError};

            type DbRow = <$db as sqlx::Database>::Row;

            fn corrupt(what: &str) -> StoreError {
                StoreError::Corrupt(what.to_owned())
            }

            pub fn application(r: &DbRow) -> Result<Application> {
                let status: String = r.try_get("status")?;
                Ok(Application {
                    id: ApplicationId(r.try_get("application_id")?),
                    applicant_sub: r.try_get("applicant_sub")?,
                    status: ApplicationStatus::parse(&status).ok_or_else(|| corrupt("application status"))?,
                    submitted_at: r.try_get("submitted_at")?,
                    decided_at: r.try_get("decided_at")?,
                    decided_by: r.try_get("decided_by")?,
                    decision_reason: r.try_get("decision_reason")?,
                    permit_id: r.try_get::<Option<Uuid>, _>("permit_id")?.map(PermitId),
                    request: r.try_get::<Json<_>, _>("request")?.0,
                })
            }

            pub fn permit(r: &DbRow) -> Result<Permit> {
                let status: String = r.try_get("status")?;
                let since: Option<chrono::DateTime<chrono::Utc>> = r.try_get("status_since")?;
                let reason: Option<String> = r.try_get("status_reason")?;
                let expires_at: chrono::DateTime<chrono::Utc> = r.try_get("expires_at")?;
                let state = match status.as_str() {
                    "active" => PermitState::Active,
                    "suspended" => PermitState::Suspended {
                        since: since.ok_or_else(|| corrupt("suspension time"))?,
                        reason: reason.unwrap_or_default(),
                    },
                    "revoked" => PermitState::Revoked {
                        at: since.ok_or_else(|| corrupt("revocation time"))?,
                        reason: reason.unwrap_or_default(),
                    },
                    "expired" => PermitState::Expired { at: since.unwrap_or(expires_at) },
                    _ => return Err(corrupt("permit status")),
                };
                let organisation: String = r.try_get("organisation")?;
                Ok(Permit::restore(PermitRecord {
                    id: PermitId(r.try_get("permit_id")?),
                    application_id: ApplicationId(r.try_get("application_id")?),
                    organisation: OrgId::parse(&organisation).map_err(|_| corrupt("organisation"))?,
                    principal_investigator: r.try_get("principal_investigator")?,
                    public_body: r.try_get("public_body")?,
                    issued_at: r.try_get("issued_at")?,
                    valid_from: r.try_get("valid_from")?,
                    expires_at,
                    extended_at: r.try_get("extended_at")?,
                    state,
                    terms: r.try_get::<Json<_>, _>("terms")?.0,
                    terms_version: r.try_get("terms_version")?,
                    row_version: r.try_get("row_version")?,
                    epsilon_spent: r.try_get("epsilon_spent")?,
                }))
            }

            pub fn permit_version(r: &DbRow) -> Result<PermitVersion> {
                Ok(PermitVersion {
                    terms_version: r.try_get("terms_version")?,
                    terms: r.try_get::<Json<_>, _>("terms")?.0,
                    recorded_at: r.try_get("recorded_at")?,
                    recorded_by: r.try_get("recorded_by")?,
                    reason: r.try_get("reason")?,
                })
            }

            pub fn optout(r: &DbRow) -> Result<OptOutEvent> {
                let kind: String = r.try_get("kind")?;
                let state: String = r.try_get("member_state")?;
                Ok(OptOutEvent {
                    seq: r.try_get("seq")?,
                    record_id: OptOutId(r.try_get("record_id")?),
                    subject_key: r.try_get("subject_key")?,
                    kind: OptOutEventKind::parse(&kind).ok_or_else(|| corrupt("opt-out kind"))?,
                    scope: r.try_get("scope")?,
                    member_state: MemberState::parse(&state).map_err(|_| corrupt("member state"))?,
                    effective_at: r.try_get("effective_at")?,
                    recorded_at: r.try_get("recorded_at")?,
                    channel: r.try_get("channel")?,
                })
            }

            /// Decodes an audit row as stored, without judging it: verification is the chain's job,
            /// so even a tampered row must decode.
            pub fn audit(r: &DbRow) -> Result<AuditEntry> {
                let roles: String = r.try_get("actor_roles")?;
                let outcome: String = r.try_get("outcome")?;
                let detail: String = r.try_get("detail")?;
                let status: Option<i32> = r.try_get("http_status")?;
                Ok(AuditEntry {
                    seq: r.try_get("seq")?,
                    id: r.try_get("event_id")?,
                    recorded_at: r.try_get("recorded_at")?,
                    timestamp_stored_canonically: crate::store::StoredForm::recorded_at_canonical(r)?,
                    actor: Actor {
                        sub: r.try_get("actor_sub")?,
                        roles: serde_json::from_str(&roles).unwrap_or_else(|_| vec![roles.clone()]),
                        organisation: r.try_get("actor_organisation")?,
                    },
                    action: r.try_get("action")?,
                    outcome: Outcome::parse(&outcome).unwrap_or(Outcome::Failure),
                    resource_type: r.try_get("resource_type")?,
                    resource_id: r.try_get("resource_id")?,
                    permit_id: r.try_get("permit_id")?,
                    request_id: r.try_get("request_id")?,
                    http_status: status.and_then(|s| u16::try_from(s).ok()),
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
                    prev_hash: r.try_get("prev_hash")?,
                    hash: r.try_get("hash")?,
                })
            }

            pub fn study(r: &DbRow) -> Result<ehds_core::domain::study::Study> {
                use ehds_core::domain::study::{Study, StudyStatus};
                let status: String = r.try_get("status")?;
                let organisation: String = r.try_get("organisation")?;
                Ok(Study::restore(
                    ehds_core::domain::StudyId(r.try_get("study_id")?),
                    OrgId::parse(&organisation).map_err(|_| corrupt("organisation"))?,
                    r.try_get("researcher_sub")?,
                    r.try_get::<Json<_>, _>("spec")?.0,
                    StudyStatus::parse(&status).ok_or_else(|| corrupt("study status"))?,
                    r.try_get("status_reason")?,
                    r.try_get("created_at")?,
                    r.try_get("updated_at")?,
                    r.try_get::<i64, _>("rounds_done")? as u64,
                    r.try_get("epsilon_spent")?,
                    r.try_get("row_version")?,
                ))
            }

            pub fn checkpoint(r: &DbRow) -> Result<ehds_core::domain::study::Checkpoint> {
                Ok(ehds_core::domain::study::Checkpoint {
                    study_id: ehds_core::domain::StudyId(r.try_get("study_id")?),
                    round: r.try_get::<i64, _>("round")? as u64,
                    global: r.try_get("global_model")?,
                    server_state: r.try_get::<Json<_>, _>("server_state")?.0,
                    accountant: r.try_get::<Json<_>, _>("accountant")?.0,
                })
            }

            pub fn round(r: &DbRow) -> Result<ehds_core::domain::study::Round> {
                use ehds_core::domain::study::{Round, RoundPhase};
                let phase: String = r.try_get("phase")?;
                Ok(Round {
                    id: ehds_core::domain::RoundId(r.try_get("round_id")?),
                    study_id: ehds_core::domain::StudyId(r.try_get("study_id")?),
                    round: r.try_get::<i64, _>("round")? as u64,
                    attempt: u32::try_from(r.try_get::<i64, _>("attempt")?).map_err(|_| corrupt("attempt"))?,
                    phase: RoundPhase::parse(&phase).ok_or_else(|| corrupt("round phase"))?,
                    registry_version: r.try_get("registry_version")?,
                    participants: r.try_get::<Json<_>, _>("participants")?.0,
                    opened_at: r.try_get("opened_at")?,
                    deadline: r.try_get("deadline")?,
                    closed_at: r.try_get("closed_at")?,
                    reason: r.try_get("reason")?,
                    epsilon_round: r.try_get("epsilon_round")?,
                    epsilon_total: r.try_get("epsilon_total")?,
                    summary: r.try_get::<Json<_>, _>("summary")?.0,
                })
            }

            pub fn task(r: &DbRow) -> Result<ehds_core::domain::study::Task> {
                use ehds_core::domain::study::{Task, TaskKind, TaskStatus};
                let kind: String = r.try_get("kind")?;
                let status: String = r.try_get("status")?;
                let holder: String = r.try_get("data_holder")?;
                Ok(Task {
                    id: ehds_core::domain::TaskId(r.try_get("task_id")?),
                    study_id: ehds_core::domain::StudyId(r.try_get("study_id")?),
                    round_id: ehds_core::domain::RoundId(r.try_get("round_id")?),
                    round: r.try_get::<i64, _>("round")? as u64,
                    kind: TaskKind::parse(&kind).ok_or_else(|| corrupt("task kind"))?,
                    data_holder: OrgId::parse(&holder).map_err(|_| corrupt("data holder"))?,
                    status: TaskStatus::parse(&status).ok_or_else(|| corrupt("task status"))?,
                    created_at: r.try_get("created_at")?,
                    deadline: r.try_get("deadline")?,
                    completed_at: r.try_get("completed_at")?,
                    report: r.try_get::<Option<Json<_>>, _>("report")?.map(|j| j.0),
                })
            }
        }

        #[async_trait::async_trait]
        impl crate::store::Tx for $tx {
            async fn insert_application(&mut self, app: &ehds_core::domain::Application) -> crate::store::Result<()> {
                sqlx::query(
                    "insert into application (application_id, organisation, applicant_sub, status, submitted_at, \
                     decided_at, decided_by, decision_reason, permit_id, request) \
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(app.id.0)
                .bind(app.request.organisation.as_str())
                .bind(&app.applicant_sub)
                .bind(app.status.as_str())
                .bind(app.submitted_at)
                .bind(app.decided_at)
                .bind(&app.decided_by)
                .bind(&app.decision_reason)
                .bind(app.permit_id.map(|p| p.0))
                .bind(sqlx::types::Json(&app.request))
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn get_application(&mut self, id: ehds_core::domain::ApplicationId)
                -> crate::store::Result<Option<ehds_core::domain::Application>> {
                let row = sqlx::query("select * from application where application_id = $1")
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::application).transpose()
            }

            async fn list_applications(&mut self, scope: &crate::store::Scope, page: crate::store::Page)
                -> crate::store::Result<Vec<ehds_core::domain::Application>> {
                let mut q = sqlx::QueryBuilder::<$db>::new("select * from application");
                match scope {
                    crate::store::Scope::All => {}
                    crate::store::Scope::Nothing => { q.push(" where 1 = 0"); }
                    crate::store::Scope::Organisation(o) | crate::store::Scope::DataHolder(o) => {
                        q.push(" where organisation = ").push_bind(o.as_str().to_owned());
                    }
                }
                q.push(" order by submitted_at desc, application_id limit ").push_bind(page.limit)
                    .push(" offset ").push_bind(page.offset);
                let found = q.build().fetch_all(&mut *self.tx).await?;
                found.iter().map(rows::application).collect()
            }

            async fn update_application(&mut self, app: &ehds_core::domain::Application) -> crate::store::Result<()> {
                let done = sqlx::query(
                    "update application set status = $2, decided_at = $3, decided_by = $4, \
                     decision_reason = $5, permit_id = $6 where application_id = $1 and status = 'submitted'",
                )
                .bind(app.id.0)
                .bind(app.status.as_str())
                .bind(app.decided_at)
                .bind(&app.decided_by)
                .bind(&app.decision_reason)
                .bind(app.permit_id.map(|p| p.0))
                .execute(&mut *self.tx)
                .await?;
                if done.rows_affected() == 1 { Ok(()) } else { Err(crate::store::StoreError::Conflict) }
            }

            async fn insert_permit(&mut self, permit: &ehds_core::domain::Permit, by: &str, now: ehds_core::domain::time::Timestamp)
                -> crate::store::Result<()> {
                let r = permit.record();
                let (since, reason) = state_columns(&r.state);
                sqlx::query(
                    "insert into permit (permit_id, application_id, organisation, principal_investigator, public_body, \
                     issued_at, valid_from, expires_at, extended_at, status, status_since, status_reason, terms, \
                     terms_version, row_version, epsilon_spent) \
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                )
                .bind(r.id.0)
                .bind(r.application_id.0)
                .bind(r.organisation.as_str())
                .bind(&r.principal_investigator)
                .bind(r.public_body)
                .bind(r.issued_at)
                .bind(r.valid_from)
                .bind(r.expires_at)
                .bind(r.extended_at)
                .bind(r.state.name())
                .bind(since)
                .bind(reason)
                .bind(sqlx::types::Json(&r.terms))
                .bind(r.terms_version)
                .bind(r.row_version)
                .bind(r.epsilon_spent)
                .execute(&mut *self.tx)
                .await?;
                self.sync_data_holders(permit).await?;
                self.insert_permit_version(permit, by, None, now).await
            }

            async fn get_permit(&mut self, id: ehds_core::domain::PermitId)
                -> crate::store::Result<Option<ehds_core::domain::Permit>> {
                let row = sqlx::query("select * from permit where permit_id = $1")
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::permit).transpose()
            }

            async fn list_permits(&mut self, scope: &crate::store::Scope, page: crate::store::Page)
                -> crate::store::Result<Vec<ehds_core::domain::Permit>> {
                let mut q = sqlx::QueryBuilder::<$db>::new("select * from permit");
                match scope {
                    crate::store::Scope::All => {}
                    crate::store::Scope::Nothing => { q.push(" where 1 = 0"); }
                    crate::store::Scope::Organisation(o) => {
                        q.push(" where organisation = ").push_bind(o.as_str().to_owned());
                    }
                    crate::store::Scope::DataHolder(o) => {
                        q.push(" where permit_id in (select permit_id from permit_data_holder where data_holder = ")
                            .push_bind(o.as_str().to_owned())
                            .push(")");
                    }
                }
                q.push(" order by issued_at desc, permit_id limit ").push_bind(page.limit)
                    .push(" offset ").push_bind(page.offset);
                let found = q.build().fetch_all(&mut *self.tx).await?;
                found.iter().map(rows::permit).collect()
            }

            async fn list_lapsed_permits(&mut self, now: ehds_core::domain::time::Timestamp)
                -> crate::store::Result<Vec<ehds_core::domain::Permit>> {
                let found = sqlx::query(
                    "select * from permit where status in ('active', 'suspended') and expires_at <= $1 order by expires_at",
                )
                .bind(now)
                .fetch_all(&mut *self.tx)
                .await?;
                found.iter().map(rows::permit).collect()
            }

            async fn update_permit(&mut self, permit: &ehds_core::domain::Permit, expected_row_version: i64)
                -> crate::store::Result<()> {
                let r = permit.record();
                let (since, reason) = state_columns(&r.state);
                let done = sqlx::query(
                    "update permit set expires_at = $3, extended_at = $4, status = $5, status_since = $6, \
                     status_reason = $7, terms = $8, terms_version = $9, row_version = $10, epsilon_spent = $11 \
                     where permit_id = $1 and row_version = $2",
                )
                .bind(r.id.0)
                .bind(expected_row_version)
                .bind(r.expires_at)
                .bind(r.extended_at)
                .bind(r.state.name())
                .bind(since)
                .bind(reason)
                .bind(sqlx::types::Json(&r.terms))
                .bind(r.terms_version)
                .bind(r.row_version)
                .bind(r.epsilon_spent)
                .execute(&mut *self.tx)
                .await?;
                if done.rows_affected() != 1 {
                    return Err(crate::store::StoreError::Conflict);
                }
                self.sync_data_holders(permit).await
            }

            async fn insert_permit_version(&mut self, permit: &ehds_core::domain::Permit, by: &str, reason: Option<&str>,
                now: ehds_core::domain::time::Timestamp) -> crate::store::Result<()> {
                let r = permit.record();
                sqlx::query(
                    "insert into permit_version (permit_id, terms_version, terms, recorded_at, recorded_by, reason) \
                     values ($1, $2, $3, $4, $5, $6)",
                )
                .bind(r.id.0)
                .bind(r.terms_version)
                .bind(sqlx::types::Json(&r.terms))
                .bind(now)
                .bind(by)
                .bind(reason)
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn list_permit_versions(&mut self, id: ehds_core::domain::PermitId)
                -> crate::store::Result<Vec<crate::store::PermitVersion>> {
                let found = sqlx::query("select * from permit_version where permit_id = $1 order by terms_version")
                    .bind(id.0)
                    .fetch_all(&mut *self.tx)
                    .await?;
                found.iter().map(rows::permit_version).collect()
            }

            async fn append_optout(&mut self, e: ehds_core::domain::optout::NewOptOutEvent)
                -> crate::store::Result<ehds_core::domain::optout::OptOutEvent> {
                self.order_writes().await?;
                let row = sqlx::query(
                    "insert into optout_event (record_id, subject_key, kind, scope, member_state, effective_at, \
                     recorded_at, channel) values ($1, $2, $3, $4, $5, $6, $7, $8) returning *",
                )
                .bind(e.record_id.0)
                .bind(&e.subject_key)
                .bind(e.kind.as_str())
                .bind(ehds_core::domain::optout::SCOPE_ALL_SECONDARY_USE)
                .bind(e.member_state.as_str())
                .bind(e.effective_at)
                .bind(e.recorded_at)
                .bind(&e.channel)
                .fetch_one(&mut *self.tx)
                .await?;
                rows::optout(&row)
            }

            async fn optout_record(&mut self, id: ehds_core::domain::OptOutId)
                -> crate::store::Result<Vec<ehds_core::domain::optout::OptOutEvent>> {
                let found = sqlx::query("select * from optout_event where record_id = $1 order by seq")
                    .bind(id.0)
                    .fetch_all(&mut *self.tx)
                    .await?;
                found.iter().map(rows::optout).collect()
            }

            async fn optout_events_for(&mut self, subject_keys: &[String], max_seq: i64)
                -> crate::store::Result<Vec<ehds_core::domain::optout::OptOutEvent>> {
                let mut out = Vec::new();
                for chunk in subject_keys.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$db>::new("select * from optout_event where seq <= ");
                    q.push_bind(max_seq).push(" and subject_key in (");
                    let mut list = q.separated(", ");
                    for k in chunk {
                        list.push_bind(k.clone());
                    }
                    q.push(") order by seq");
                    let found = q.build().fetch_all(&mut *self.tx).await?;
                    for r in &found {
                        out.push(rows::optout(r)?);
                    }
                }
                Ok(out)
            }

            async fn optout_registry_version(&mut self) -> crate::store::Result<i64> {
                let v: Option<i64> = sqlx::query_scalar("select max(seq) from optout_event")
                    .fetch_one(&mut *self.tx)
                    .await?;
                Ok(v.unwrap_or(0))
            }

            async fn insert_study(&mut self, s: &ehds_core::domain::study::Study, noise_key: &[u8]) -> crate::store::Result<()> {
                sqlx::query(
                    "insert into study (study_id, permit_id, organisation, researcher_sub, spec, status, status_reason, \
                     created_at, updated_at, rounds_done, epsilon_spent, row_version, noise_key) \
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                )
                .bind(s.id.0)
                .bind(s.spec.permit_id.0)
                .bind(s.organisation.as_str())
                .bind(&s.researcher_sub)
                .bind(sqlx::types::Json(&s.spec))
                .bind(s.status().as_str())
                .bind(&s.status_reason)
                .bind(s.created_at)
                .bind(s.updated_at)
                .bind(s.rounds_done as i64)
                .bind(s.epsilon_spent)
                .bind(s.row_version)
                .bind(noise_key)
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn get_study(&mut self, id: ehds_core::domain::StudyId)
                -> crate::store::Result<Option<ehds_core::domain::study::Study>> {
                let row = sqlx::query("select * from study where study_id = $1")
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::study).transpose()
            }

            async fn list_studies(&mut self, scope: &crate::store::Scope, page: crate::store::Page)
                -> crate::store::Result<Vec<ehds_core::domain::study::Study>> {
                let mut q = sqlx::QueryBuilder::<$db>::new("select * from study");
                match scope {
                    crate::store::Scope::All => {}
                    crate::store::Scope::Nothing | crate::store::Scope::DataHolder(_) => { q.push(" where 1 = 0"); }
                    crate::store::Scope::Organisation(o) => {
                        q.push(" where organisation = ").push_bind(o.as_str().to_owned());
                    }
                }
                q.push(" order by created_at desc, study_id limit ").push_bind(page.limit)
                    .push(" offset ").push_bind(page.offset);
                let found = q.build().fetch_all(&mut *self.tx).await?;
                found.iter().map(rows::study).collect()
            }

            async fn live_study_ids(&mut self) -> crate::store::Result<Vec<ehds_core::domain::StudyId>> {
                let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
                    "select study_id from study where status in ('running', 'suspended') order by created_at, study_id",
                )
                .fetch_all(&mut *self.tx)
                .await?;
                Ok(ids.into_iter().map(ehds_core::domain::StudyId).collect())
            }

            async fn live_studies_for_permit(&mut self, permit: ehds_core::domain::PermitId)
                -> crate::store::Result<Vec<ehds_core::domain::study::Study>> {
                let found = sqlx::query(
                    "select * from study where permit_id = $1 and status in ('running', 'suspended') order by created_at",
                )
                .bind(permit.0)
                .fetch_all(&mut *self.tx)
                .await?;
                found.iter().map(rows::study).collect()
            }

            async fn update_study(&mut self, s: &ehds_core::domain::study::Study, expected_row_version: i64)
                -> crate::store::Result<()> {
                let done = sqlx::query(
                    "update study set status = $3, status_reason = $4, updated_at = $5, rounds_done = $6, \
                     epsilon_spent = $7, row_version = $8 where study_id = $1 and row_version = $2",
                )
                .bind(s.id.0)
                .bind(expected_row_version)
                .bind(s.status().as_str())
                .bind(&s.status_reason)
                .bind(s.updated_at)
                .bind(s.rounds_done as i64)
                .bind(s.epsilon_spent)
                .bind(s.row_version)
                .execute(&mut *self.tx)
                .await?;
                if done.rows_affected() == 1 { Ok(()) } else { Err(crate::store::StoreError::Conflict) }
            }

            async fn study_noise_key(&mut self, id: ehds_core::domain::StudyId) -> crate::store::Result<Vec<u8>> {
                Ok(sqlx::query_scalar("select noise_key from study where study_id = $1")
                    .bind(id.0)
                    .fetch_one(&mut *self.tx)
                    .await?)
            }

            async fn study_noise_keys(&mut self) -> crate::store::Result<Vec<(ehds_core::domain::StudyId, Vec<u8>)>> {
                let rows: Vec<(uuid::Uuid, Vec<u8>)> =
                    sqlx::query_as("select study_id, noise_key from study order by study_id")
                        .fetch_all(&mut *self.tx)
                        .await?;
                Ok(rows.into_iter().map(|(id, key)| (ehds_core::domain::StudyId(id), key)).collect())
            }

            async fn set_study_noise_key(&mut self, id: ehds_core::domain::StudyId, stored: &[u8]) -> crate::store::Result<()> {
                sqlx::query("update study set noise_key = $1 where study_id = $2")
                    .bind(stored)
                    .bind(id.0)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(())
            }

            async fn insert_checkpoint(&mut self, c: &ehds_core::domain::study::Checkpoint, now: ehds_core::domain::time::Timestamp)
                -> crate::store::Result<()> {
                sqlx::query(
                    "insert into study_checkpoint (study_id, round, global_model, server_state, accountant, recorded_at) \
                     values ($1, $2, $3, $4, $5, $6)",
                )
                .bind(c.study_id.0)
                .bind(c.round as i64)
                .bind(&c.global)
                .bind(sqlx::types::Json(&c.server_state))
                .bind(sqlx::types::Json(&c.accountant))
                .bind(now)
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn latest_checkpoint(&mut self, id: ehds_core::domain::StudyId)
                -> crate::store::Result<Option<ehds_core::domain::study::Checkpoint>> {
                let row = sqlx::query("select * from study_checkpoint where study_id = $1 order by round desc limit 1")
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::checkpoint).transpose()
            }

            async fn checkpoint_at(&mut self, id: ehds_core::domain::StudyId, round: u64)
                -> crate::store::Result<Option<ehds_core::domain::study::Checkpoint>> {
                let row = sqlx::query("select * from study_checkpoint where study_id = $1 and round = $2")
                    .bind(id.0)
                    .bind(round as i64)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::checkpoint).transpose()
            }

            async fn insert_round(&mut self, r: &ehds_core::domain::study::Round) -> crate::store::Result<()> {
                sqlx::query(
                    "insert into study_round (round_id, study_id, round, attempt, phase, registry_version, participants, \
                     opened_at, deadline, closed_at, reason, epsilon_round, epsilon_total, summary) \
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                )
                .bind(r.id.0)
                .bind(r.study_id.0)
                .bind(r.round as i64)
                .bind(i64::from(r.attempt))
                .bind(r.phase.as_str())
                .bind(r.registry_version)
                .bind(sqlx::types::Json(&r.participants))
                .bind(r.opened_at)
                .bind(r.deadline)
                .bind(r.closed_at)
                .bind(&r.reason)
                .bind(r.epsilon_round)
                .bind(r.epsilon_total)
                .bind(sqlx::types::Json(&r.summary))
                .execute(&mut *self.tx)
                .await?;
                self.observed.round_started();
                Ok(())
            }

            async fn close_round(&mut self, r: &ehds_core::domain::study::Round) -> crate::store::Result<()> {
                let done = sqlx::query(
                    "update study_round set phase = $2, closed_at = $3, reason = $4, epsilon_round = $5, \
                     epsilon_total = $6, summary = $7 where round_id = $1 and phase = 'collecting'",
                )
                .bind(r.id.0)
                .bind(r.phase.as_str())
                .bind(r.closed_at)
                .bind(&r.reason)
                .bind(r.epsilon_round)
                .bind(r.epsilon_total)
                .bind(sqlx::types::Json(&r.summary))
                .execute(&mut *self.tx)
                .await?;
                if done.rows_affected() != 1 {
                    return Err(crate::store::StoreError::Conflict);
                }
                self.observed.round_closed(r.phase);
                Ok(())
            }

            async fn get_round(&mut self, id: ehds_core::domain::RoundId)
                -> crate::store::Result<Option<ehds_core::domain::study::Round>> {
                let row = sqlx::query("select * from study_round where round_id = $1")
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::round).transpose()
            }

            async fn open_round(&mut self, id: ehds_core::domain::StudyId)
                -> crate::store::Result<Option<ehds_core::domain::study::Round>> {
                let row = sqlx::query(
                    "select * from study_round where study_id = $1 and phase = 'collecting' order by round desc, attempt desc limit 1",
                )
                .bind(id.0)
                .fetch_optional(&mut *self.tx)
                .await?;
                row.as_ref().map(rows::round).transpose()
            }

            async fn list_rounds(&mut self, id: ehds_core::domain::StudyId)
                -> crate::store::Result<Vec<ehds_core::domain::study::Round>> {
                let found = sqlx::query("select * from study_round where study_id = $1 order by round, attempt")
                    .bind(id.0)
                    .fetch_all(&mut *self.tx)
                    .await?;
                found.iter().map(rows::round).collect()
            }

            async fn insert_task(&mut self, t: &ehds_core::domain::study::Task) -> crate::store::Result<()> {
                sqlx::query(
                    "insert into study_task (task_id, study_id, round_id, round, kind, data_holder, status, created_at, \
                     deadline, completed_at, report) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(t.id.0)
                .bind(t.study_id.0)
                .bind(t.round_id.0)
                .bind(t.round as i64)
                .bind(t.kind.as_str())
                .bind(t.data_holder.as_str())
                .bind(t.status.as_str())
                .bind(t.created_at)
                .bind(t.deadline)
                .bind(t.completed_at)
                .bind(t.report.as_ref().map(sqlx::types::Json))
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn get_task(&mut self, id: ehds_core::domain::TaskId)
                -> crate::store::Result<Option<ehds_core::domain::study::Task>> {
                let row = sqlx::query(concat!("select ", crate::store::sql::task_columns!(), " from study_task where task_id = $1"))
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                row.as_ref().map(rows::task).transpose()
            }

            async fn pending_tasks_for(&mut self, holder: &ehds_core::domain::OrgId, now: ehds_core::domain::time::Timestamp, limit: i64)
                -> crate::store::Result<Vec<ehds_core::domain::study::Task>> {
                let found = sqlx::query(
                    concat!("select ", crate::store::sql::task_columns!(), " from study_task where data_holder = $1 and status = 'pending' \
                     and deadline > $2 order by created_at, task_id limit $3"),
                )
                .bind(holder.as_str())
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *self.tx)
                .await?;
                found.iter().map(rows::task).collect()
            }

            async fn round_tasks(&mut self, round: ehds_core::domain::RoundId)
                -> crate::store::Result<Vec<ehds_core::domain::study::Task>> {
                let found = sqlx::query(concat!("select ", crate::store::sql::task_columns!(), " from study_task where round_id = $1 order by data_holder, kind"))
                    .bind(round.0)
                    .fetch_all(&mut *self.tx)
                    .await?;
                found.iter().map(rows::task).collect()
            }

            async fn complete_task(&mut self, t: &ehds_core::domain::study::Task, result: Option<&[u8]>)
                -> crate::store::Result<()> {
                let done = sqlx::query(
                    "update study_task set status = $2, completed_at = $3, report = $4, result = $5 \
                     where task_id = $1 and status = 'pending'",
                )
                .bind(t.id.0)
                .bind(t.status.as_str())
                .bind(t.completed_at)
                .bind(t.report.as_ref().map(sqlx::types::Json))
                .bind(result)
                .execute(&mut *self.tx)
                .await?;
                if done.rows_affected() == 1 { Ok(()) } else { Err(crate::store::StoreError::Conflict) }
            }

            async fn close_pending_tasks(&mut self, round: ehds_core::domain::RoundId, status: ehds_core::domain::study::TaskStatus)
                -> crate::store::Result<u64> {
                let holders: Vec<String> = sqlx::query_scalar(
                    "update study_task set status = $2 where round_id = $1 and status = 'pending' returning data_holder")
                    .bind(round.0)
                    .bind(status.as_str())
                    .fetch_all(&mut *self.tx)
                    .await?;
                let closed = holders.len() as u64;
                if status == ehds_core::domain::study::TaskStatus::Expired {
                    holders.into_iter().for_each(|h| self.observed.task_expired(h));
                }
                Ok(closed)
            }

            async fn task_result(&mut self, id: ehds_core::domain::TaskId) -> crate::store::Result<Option<Vec<u8>>> {
                let found: Option<Option<Vec<u8>>> = sqlx::query_scalar("select result from study_task where task_id = $1")
                    .bind(id.0)
                    .fetch_optional(&mut *self.tx)
                    .await?;
                Ok(found.flatten())
            }

            async fn insert_secagg_session(&mut self, round: ehds_core::domain::RoundId, state: &[u8])
                -> crate::store::Result<()> {
                sqlx::query("insert into secagg_session (round_id, state, row_version) values ($1, $2, 1)")
                    .bind(round.0)
                    .bind(state)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(())
            }

            async fn secagg_session(&mut self, round: ehds_core::domain::RoundId)
                -> crate::store::Result<Option<Vec<u8>>> {
                Ok(sqlx::query_scalar("select state from secagg_session where round_id = $1")
                    .bind(round.0)
                    .fetch_optional(&mut *self.tx)
                    .await?)
            }

            async fn lock_secagg_session(&mut self, round: ehds_core::domain::RoundId)
                -> crate::store::Result<Option<Vec<u8>>> {
                // an update takes the row lock on both backends (SQLite: the writer lock is
                // already held) and returns the state as committed by whoever held it before
                Ok(sqlx::query_scalar(
                    "update secagg_session set row_version = row_version + 1 where round_id = $1 returning state")
                    .bind(round.0)
                    .fetch_optional(&mut *self.tx)
                    .await?)
            }

            async fn update_secagg_session(&mut self, round: ehds_core::domain::RoundId, state: &[u8])
                -> crate::store::Result<()> {
                let done = sqlx::query("update secagg_session set state = $2 where round_id = $1")
                    .bind(round.0)
                    .bind(state)
                    .execute(&mut *self.tx)
                    .await?;
                if done.rows_affected() == 1 { Ok(()) } else { Err(crate::store::StoreError::Conflict) }
            }

            async fn secagg_sum(&mut self, round: ehds_core::domain::RoundId)
                -> crate::store::Result<Option<Vec<u8>>> {
                Ok(sqlx::query_scalar("select masked_sum from secagg_masked_sum where round_id = $1")
                    .bind(round.0)
                    .fetch_optional(&mut *self.tx)
                    .await?)
            }

            async fn update_secagg_sum(&mut self, round: ehds_core::domain::RoundId, sum: &[u8])
                -> crate::store::Result<()> {
                sqlx::query(
                    "insert into secagg_masked_sum (round_id, masked_sum) values ($1, $2) \
                     on conflict (round_id) do update set masked_sum = excluded.masked_sum")
                    .bind(round.0)
                    .bind(sum)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(())
            }

            async fn insert_secagg_messages(&mut self, round: ehds_core::domain::RoundId, kind: &str,
                messages: &[(u32, Vec<u8>)]) -> crate::store::Result<()> {
                for (client, message) in messages {
                    sqlx::query("insert into secagg_message (round_id, client, kind, message) values ($1, $2, $3, $4)")
                        .bind(round.0)
                        .bind(i64::from(*client))
                        .bind(kind)
                        .bind(message.as_slice())
                        .execute(&mut *self.tx)
                        .await?;
                }
                Ok(())
            }

            async fn secagg_message(&mut self, round: ehds_core::domain::RoundId, client: u32, kind: &str)
                -> crate::store::Result<Option<Vec<u8>>> {
                Ok(sqlx::query_scalar(
                    "select message from secagg_message where round_id = $1 and client = $2 and kind = $3")
                    .bind(round.0)
                    .bind(i64::from(client))
                    .bind(kind)
                    .fetch_optional(&mut *self.tx)
                    .await?)
            }

            async fn insert_secagg_received(&mut self, round: ehds_core::domain::RoundId, client: u32,
                kind: &str, message: &[u8]) -> crate::store::Result<()> {
                sqlx::query(
                    "insert into secagg_received (round_id, client, kind, message) values ($1, $2, $3, $4) \
                     on conflict (round_id, client, kind) do nothing")
                    .bind(round.0)
                    .bind(i64::from(client))
                    .bind(kind)
                    .bind(message)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(())
            }

            async fn secagg_received(&mut self, round: ehds_core::domain::RoundId, kind: &str)
                -> crate::store::Result<Vec<(u32, Vec<u8>)>> {
                let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
                    "select client, message from secagg_received where round_id = $1 and kind = $2 \
                     order by client")
                    .bind(round.0)
                    .bind(kind)
                    .fetch_all(&mut *self.tx)
                    .await?;
                rows.into_iter()
                    .map(|(client, message)| {
                        let client = u32::try_from(client).map_err(|_| {
                            crate::store::StoreError::Corrupt(format!(
                                "secagg_received holds client number {client}"
                            ))
                        })?;
                        Ok((client, message))
                    })
                    .collect()
            }

            async fn delete_secagg_received(&mut self, round: ehds_core::domain::RoundId, kind: &str)
                -> crate::store::Result<()> {
                sqlx::query("delete from secagg_received where round_id = $1 and kind = $2")
                    .bind(round.0)
                    .bind(kind)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(())
            }

            async fn delete_secagg(&mut self, round: ehds_core::domain::RoundId) -> crate::store::Result<()> {
                sqlx::query("delete from secagg_message where round_id = $1")
                    .bind(round.0)
                    .execute(&mut *self.tx)
                    .await?;
                sqlx::query("delete from secagg_received where round_id = $1")
                    .bind(round.0)
                    .execute(&mut *self.tx)
                    .await?;
                sqlx::query("delete from secagg_masked_sum where round_id = $1")
                    .bind(round.0)
                    .execute(&mut *self.tx)
                    .await?;
                sqlx::query("delete from secagg_session where round_id = $1")
                    .bind(round.0)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(())
            }

            async fn insert_evaluation(&mut self, study: ehds_core::domain::StudyId, round: u64,
                evaluation: &ehds_core::domain::study::SiteEvaluation, now: ehds_core::domain::time::Timestamp)
                -> crate::store::Result<()> {
                sqlx::query(
                    "insert into study_evaluation (study_id, round, data_holder, evaluation, recorded_at) \
                     values ($1, $2, $3, $4, $5) on conflict do nothing",
                )
                .bind(study.0)
                .bind(round as i64)
                .bind(evaluation.data_holder.as_str())
                .bind(sqlx::types::Json(evaluation))
                .bind(now)
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn list_evaluations(&mut self, study: ehds_core::domain::StudyId)
                -> crate::store::Result<Vec<(u64, ehds_core::domain::study::SiteEvaluation)>> {
                let found = sqlx::query("select round, evaluation from study_evaluation where study_id = $1 order by round, data_holder")
                    .bind(study.0)
                    .fetch_all(&mut *self.tx)
                    .await?;
                found.iter().map(|r| {
                    Ok((sqlx::Row::try_get::<i64, _>(r, "round")? as u64,
                        sqlx::Row::try_get::<sqlx::types::Json<ehds_core::domain::study::SiteEvaluation>, _>(r, "evaluation")?.0))
                }).collect()
            }

            async fn append_audit(&mut self, event: ehds_core::domain::audit::NewAuditEvent)
                -> crate::store::Result<ehds_core::domain::audit::AuditEntry> {
                self.order_writes().await?;
                let head: Option<(i64, String)> =
                    sqlx::query_as("select seq, hash from audit_event order by seq desc limit 1")
                        .fetch_optional(&mut *self.tx)
                        .await?;
                let (seq, prev) = head.map(|(s, h)| (s + 1, h))
                    .unwrap_or((1, ehds_core::domain::audit::GENESIS_HASH.to_owned()));
                // The tree's right edge after the head just read: kept from the last append
                // when that is the head, read from the rows otherwise.
                let mut edge = match self.edge.after(seq - 1, &prev) {
                    Some(edge) => edge,
                    None => {
                        let size = u64::try_from(seq - 1).map_err(|_| {
                            crate::store::StoreError::Corrupt("audit sequence below 1".into())
                        })?;
                        crate::store::tree::load_edge(&mut *self, size).await?
                    }
                };
                let (e, canonical) = ehds_core::domain::audit::AuditEntry::seal_canonical(
                    event, seq, prev, ehds_core::domain::time::now());
                // The same entry as a Merkle leaf, with the subtrees it completes, in its row.
                let nodes = edge.append(translog::hash_leaf(&canonical));
                sqlx::query(
                    "insert into audit_event (seq, event_id, recorded_at, actor_sub, actor_roles, actor_organisation, \
                     action, outcome, resource_type, resource_id, permit_id, request_id, http_status, detail, \
                     prev_hash, hash, tree_nodes) \
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                )
                .bind(e.seq)
                .bind(e.id)
                .bind(e.recorded_at)
                .bind(&e.actor.sub)
                .bind(serde_json::to_string(&e.actor.roles).map_err(anyhow::Error::from)?)
                .bind(&e.actor.organisation)
                .bind(&e.action)
                .bind(e.outcome.as_str())
                .bind(&e.resource_type)
                .bind(&e.resource_id)
                .bind(&e.permit_id)
                .bind(&e.request_id)
                .bind(e.http_status.map(i32::from))
                .bind(e.detail.to_string())
                .bind(&e.prev_hash)
                .bind(&e.hash)
                .bind(crate::store::tree::encode_nodes(&nodes))
                .execute(&mut *self.tx)
                .await?;
                self.edge.keep(e.seq, &e.hash, edge);
                self.observed.audit_appended();
                Ok(e)
            }

            async fn take_write_order(&mut self) -> crate::store::Result<()> {
                self.order_writes().await
            }

            async fn webhook_cursor(&mut self, endpoint: &str) -> crate::store::Result<Option<i64>> {
                Ok(sqlx::query_scalar("select last_seq from webhook_cursor where endpoint = $1")
                    .bind(endpoint)
                    .fetch_optional(&mut *self.tx)
                    .await?)
            }

            async fn advance_webhook_cursor(&mut self, endpoint: &str, seq: i64) -> crate::store::Result<()> {
                sqlx::query(
                    "insert into webhook_cursor (endpoint, last_seq) values ($1, $2) \
                     on conflict (endpoint) do update set last_seq = excluded.last_seq \
                     where webhook_cursor.last_seq < excluded.last_seq",
                )
                .bind(endpoint)
                .bind(seq)
                .execute(&mut *self.tx)
                .await?;
                Ok(())
            }

            async fn audit_tree_size(&mut self) -> crate::store::Result<u64> {
                // the rows with tree hashes are a prefix of the trail (`fill_audit_tree_nodes`)
                let last: Option<i64> = sqlx::query_scalar(
                    "select seq from audit_event where tree_nodes is not null order by seq desc limit 1")
                    .fetch_optional(&mut *self.tx)
                    .await?;
                Ok(last.map_or(0, |s| s as u64))
            }

            async fn audit_subtrees(&mut self, wanted: &[(u32, u64)])
                -> crate::store::Result<Vec<(u32, u64, translog::Hash)>> {
                let holders = wanted
                    .iter()
                    .map(|(level, index)| crate::store::tree::holding_seq(*level, *index))
                    .collect::<crate::store::Result<Vec<i64>>>()?;
                let mut seqs = holders.clone();
                seqs.sort_unstable();
                seqs.dedup();
                let mut rows = std::collections::HashMap::with_capacity(seqs.len());
                // Bounded statements: a proof asks for O(log² n) subtrees.
                for chunk in seqs.chunks(200) {
                    let mut q = sqlx::QueryBuilder::<$db>::new(
                        "select seq, tree_nodes from audit_event where tree_nodes is not null and seq in (");
                    let mut list = q.separated(", ");
                    for seq in chunk {
                        list.push_bind(*seq);
                    }
                    q.push(")");
                    for r in q.build().fetch_all(&mut *self.tx).await? {
                        let seq: i64 = sqlx::Row::try_get(&r, "seq")?;
                        let nodes: Vec<u8> = sqlx::Row::try_get(&r, "tree_nodes")?;
                        rows.insert(seq, nodes);
                    }
                }
                let mut found = Vec::with_capacity(wanted.len());
                for ((level, index), seq) in wanted.iter().zip(holders) {
                    if let Some(nodes) = rows.get(&seq) {
                        let hash = crate::store::tree::node_in_row(seq, nodes, *level)?;
                        found.push((*level, *index, hash));
                    }
                }
                Ok(found)
            }

            async fn fill_audit_tree_nodes(&mut self, seq: i64, nodes: &[translog::Hash])
                -> crate::store::Result<()> {
                self.order_writes().await?;
                let filled = sqlx::query(
                    "update audit_event set tree_nodes = $1 where seq = $2 and tree_nodes is null")
                    .bind(crate::store::tree::encode_nodes(nodes))
                    .bind(seq)
                    .execute(&mut *self.tx)
                    .await?;
                if filled.rows_affected() != 1 {
                    return Err(crate::store::StoreError::Corrupt(format!(
                        "audit entry {seq} is missing or already has its tree hashes")));
                }
                Ok(())
            }

            async fn list_audit(&mut self, f: &crate::store::AuditFilter)
                -> crate::store::Result<Vec<ehds_core::domain::audit::AuditEntry>> {
                // every column but the tree's hashes, which a listing never shows
                let mut q = sqlx::QueryBuilder::<$db>::new(
                    "select seq, event_id, recorded_at, actor_sub, actor_roles, actor_organisation, \
                     action, outcome, resource_type, resource_id, permit_id, request_id, \
                     http_status, detail, prev_hash, hash from audit_event where 1 = 1");
                audit_conditions(&mut q, f);
                q.push(" order by seq limit ").push_bind(f.limit);
                let found = q.build().fetch_all(&mut *self.tx).await?;
                found.iter().map(rows::audit).collect()
            }

            async fn audit_span(&mut self, f: &crate::store::AuditFilter)
                -> crate::store::Result<crate::store::AuditSpan> {
                let mut q = sqlx::QueryBuilder::<$db>::new(
                    "select count(*), min(seq), max(seq) from (select seq from audit_event where 1 = 1");
                audit_conditions(&mut q, f);
                q.push(" order by seq limit ").push_bind(f.limit);
                q.push(") matched");
                let (count, first_seq, last_seq): (i64, Option<i64>, Option<i64>) =
                    q.build_query_as().fetch_one(&mut *self.tx).await?;
                Ok(crate::store::AuditSpan { count: count.max(0) as u64, first_seq, last_seq })
            }

            async fn commit(self: Box<Self>) -> crate::store::Result<()> {
                let this = *self;
                this.tx.commit().await?;
                this.observed.emit();
                Ok(())
            }
        }

        impl $tx {
            async fn sync_data_holders(&mut self, permit: &ehds_core::domain::Permit) -> crate::store::Result<()> {
                sqlx::query("delete from permit_data_holder where permit_id = $1")
                    .bind(permit.id().0)
                    .execute(&mut *self.tx)
                    .await?;
                for holder in permit.terms().data_holder_ids() {
                    sqlx::query("insert into permit_data_holder (permit_id, data_holder) values ($1, $2)")
                        .bind(permit.id().0)
                        .bind(holder.as_str())
                        .execute(&mut *self.tx)
                        .await?;
                }
                Ok(())
            }
        }

        fn audit_conditions(q: &mut sqlx::QueryBuilder<'_, $db>, f: &crate::store::AuditFilter) {
            if let Some(v) = f.from { q.push(" and recorded_at >= ").push_bind(v); }
            if let Some(v) = f.to { q.push(" and recorded_at < ").push_bind(v); }
            if let Some(v) = &f.actor { q.push(" and actor_sub = ").push_bind(v.clone()); }
            if let Some(v) = &f.action { q.push(" and action = ").push_bind(v.clone()); }
            if let Some(v) = f.outcome { q.push(" and outcome = ").push_bind(v.as_str()); }
            if let Some(v) = &f.resource_type { q.push(" and resource_type = ").push_bind(v.clone()); }
            if let Some(v) = &f.resource_id { q.push(" and resource_id = ").push_bind(v.clone()); }
            if let Some(v) = &f.permit_id { q.push(" and permit_id = ").push_bind(v.clone()); }
            if let Some(v) = f.after_seq { q.push(" and seq > ").push_bind(v); }
            if let Some(v) = f.until_seq { q.push(" and seq <= ").push_bind(v); }
        }

        fn state_columns(state: &ehds_core::domain::PermitState)
            -> (Option<ehds_core::domain::time::Timestamp>, Option<String>) {
            use ehds_core::domain::PermitState;
            match state {
                PermitState::Active => (None, None),
                PermitState::Suspended { since, reason } => (Some(*since), Some(reason.clone())),
                PermitState::Revoked { at, reason } => (Some(*at), Some(reason.clone())),
                PermitState::Expired { at } => (Some(*at), None),
            }
        }
    };
}

pub(crate) use impl_tx;
