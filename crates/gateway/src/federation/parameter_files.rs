//! The parameter file of a round, encoded once. Every holder of a round downloads the same
//! file (`GET /v1/node/tasks/{id}/parameters`), and building it — decoding the checkpoint
//! and checking its digest, the method's `configure_fit`, writing and digesting the
//! safetensors — was most of a download's cost, repeated for each holder.
//!
//! A file is found again only for the checkpoint it was built from, compared byte for byte
//! (parameters and the method's server state; which round's checkpoint a task starts from
//! follows from its round and kind), so a gateway replica that did not see a change can
//! never serve a stale file; the store stays the only truth.

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;

use ehds_core::domain::{
    study::{Checkpoint, TaskKind},
    StudyId,
};

/// Files of this many rounds are kept (concurrent studies; each is a model's size).
const KEPT: usize = 8;

struct Entry {
    study: StudyId,
    round: u64,
    kind: TaskKind,
    global: Vec<u8>,
    server_state: serde_json::Value,
    file: Bytes,
}

impl Entry {
    fn built_from(&self, study: StudyId, round: u64, kind: TaskKind, c: &Checkpoint) -> bool {
        self.study == study
            && self.round == round
            && self.kind == kind
            && self.global == c.global
            && self.server_state == c.server_state
    }
}

#[derive(Default)]
pub struct ParameterFiles(Mutex<VecDeque<Entry>>);

impl ParameterFiles {
    /// The file of `study`'s task of `round` and `kind` built from `checkpoint`, if kept.
    pub fn get(
        &self,
        study: StudyId,
        round: u64,
        kind: TaskKind,
        checkpoint: &Checkpoint,
    ) -> Option<Bytes> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|e| e.built_from(study, round, kind, checkpoint))
            .map(|e| e.file.clone())
    }

    /// Keeps `file`, built from `checkpoint`, in place of the study's earlier file of that
    /// kind, or else of the oldest one kept.
    pub fn keep(
        &self,
        study: StudyId,
        round: u64,
        kind: TaskKind,
        checkpoint: Checkpoint,
        file: Bytes,
    ) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| !(e.study == study && e.kind == kind));
        if entries.len() == KEPT {
            entries.pop_front();
        }
        entries.push_back(Entry {
            study,
            round,
            kind,
            global: checkpoint.global,
            server_state: checkpoint.server_state,
            file,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(study: StudyId, round: u64, global: &[u8]) -> Checkpoint {
        Checkpoint {
            study_id: study,
            round,
            global: global.to_vec(),
            server_state: serde_json::json!({"momentum": [0.5]}),
            accountant: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_file_is_found_only_for_the_checkpoint_it_was_built_from() {
        let files = ParameterFiles::default();
        let study = StudyId::new();
        let c = checkpoint(study, 1, b"weights of round 1");
        files.keep(
            study,
            2,
            TaskKind::Fit,
            c.clone(),
            Bytes::from_static(b"file"),
        );
        assert_eq!(
            files.get(study, 2, TaskKind::Fit, &c).as_deref(),
            Some(&b"file"[..])
        );
        // another task of the round, kind, study, or checkpoint content: not this file
        assert!(files.get(study, 3, TaskKind::Fit, &c).is_none());
        assert!(files.get(study, 2, TaskKind::Evaluate, &c).is_none());
        assert!(files.get(StudyId::new(), 2, TaskKind::Fit, &c).is_none());
        let rewritten = checkpoint(study, 1, b"weights of round 1, rewritten");
        assert!(files.get(study, 2, TaskKind::Fit, &rewritten).is_none());
        let mut state = c.clone();
        state.server_state = serde_json::json!({"momentum": [0.25]});
        assert!(files.get(study, 2, TaskKind::Fit, &state).is_none());
    }

    #[test]
    fn a_study_keeps_one_file_per_kind_and_the_oldest_goes_first() {
        let files = ParameterFiles::default();
        let study = StudyId::new();
        let (c1, c2) = (checkpoint(study, 1, b"r1"), checkpoint(study, 2, b"r2"));
        files.keep(
            study,
            2,
            TaskKind::Fit,
            c1.clone(),
            Bytes::from_static(b"f2"),
        );
        files.keep(
            study,
            3,
            TaskKind::Fit,
            c2.clone(),
            Bytes::from_static(b"f3"),
        );
        assert!(files.get(study, 2, TaskKind::Fit, &c1).is_none());
        assert!(files.get(study, 3, TaskKind::Fit, &c2).is_some());
        let others: Vec<(StudyId, Checkpoint)> = (0..KEPT)
            .map(|_| {
                let s = StudyId::new();
                (s, checkpoint(s, 1, b"other"))
            })
            .collect();
        for (s, c) in &others {
            files.keep(*s, 2, TaskKind::Fit, c.clone(), Bytes::from_static(b"x"));
        }
        assert!(files.get(study, 3, TaskKind::Fit, &c2).is_none());
        assert!(others
            .iter()
            .all(|(s, c)| files.get(*s, 2, TaskKind::Fit, c).is_some()));
    }
}
