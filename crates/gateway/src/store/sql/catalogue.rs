//! The Art. 77 dataset catalogue: the `catalogue_dataset` and `catalogue_dataset_revision`
//! tables.

use async_trait::async_trait;
use sqlx::{types::Json, Row};

use ehds_core::domain::{
    catalogue::{CatalogueEntry, DatasetId, EntryStatus},
    time::Timestamp,
};

use super::{corrupt, DbRow, DbTx};
use crate::store::{CatalogueTx, Page, Result, StoreError};

#[async_trait]
impl CatalogueTx for DbTx {
    async fn insert_dataset(&mut self, entry: &CatalogueEntry) -> Result<()> {
        sqlx::query(
            "insert into catalogue_dataset (dataset_id, publisher, status, revision, issued_at, \
             modified_at, dataset) values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(entry.id.0)
        .bind(entry.publisher().as_str())
        .bind(entry.status.as_str())
        .bind(entry.revision)
        .bind(entry.issued)
        .bind(entry.modified)
        .bind(Json(&entry.dataset))
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn get_dataset(&mut self, id: DatasetId) -> Result<Option<CatalogueEntry>> {
        let row = sqlx::query("select * from catalogue_dataset where dataset_id = $1")
            .bind(id.0)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(entry_row).transpose()
    }

    async fn update_dataset(
        &mut self,
        entry: &CatalogueEntry,
        expected_revision: i64,
    ) -> Result<()> {
        let done = sqlx::query(
            "update catalogue_dataset set status = $2, revision = $3, modified_at = $4, \
             dataset = $5 where dataset_id = $1 and revision = $6 and publisher = $7",
        )
        .bind(entry.id.0)
        .bind(entry.status.as_str())
        .bind(entry.revision)
        .bind(entry.modified)
        .bind(Json(&entry.dataset))
        .bind(expected_revision)
        .bind(entry.publisher().as_str())
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict);
        }
        Ok(())
    }

    async fn insert_dataset_revision(
        &mut self,
        entry: &CatalogueEntry,
        by: &str,
        now: Timestamp,
    ) -> Result<()> {
        sqlx::query(
            "insert into catalogue_dataset_revision (dataset_id, revision, recorded_at, \
             recorded_by, dataset) values ($1, $2, $3, $4, $5)",
        )
        .bind(entry.id.0)
        .bind(entry.revision)
        .bind(now)
        .bind(by)
        .bind(Json(&entry.dataset))
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn list_published_datasets(&mut self, page: Page) -> Result<Vec<CatalogueEntry>> {
        let found = sqlx::query(
            "select * from catalogue_dataset where status = 'published' \
             order by issued_at, dataset_id limit $1 offset $2",
        )
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&mut *self.tx)
        .await?;
        found.iter().map(entry_row).collect()
    }

    async fn count_published_datasets(&mut self) -> Result<u64> {
        let n: i64 =
            sqlx::query_scalar("select count(*) from catalogue_dataset where status = 'published'")
                .fetch_one(&mut *self.tx)
                .await?;
        u64::try_from(n).map_err(|_| corrupt("dataset count"))
    }
}

fn entry_row(r: &DbRow) -> Result<CatalogueEntry> {
    let status: String = r.try_get("status")?;
    let entry = CatalogueEntry {
        id: DatasetId(r.try_get("dataset_id")?),
        revision: r.try_get("revision")?,
        status: EntryStatus::parse(&status).ok_or_else(|| corrupt("catalogue entry status"))?,
        issued: r.try_get("issued_at")?,
        modified: r.try_get("modified_at")?,
        dataset: r.try_get::<Json<_>, _>("dataset")?.0,
    };
    let publisher: String = r.try_get("publisher")?;
    if publisher != entry.publisher().as_str() {
        return Err(corrupt("catalogue entry publisher"));
    }
    Ok(entry)
}
