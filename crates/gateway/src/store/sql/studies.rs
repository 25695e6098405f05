//! Studies, their checkpoints and the data holders' evaluations: the `study`,
//! `study_checkpoint` and `study_evaluation` tables.

use async_trait::async_trait;
use sqlx::{types::Json, QueryBuilder, Row};
use uuid::Uuid;

use ehds_core::domain::{
    study::{Checkpoint, SiteEvaluation, Study, StudyStatus},
    time::Timestamp,
    OrgId, PermitId, StudyId,
};

use super::{corrupt, Db, DbRow, DbTx};
use crate::store::{Page, Result, Scope, StoreError, StudyTx};

#[async_trait]
impl StudyTx for DbTx {
    async fn insert_study(&mut self, s: &Study, noise_key: &[u8]) -> Result<()> {
        sqlx::query(
            "insert into study (study_id, permit_id, organisation, researcher_sub, spec, status, \
             status_reason, created_at, updated_at, rounds_done, epsilon_spent, row_version, \
             noise_key) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(s.id.0)
        .bind(s.spec.permit_id.0)
        .bind(s.organisation.as_str())
        .bind(&s.researcher_sub)
        .bind(Json(&s.spec))
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

    async fn get_study(&mut self, id: StudyId) -> Result<Option<Study>> {
        // the columns a study's transitions change; the rest (its specification) is fixed
        let current: Option<(i64, String, Option<String>, Timestamp, i64, f64)> = sqlx::query_as(
            "select row_version, status, status_reason, updated_at, rounds_done, epsilon_spent \
             from study where study_id = $1",
        )
        .bind(id.0)
        .fetch_optional(&mut *self.tx)
        .await?;
        let Some((version, status, reason, updated_at, rounds_done, epsilon_spent)) = current
        else {
            return Ok(None);
        };
        let unchanged = |s: &Study| {
            s.row_version == version
                && s.status().as_str() == status
                && s.status_reason == reason
                && s.updated_at == updated_at
                && s.rounds_done as i64 == rounds_done
                && s.epsilon_spent.to_bits() == epsilon_spent.to_bits()
        };
        if let Some(kept) = self.rows.study(id, unchanged) {
            return Ok(Some(kept));
        }
        let row = sqlx::query("select * from study where study_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        let study = row.as_ref().map(study_row).transpose()?;
        if let Some(study) = &study {
            self.rows.keep_study(study);
        }
        Ok(study)
    }

    async fn list_studies(&mut self, scope: &Scope, page: Page) -> Result<Vec<Study>> {
        let mut q = QueryBuilder::<Db>::new("select * from study");
        match scope {
            Scope::All => {}
            Scope::Nothing | Scope::DataHolder(_) => {
                q.push(" where 1 = 0");
            }
            Scope::Organisation(o) => {
                q.push(" where organisation = ")
                    .push_bind(o.as_str().to_owned());
            }
        }
        q.push(" order by created_at desc, study_id limit ")
            .push_bind(page.limit)
            .push(" offset ")
            .push_bind(page.offset);
        let found = q.build().fetch_all(&mut *self.tx).await?;
        found.iter().map(study_row).collect()
    }

    async fn live_study_ids(&mut self) -> Result<Vec<StudyId>> {
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "select study_id from study where status in ('running', 'suspended') \
             order by created_at, study_id",
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(ids.into_iter().map(StudyId).collect())
    }

    async fn live_studies_for_permit(&mut self, permit: PermitId) -> Result<Vec<Study>> {
        let found = sqlx::query(
            "select * from study where permit_id = $1 and status in ('running', 'suspended') \
             order by created_at",
        )
        .bind(permit.0)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(study_row).collect()
    }

    async fn update_study(&mut self, s: &Study, expected_row_version: i64) -> Result<()> {
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
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    async fn study_noise_key(&mut self, id: StudyId) -> Result<Vec<u8>> {
        Ok(
            sqlx::query_scalar("select noise_key from study where study_id = $1")
                .bind(id.0)
                .fetch_one(&mut *self.tx)
                .await?,
        )
    }

    async fn study_noise_keys(&mut self) -> Result<Vec<(StudyId, Vec<u8>)>> {
        let rows: Vec<(Uuid, Vec<u8>)> =
            sqlx::query_as("select study_id, noise_key from study order by study_id")
                .fetch_all(&mut *self.tx)
                .await?;
        Ok(rows
            .into_iter()
            .map(|(id, key)| (StudyId(id), key))
            .collect())
    }

    async fn set_study_noise_key(&mut self, id: StudyId, stored: &[u8]) -> Result<()> {
        sqlx::query("update study set noise_key = $1 where study_id = $2")
            .bind(stored)
            .bind(id.0)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    async fn insert_checkpoint(&mut self, c: &Checkpoint, now: Timestamp) -> Result<()> {
        sqlx::query(
            "insert into study_checkpoint (study_id, round, global_model, server_state, \
             accountant, recorded_at) \
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(c.study_id.0)
        .bind(c.round as i64)
        .bind(&c.global)
        .bind(Json(&c.server_state))
        .bind(Json(&c.accountant))
        .bind(now)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn latest_checkpoint(&mut self, id: StudyId) -> Result<Option<Checkpoint>> {
        let row = sqlx::query(
            "select * from study_checkpoint where study_id = $1 order by round desc limit 1",
        )
        .bind(id.0)
        .fetch_optional(&mut *self.tx)
        .await?;
        row.as_ref().map(checkpoint_row).transpose()
    }

    async fn checkpoint_at(&mut self, id: StudyId, round: u64) -> Result<Option<Checkpoint>> {
        let row = sqlx::query("select * from study_checkpoint where study_id = $1 and round = $2")
            .bind(id.0)
            .bind(round as i64)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(checkpoint_row).transpose()
    }

    async fn insert_evaluation(
        &mut self,
        study: StudyId,
        round: u64,
        evaluation: &SiteEvaluation,
        now: Timestamp,
    ) -> Result<()> {
        sqlx::query(
            "insert into study_evaluation (study_id, round, data_holder, evaluation, recorded_at) \
             values ($1, $2, $3, $4, $5) on conflict do nothing",
        )
        .bind(study.0)
        .bind(round as i64)
        .bind(evaluation.data_holder.as_str())
        .bind(Json(evaluation))
        .bind(now)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn list_evaluations(&mut self, study: StudyId) -> Result<Vec<(u64, SiteEvaluation)>> {
        let found = sqlx::query(
            "select round, evaluation from study_evaluation where study_id = $1 \
             order by round, data_holder",
        )
        .bind(study.0)
        .fetch_all(&mut *self.tx)
        .await?;
        found
            .iter()
            .map(|r| {
                Ok((
                    r.try_get::<i64, _>("round")? as u64,
                    r.try_get::<Json<SiteEvaluation>, _>("evaluation")?.0,
                ))
            })
            .collect()
    }
}

fn study_row(r: &DbRow) -> Result<Study> {
    let status: String = r.try_get("status")?;
    let organisation: String = r.try_get("organisation")?;
    Ok(Study::restore(
        StudyId(r.try_get("study_id")?),
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

fn checkpoint_row(r: &DbRow) -> Result<Checkpoint> {
    Ok(Checkpoint {
        study_id: StudyId(r.try_get("study_id")?),
        round: r.try_get::<i64, _>("round")? as u64,
        global: r.try_get("global_model")?,
        server_state: r.try_get::<Json<_>, _>("server_state")?.0,
        accountant: r.try_get::<Json<_>, _>("accountant")?.0,
    })
}
