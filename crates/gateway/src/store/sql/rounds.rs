//! A study's rounds and their tasks: the `study_round` and `study_task` tables.

use async_trait::async_trait;
use sqlx::{types::Json, Row};

use ehds_core::domain::{
    study::{Round, RoundPhase, Task, TaskKind, TaskStatus},
    time::Timestamp,
    OrgId, RoundId, StudyId, TaskId,
};

use super::{corrupt, DbRow, DbTx};
use crate::store::{Result, RoundTx, StoreError};

/// The task columns every task read needs: all but the stored update, which only the
/// aggregation reads (`task_result`), so that listing a round's N tasks does not load N models.
macro_rules! task_columns {
    () => {
        "task_id, study_id, round_id, round, kind, data_holder, status, created_at, deadline, \
         completed_at, report"
    };
}

#[async_trait]
impl RoundTx for DbTx {
    async fn insert_round(&mut self, r: &Round) -> Result<()> {
        sqlx::query(
            "insert into study_round (round_id, study_id, round, attempt, phase, registry_version, \
             participants, opened_at, deadline, closed_at, reason, epsilon_round, epsilon_total, \
             summary) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(r.id.0)
        .bind(r.study_id.0)
        .bind(r.round as i64)
        .bind(i64::from(r.attempt))
        .bind(r.phase.as_str())
        .bind(r.registry_version)
        .bind(Json(&r.participants))
        .bind(r.opened_at)
        .bind(r.deadline)
        .bind(r.closed_at)
        .bind(&r.reason)
        .bind(r.epsilon_round)
        .bind(r.epsilon_total)
        .bind(Json(&r.summary))
        .execute(&mut *self.tx)
        .await?;
        self.observed.round_started();
        Ok(())
    }

    async fn close_round(&mut self, r: &Round) -> Result<()> {
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
        .bind(Json(&r.summary))
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() != 1 {
            return Err(StoreError::Conflict);
        }
        self.observed.round_closed(r.phase);
        Ok(())
    }

    async fn get_round(&mut self, id: RoundId) -> Result<Option<Round>> {
        let row = sqlx::query("select * from study_round where round_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(round_row).transpose()
    }

    async fn open_round(&mut self, id: StudyId) -> Result<Option<Round>> {
        let row = sqlx::query(
            "select * from study_round where study_id = $1 and phase = 'collecting' \
             order by round desc, attempt desc limit 1",
        )
        .bind(id.0)
        .fetch_optional(&mut *self.tx)
        .await?;
        row.as_ref().map(round_row).transpose()
    }

    async fn list_rounds(&mut self, id: StudyId) -> Result<Vec<Round>> {
        let found =
            sqlx::query("select * from study_round where study_id = $1 order by round, attempt")
                .bind(id.0)
                .fetch_all(&mut *self.tx)
                .await?;
        found.iter().map(round_row).collect()
    }

    async fn insert_task(&mut self, t: &Task) -> Result<()> {
        sqlx::query(
            "insert into study_task (task_id, study_id, round_id, round, kind, data_holder, \
             status, created_at, deadline, completed_at, report) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
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
        .bind(t.report.as_ref().map(Json))
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn get_task(&mut self, id: TaskId) -> Result<Option<Task>> {
        let row = sqlx::query(concat!(
            "select ",
            task_columns!(),
            " from study_task where task_id = $1"
        ))
        .bind(id.0)
        .fetch_optional(&mut *self.tx)
        .await?;
        row.as_ref().map(task_row).transpose()
    }

    async fn pending_tasks_for(
        &mut self,
        holder: &OrgId,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<Task>> {
        let found = sqlx::query(concat!(
            "select ",
            task_columns!(),
            " from study_task where data_holder = $1 and status = 'pending' \
             and deadline > $2 order by created_at, task_id limit $3"
        ))
        .bind(holder.as_str())
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(task_row).collect()
    }

    async fn round_tasks(&mut self, round: RoundId) -> Result<Vec<Task>> {
        let found = sqlx::query(concat!(
            "select ",
            task_columns!(),
            " from study_task where round_id = $1 order by data_holder, kind"
        ))
        .bind(round.0)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(task_row).collect()
    }

    async fn count_fit_results(&mut self, round: RoundId) -> Result<(u64, u64)> {
        let (total, completed): (i64, i64) = sqlx::query_as(
            "select count(*), coalesce(sum(case when status = 'completed' then 1 else 0 end), 0) \
             from study_task where round_id = $1 and kind = 'fit'",
        )
        .bind(round.0)
        .fetch_one(&mut *self.tx)
        .await?;
        Ok((total.max(0) as u64, completed.max(0) as u64))
    }

    async fn round_registry_version(&mut self, round: RoundId) -> Result<Option<i64>> {
        Ok(
            sqlx::query_scalar("select registry_version from study_round where round_id = $1")
                .bind(round.0)
                .fetch_optional(&mut *self.tx)
                .await?,
        )
    }

    async fn reported_tasks(&mut self, study: StudyId) -> Result<Vec<Task>> {
        let found = sqlx::query(concat!(
            "select ",
            task_columns!(),
            // through the study's rounds, whose index the tasks' `round_id` index follows
            " from study_task where round_id in \
             (select round_id from study_round where study_id = $1) and report is not null \
             order by round, completed_at, data_holder"
        ))
        .bind(study.0)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(task_row).collect()
    }

    async fn complete_task(&mut self, t: &Task, result: Option<&[u8]>) -> Result<()> {
        let done = sqlx::query(
            "update study_task set status = $2, completed_at = $3, report = $4, result = $5 \
             where task_id = $1 and status = 'pending'",
        )
        .bind(t.id.0)
        .bind(t.status.as_str())
        .bind(t.completed_at)
        .bind(t.report.as_ref().map(Json))
        .bind(result)
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    async fn close_pending_tasks(&mut self, round: RoundId, status: TaskStatus) -> Result<u64> {
        let holders: Vec<String> = sqlx::query_scalar(
            "update study_task set status = $2 where round_id = $1 and status = 'pending' \
             returning data_holder",
        )
        .bind(round.0)
        .bind(status.as_str())
        .fetch_all(&mut *self.tx)
        .await?;
        let closed = holders.len() as u64;
        if status == TaskStatus::Expired {
            holders
                .into_iter()
                .for_each(|h| self.observed.task_expired(h));
        }
        Ok(closed)
    }

    async fn task_result(&mut self, id: TaskId) -> Result<Option<Vec<u8>>> {
        let found: Option<Option<Vec<u8>>> =
            sqlx::query_scalar("select result from study_task where task_id = $1")
                .bind(id.0)
                .fetch_optional(&mut *self.tx)
                .await?;
        Ok(found.flatten())
    }
}

fn round_row(r: &DbRow) -> Result<Round> {
    let phase: String = r.try_get("phase")?;
    Ok(Round {
        id: RoundId(r.try_get("round_id")?),
        study_id: StudyId(r.try_get("study_id")?),
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

fn task_row(r: &DbRow) -> Result<Task> {
    let kind: String = r.try_get("kind")?;
    let status: String = r.try_get("status")?;
    let holder: String = r.try_get("data_holder")?;
    Ok(Task {
        id: TaskId(r.try_get("task_id")?),
        study_id: StudyId(r.try_get("study_id")?),
        round_id: RoundId(r.try_get("round_id")?),
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
