//! Studies and permits as last read, so that the requests of thousands of data holders do not
//! each parse the rows that name them all. A cached row is handed out only when the columns
//! that can change since it was stored, read afresh in the caller's transaction, are equal to
//! its own; what cannot change (a study's specification, a permit's holder and dates of issue)
//! comes from the cache. A hit is therefore exactly the row the transaction would read, on
//! every replica and whatever was rolled back, and nothing needs invalidating.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use ehds_core::domain::{study::Study, Permit, PermitId, StudyId};

/// Rows kept at most; past it the cache starts again (live studies and their permits are few).
const MAX_ROWS: usize = 4096;

#[derive(Clone, Default)]
pub(crate) struct RowCache(Arc<Mutex<Rows>>);

#[derive(Default)]
struct Rows {
    studies: HashMap<StudyId, Study>,
    permits: HashMap<PermitId, Permit>,
}

impl RowCache {
    /// The kept study `id` if `current` says it is unchanged.
    pub fn study(&self, id: StudyId, current: impl FnOnce(&Study) -> bool) -> Option<Study> {
        let rows = self.0.lock().unwrap_or_else(|p| p.into_inner());
        rows.studies.get(&id).filter(|s| current(s)).cloned()
    }

    pub fn keep_study(&self, study: &Study) {
        let mut rows = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if rows.studies.len() >= MAX_ROWS {
            rows.studies.clear();
        }
        rows.studies.insert(study.id, study.clone());
    }

    /// The kept permit `id` if `current` says it is unchanged.
    pub fn permit(&self, id: PermitId, current: impl FnOnce(&Permit) -> bool) -> Option<Permit> {
        let rows = self.0.lock().unwrap_or_else(|p| p.into_inner());
        rows.permits.get(&id).filter(|p| current(p)).cloned()
    }

    pub fn keep_permit(&self, permit: &Permit) {
        let mut rows = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if rows.permits.len() >= MAX_ROWS {
            rows.permits.clear();
        }
        rows.permits.insert(permit.id(), permit.clone());
    }
}
