//! The Art. 77 dataset catalogue: a data holder publishes a dataset description, publishes new
//! versions of it and withdraws it, each change stored with its revision and its audit entry in
//! the caller's transaction; the public reads pages of the published datasets.

use super::Requester;
use crate::{
    authz::Action,
    store::{Page, StoreError, Tx},
};
use ehds_core::domain::{
    audit::AuditSubject,
    audit_details::CatalogueChanged,
    catalogue::{CatalogueEntry, Dataset, DatasetId, EntryStatus},
    time::Timestamp,
};

/// Why a change to a catalogue entry was not made; nothing was stored.
#[derive(Debug)]
pub enum ChangeError {
    NotFound,
    /// The entry was withdrawn: a withdrawn dataset takes no new version and no second
    /// withdrawal (its holder publishes it anew).
    Withdrawn,
    Store(StoreError),
}

impl From<StoreError> for ChangeError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

async fn record(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    action: Action,
    entry: &CatalogueEntry,
) -> crate::store::Result<()> {
    tx.append_audit(
        by.audit(action, AuditSubject::Dataset(entry.id))
            .details(&CatalogueChanged {
                revision: entry.revision,
                identifier: &entry.dataset.identifier,
                status: entry.status.as_str(),
            }),
    )
    .await?;
    Ok(())
}

/// Publishes a new dataset: the entry at revision 1, the revision, the audit entry.
#[tracing::instrument(name = "Publishing a catalogue dataset", skip_all)]
pub async fn publish(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    dataset: Dataset,
    now: Timestamp,
) -> crate::store::Result<CatalogueEntry> {
    let entry = CatalogueEntry {
        id: DatasetId::new(),
        revision: 1,
        status: EntryStatus::Published,
        issued: now,
        modified: now,
        dataset,
    };
    tx.insert_dataset(&entry).await?;
    tx.insert_dataset_revision(&entry, &by.principal.sub, now)
        .await?;
    record(tx, by, Action::CatalogueCreate, &entry).await?;
    Ok(entry)
}

/// The entry a change applies to, if it is still published.
pub async fn load_published(tx: &mut dyn Tx, id: DatasetId) -> Result<CatalogueEntry, ChangeError> {
    let entry = tx.get_dataset(id).await?.ok_or(ChangeError::NotFound)?;
    if entry.status == EntryStatus::Withdrawn {
        return Err(ChangeError::Withdrawn);
    }
    Ok(entry)
}

/// Publishes a new version of `current` (read with [`load_published`] in this transaction).
#[tracing::instrument(name = "Publishing a new version of a catalogue dataset", skip_all, fields(dataset = %current.id))]
pub async fn new_version(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    current: CatalogueEntry,
    dataset: Dataset,
    now: Timestamp,
) -> crate::store::Result<CatalogueEntry> {
    let expected = current.revision;
    let entry = CatalogueEntry {
        revision: expected + 1,
        modified: now,
        dataset,
        ..current
    };
    tx.update_dataset(&entry, expected).await?;
    tx.insert_dataset_revision(&entry, &by.principal.sub, now)
        .await?;
    record(tx, by, Action::CatalogueUpdate, &entry).await?;
    Ok(entry)
}

/// Takes `current` out of the public catalogue; its revisions stay.
#[tracing::instrument(name = "Withdrawing a catalogue dataset", skip_all, fields(dataset = %current.id))]
pub async fn withdraw(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    current: CatalogueEntry,
    now: Timestamp,
) -> crate::store::Result<CatalogueEntry> {
    let expected = current.revision;
    let entry = CatalogueEntry {
        status: EntryStatus::Withdrawn,
        modified: now,
        ..current
    };
    tx.update_dataset(&entry, expected).await?;
    record(tx, by, Action::CatalogueWithdraw, &entry).await?;
    Ok(entry)
}

/// A page of the published datasets and how many there are in all.
pub async fn page(tx: &mut dyn Tx, page: Page) -> crate::store::Result<(Vec<CatalogueEntry>, u64)> {
    let entries = tx.list_published_datasets(page).await?;
    let total = tx.count_published_datasets().await?;
    Ok((entries, total))
}
