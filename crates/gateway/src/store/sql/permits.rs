//! Applications and permits: the `application`, `permit`, `permit_version` and
//! `permit_data_holder` tables.

use async_trait::async_trait;
use sqlx::{types::Json, QueryBuilder, Row};
use uuid::Uuid;

use ehds_core::domain::{
    permit::{PermitRecord, PermitState},
    time::Timestamp,
    Application, ApplicationId, ApplicationStatus, OrgId, Permit, PermitId,
};

use super::{corrupt, Db, DbRow, DbTx};
use crate::store::{
    ApplicationFilter, ApplicationTx, Page, PermitTx, PermitVersion, Result, Scope, StoreError,
};

#[async_trait]
impl ApplicationTx for DbTx {
    async fn insert_application(
        &mut self,
        app: &Application,
        due_at: Option<Timestamp>,
    ) -> Result<()> {
        sqlx::query(
            "insert into application (application_id, organisation, applicant_sub, status, \
             submitted_at, decided_at, decided_by, decision_reason, permit_id, request, \
             procedure, due_at) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
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
        .bind(Json(&app.request))
        .bind(Json(&app.procedure))
        .bind(due_at)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn get_application(&mut self, id: ApplicationId) -> Result<Option<Application>> {
        let row = sqlx::query("select * from application where application_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(application_row).transpose()
    }

    async fn list_applications(
        &mut self,
        scope: &Scope,
        filter: &ApplicationFilter,
        page: Page,
    ) -> Result<Vec<Application>> {
        let mut q = QueryBuilder::<Db>::new("select * from application where ");
        match scope {
            Scope::All => {
                q.push("status <> 'draft'");
            }
            Scope::Nothing => {
                q.push("1 = 0");
            }
            Scope::Organisation(o) => {
                q.push("organisation = ").push_bind(o.as_str().to_owned());
            }
            Scope::DataHolder(o) => {
                q.push("status <> 'draft' and organisation = ")
                    .push_bind(o.as_str().to_owned());
            }
        }
        if !filter.statuses.is_empty() {
            q.push(" and status in (");
            let mut list = q.separated(", ");
            for s in &filter.statuses {
                list.push_bind(s.as_str());
            }
            q.push(")");
        }
        if let Some(by) = filter.due_by {
            q.push(" and due_at <= ").push_bind(by);
        }
        q.push(" order by submitted_at desc, application_id limit ")
            .push_bind(page.limit)
            .push(" offset ")
            .push_bind(page.offset);
        let found = q.build().fetch_all(&mut *self.tx).await?;
        found.iter().map(application_row).collect()
    }

    async fn update_application(
        &mut self,
        app: &Application,
        from: ApplicationStatus,
        due_at: Option<Timestamp>,
    ) -> Result<()> {
        let done = sqlx::query(
            "update application set status = $2, submitted_at = $3, decided_at = $4, \
             decided_by = $5, decision_reason = $6, permit_id = $7, request = $8, \
             procedure = $9, due_at = $10 \
             where application_id = $1 and status = $11",
        )
        .bind(app.id.0)
        .bind(app.status.as_str())
        .bind(app.submitted_at)
        .bind(app.decided_at)
        .bind(&app.decided_by)
        .bind(&app.decision_reason)
        .bind(app.permit_id.map(|p| p.0))
        .bind(Json(&app.request))
        .bind(Json(&app.procedure))
        .bind(due_at)
        .bind(from.as_str())
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    async fn list_applications_due(&mut self, now: Timestamp) -> Result<Vec<Application>> {
        // The states whose deadline a sweep watches: open ones, and decisions not yet public.
        let found = sqlx::query(
            "select * from application where status not in ('draft', 'withdrawn', 'lapsed') \
             and ((due_at <= $1 and not exists \
             (select 1 from application_deadline d where d.application_id = \
             application.application_id and d.due_at = application.due_at)) or (due_at is null \
             and status in ('assessing', 'fee_pending', 'awaiting_confirmation'))) \
             order by due_at, application_id limit 1000",
        )
        .bind(now)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(application_row).collect()
    }

    async fn count_applications_by_status(&mut self) -> Result<Vec<(ApplicationStatus, u64)>> {
        let rows = sqlx::query(
            // a decision not yet public counts as the application still open (the JSON
            // operator `->>` with a plain key reads alike in SQLite 3.38+ and PostgreSQL)
            "select case when status in ('approved', 'partially_approved', 'rejected') \
             and procedure ->> 'published_at' is null then 'assessing' else status end as shown, \
             count(*) as n from application where status <> 'draft' \
             group by shown order by shown",
        )
        .fetch_all(&mut *self.tx)
        .await?;
        rows.iter()
            .map(|r| {
                let status: String = r.try_get("shown")?;
                let n: i64 = r.try_get("n")?;
                Ok((
                    ApplicationStatus::parse(&status)
                        .ok_or_else(|| corrupt("application status"))?,
                    n as u64,
                ))
            })
            .collect()
    }

    async fn raise_application_deadline(
        &mut self,
        id: ApplicationId,
        kind: &str,
        due_at: Timestamp,
        now: Timestamp,
    ) -> Result<bool> {
        let done = sqlx::query(
            "insert into application_deadline (application_id, kind, due_at, raised_at) \
             values ($1, $2, $3, $4) on conflict do nothing",
        )
        .bind(id.0)
        .bind(kind)
        .bind(due_at)
        .bind(now)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait]
impl PermitTx for DbTx {
    async fn insert_permit(&mut self, permit: &Permit, by: &str, now: Timestamp) -> Result<()> {
        let r = permit.record();
        let (since, reason) = state_columns(&r.state);
        sqlx::query(
            "insert into permit (permit_id, application_id, organisation, principal_investigator, \
             public_body, issued_at, valid_from, expires_at, extended_at, status, status_since, \
             status_reason, terms, terms_version, row_version, epsilon_spent) \
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
        .bind(Json(&r.terms))
        .bind(r.terms_version)
        .bind(r.row_version)
        .bind(r.epsilon_spent)
        .execute(&mut *self.tx)
        .await?;
        self.sync_data_holders(permit).await?;
        self.insert_permit_version(permit, by, None, now).await
    }

    async fn get_permit(&mut self, id: PermitId) -> Result<Option<Permit>> {
        // the columns a permit's changes touch; its terms change only with `terms_version`
        type Current = (
            i64,
            i64,
            String,
            Option<Timestamp>,
            Option<String>,
            Timestamp,
            Option<Timestamp>,
            f64,
        );
        let current: Option<Current> = sqlx::query_as(
            "select row_version, terms_version, status, status_since, status_reason, expires_at, \
             extended_at, epsilon_spent from permit where permit_id = $1",
        )
        .bind(id.0)
        .fetch_optional(&mut *self.tx)
        .await?;
        let Some((version, terms_version, status, since, reason, expires_at, extended_at, spent)) =
            current
        else {
            return Ok(None);
        };
        let unchanged = |p: &Permit| {
            let r = p.record();
            r.row_version == version
                && r.terms_version == terms_version
                && r.state.name() == status
                && state_columns(&r.state) == (since, reason)
                && r.expires_at == expires_at
                && r.extended_at == extended_at
                && r.epsilon_spent.to_bits() == spent.to_bits()
        };
        if let Some(kept) = self.rows.permit(id, unchanged) {
            return Ok(Some(kept));
        }
        let row = sqlx::query("select * from permit where permit_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        let permit = row.as_ref().map(permit_row).transpose()?;
        if let Some(permit) = &permit {
            self.rows.keep_permit(permit);
        }
        Ok(permit)
    }

    async fn list_permits(&mut self, scope: &Scope, page: Page) -> Result<Vec<Permit>> {
        let mut q = QueryBuilder::<Db>::new("select * from permit");
        match scope {
            Scope::All => {}
            Scope::Nothing => {
                q.push(" where 1 = 0");
            }
            Scope::Organisation(o) => {
                q.push(" where organisation = ")
                    .push_bind(o.as_str().to_owned());
            }
            Scope::DataHolder(o) => {
                q.push(
                    " where permit_id in (select permit_id from permit_data_holder \
                     where data_holder = ",
                )
                .push_bind(o.as_str().to_owned())
                .push(")");
            }
        }
        q.push(" order by issued_at desc, permit_id limit ")
            .push_bind(page.limit)
            .push(" offset ")
            .push_bind(page.offset);
        let found = q.build().fetch_all(&mut *self.tx).await?;
        found.iter().map(permit_row).collect()
    }

    async fn list_lapsed_permits(&mut self, now: Timestamp) -> Result<Vec<Permit>> {
        let found = sqlx::query(
            "select * from permit where status in ('active', 'suspended') and expires_at <= $1 \
             order by expires_at",
        )
        .bind(now)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(permit_row).collect()
    }

    async fn update_permit(&mut self, permit: &Permit, expected_row_version: i64) -> Result<()> {
        let r = permit.record();
        let (since, reason) = state_columns(&r.state);
        let done = sqlx::query(
            "update permit set expires_at = $3, extended_at = $4, status = $5, status_since = $6, \
             status_reason = $7, terms = $8, terms_version = $9, row_version = $10, \
             epsilon_spent = $11 where permit_id = $1 and row_version = $2",
        )
        .bind(r.id.0)
        .bind(expected_row_version)
        .bind(r.expires_at)
        .bind(r.extended_at)
        .bind(r.state.name())
        .bind(since)
        .bind(reason)
        .bind(Json(&r.terms))
        .bind(r.terms_version)
        .bind(r.row_version)
        .bind(r.epsilon_spent)
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() != 1 {
            return Err(StoreError::Conflict);
        }
        self.sync_data_holders(permit).await
    }

    async fn insert_permit_version(
        &mut self,
        permit: &Permit,
        by: &str,
        reason: Option<&str>,
        now: Timestamp,
    ) -> Result<()> {
        let r = permit.record();
        sqlx::query(
            "insert into permit_version (permit_id, terms_version, terms, recorded_at, \
             recorded_by, reason) \
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(r.id.0)
        .bind(r.terms_version)
        .bind(Json(&r.terms))
        .bind(now)
        .bind(by)
        .bind(reason)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn list_permit_versions(&mut self, id: PermitId) -> Result<Vec<PermitVersion>> {
        let found =
            sqlx::query("select * from permit_version where permit_id = $1 order by terms_version")
                .bind(id.0)
                .fetch_all(&mut *self.tx)
                .await?;
        found.iter().map(permit_version_row).collect()
    }
}

impl DbTx {
    /// Rewrites the permit's `permit_data_holder` rows from its terms.
    async fn sync_data_holders(&mut self, permit: &Permit) -> Result<()> {
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

/// The `status_since` and `status_reason` columns of a permit state.
fn state_columns(state: &PermitState) -> (Option<Timestamp>, Option<String>) {
    match state {
        PermitState::Active => (None, None),
        PermitState::Suspended { since, reason } => (Some(*since), Some(reason.clone())),
        PermitState::Revoked { at, reason } => (Some(*at), Some(reason.clone())),
        PermitState::Expired { at } => (Some(*at), None),
    }
}

fn application_row(r: &DbRow) -> Result<Application> {
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
        procedure: r.try_get::<Json<_>, _>("procedure")?.0,
    })
}

fn permit_row(r: &DbRow) -> Result<Permit> {
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
        "expired" => PermitState::Expired {
            at: since.unwrap_or(expires_at),
        },
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

fn permit_version_row(r: &DbRow) -> Result<PermitVersion> {
    Ok(PermitVersion {
        terms_version: r.try_get("terms_version")?,
        terms: r.try_get::<Json<_>, _>("terms")?.0,
        recorded_at: r.try_get("recorded_at")?,
        recorded_by: r.try_get("recorded_by")?,
        reason: r.try_get("reason")?,
    })
}
