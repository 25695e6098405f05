//! Statistics runs and their holders' tasks: the `statistics_run` and `statistics_task` tables.
//! A run is stored whole as JSON (`body`) beside the columns lists filter on.

use async_trait::async_trait;
use sqlx::{types::Json, QueryBuilder, Row};
use uuid::Uuid;

use ehds_core::domain::{
    statistics::{Contribution, StatisticsRun, StatisticsTaskRecord},
    time::Timestamp,
    OrgId, StatisticsRunId, StatisticsTaskId,
};

use super::{corrupt, Db, DbRow, DbTx};
use crate::store::{Page, Result, RunFilter, Scope, StatisticsTx, StoreError, StoredRun};

#[async_trait]
impl StatisticsTx for DbTx {
    async fn insert_statistics_run(&mut self, run: &StatisticsRun) -> Result<()> {
        sqlx::query(
            "insert into statistics_run (run_id, permit_id, application_id, organisation, status, \
             created_at, deadline, body, row_version) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, 1)",
        )
        .bind(run.id.0)
        .bind(run.permit_id.0)
        .bind(run.application_id.map(|a| a.0))
        .bind(run.organisation.as_str())
        .bind(run.status.as_str())
        .bind(run.created_at)
        .bind(run.deadline)
        .bind(Json(run))
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn get_statistics_run(&mut self, id: StatisticsRunId) -> Result<Option<StoredRun>> {
        let row = sqlx::query("select body, row_version from statistics_run where run_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(run_row).transpose()
    }

    async fn list_statistics_runs(
        &mut self,
        scope: &Scope,
        filter: &RunFilter,
        page: Page,
    ) -> Result<Vec<StoredRun>> {
        let mut q =
            QueryBuilder::<Db>::new("select body, row_version from statistics_run where 1 = 1");
        match scope {
            Scope::All => {}
            Scope::Nothing | Scope::DataHolder(_) => {
                q.push(" and 1 = 0");
            }
            Scope::Organisation(o) => {
                q.push(" and organisation = ")
                    .push_bind(o.as_str().to_owned());
            }
        }
        if let Some(p) = filter.permit_id {
            q.push(" and permit_id = ").push_bind(p.0);
        }
        if let Some(a) = filter.application_id {
            q.push(" and application_id = ").push_bind(a.0);
        }
        if !filter.statuses.is_empty() {
            q.push(" and status in (");
            let mut list = q.separated(", ");
            for s in &filter.statuses {
                list.push_bind(s.as_str());
            }
            q.push(")");
        }
        q.push(" order by created_at desc, run_id desc limit ")
            .push_bind(page.limit)
            .push(" offset ")
            .push_bind(page.offset);
        let found = q.build().fetch_all(&mut *self.tx).await?;
        found.iter().map(run_row).collect()
    }

    async fn released_statistics_runs(&mut self, organisation: &OrgId) -> Result<Vec<StoredRun>> {
        let found = sqlx::query(
            "select body, row_version from statistics_run \
             where organisation = $1 and status = 'released' order by created_at, run_id",
        )
        .bind(organisation.as_str())
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(run_row).collect()
    }

    async fn computing_runs_past_deadline(
        &mut self,
        now: Timestamp,
    ) -> Result<Vec<StatisticsRunId>> {
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "select run_id from statistics_run where status = 'computing' and deadline <= $1 \
             order by deadline, run_id",
        )
        .bind(now)
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(ids.into_iter().map(StatisticsRunId).collect())
    }

    async fn update_statistics_run(
        &mut self,
        run: &StatisticsRun,
        expected_row_version: i64,
    ) -> Result<()> {
        let done = sqlx::query(
            "update statistics_run set status = $3, body = $4, row_version = $2 + 1 \
             where run_id = $1 and row_version = $2",
        )
        .bind(run.id.0)
        .bind(expected_row_version)
        .bind(run.status.as_str())
        .bind(Json(run))
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    async fn insert_statistics_task(&mut self, task: &StatisticsTaskRecord) -> Result<()> {
        sqlx::query(
            "insert into statistics_task (task_id, run_id, data_holder, deadline) \
             values ($1, $2, $3, $4)",
        )
        .bind(task.id.0)
        .bind(task.run_id.0)
        .bind(task.data_holder.as_str())
        .bind(task.deadline)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn get_statistics_task(
        &mut self,
        id: StatisticsTaskId,
    ) -> Result<Option<StatisticsTaskRecord>> {
        let row = sqlx::query("select * from statistics_task where task_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(task_row).transpose()
    }

    async fn open_statistics_tasks_for(
        &mut self,
        holder: &OrgId,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<StatisticsTaskRecord>> {
        let found = sqlx::query(
            "select * from statistics_task where data_holder = $1 and completed_at is null \
             and deadline > $2 order by deadline, task_id limit $3",
        )
        .bind(holder.as_str())
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(task_row).collect()
    }

    async fn statistics_tasks(
        &mut self,
        run: StatisticsRunId,
    ) -> Result<Vec<StatisticsTaskRecord>> {
        let found =
            sqlx::query("select * from statistics_task where run_id = $1 order by data_holder")
                .bind(run.0)
                .fetch_all(&mut *self.tx)
                .await?;
        found.iter().map(task_row).collect()
    }

    async fn complete_statistics_task(
        &mut self,
        id: StatisticsTaskId,
        contribution: &Contribution,
        now: Timestamp,
    ) -> Result<()> {
        let done = sqlx::query(
            "update statistics_task set completed_at = $2, contribution = $3 \
             where task_id = $1 and completed_at is null",
        )
        .bind(id.0)
        .bind(now)
        .bind(Json(contribution))
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }
}

fn run_row(r: &DbRow) -> Result<StoredRun> {
    Ok(StoredRun {
        run: r.try_get::<Json<StatisticsRun>, _>("body")?.0,
        row_version: r.try_get("row_version")?,
    })
}

fn task_row(r: &DbRow) -> Result<StatisticsTaskRecord> {
    let holder: String = r.try_get("data_holder")?;
    Ok(StatisticsTaskRecord {
        id: StatisticsTaskId(r.try_get("task_id")?),
        run_id: StatisticsRunId(r.try_get("run_id")?),
        data_holder: OrgId::parse(&holder).map_err(|_| corrupt("data holder"))?,
        deadline: r.try_get("deadline")?,
        contribution: r
            .try_get::<Option<Json<Contribution>>, _>("contribution")?
            .map(|j| j.0),
    })
}
