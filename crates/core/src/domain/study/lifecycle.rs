//! A study's lifecycle: its status and the transitions between them.

use serde::{Deserialize, Serialize};

use super::StudySpec;
use crate::domain::{permit::TransitionError, time::Timestamp, OrgId, StudyId};

/// The lifecycle of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StudyStatus {
    Running,
    /// The permit is suspended; the study resumes at the same round when it is reinstated.
    Suspended,
    Completed,
    Cancelled,
    /// Stopped by governance: the permit was revoked or expired, or the budget ran out.
    Stopped,
    /// A round could not reach its quorum, or the engine refused the results.
    Failed,
}

impl StudyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Suspended => "suspended",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Running,
            Self::Suspended,
            Self::Completed,
            Self::Cancelled,
            Self::Stopped,
            Self::Failed,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    /// Whether the round loop still has work for the study.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Running | Self::Suspended)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    pub id: StudyId,
    pub organisation: OrgId,
    pub researcher_sub: String,
    /// Fixed at submission; shared between clones, so that a study naming thousands of data
    /// holders is cheap to keep and hand out per request.
    pub spec: std::sync::Arc<StudySpec>,
    status: StudyStatus,
    pub status_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Rounds aggregated so far.
    pub rounds_done: u64,
    /// Epsilon the study has spent (its accountant's value after `rounds_done` rounds).
    pub epsilon_spent: f64,
    pub row_version: i64,
}

impl Study {
    pub fn new(organisation: OrgId, researcher_sub: &str, spec: StudySpec, now: Timestamp) -> Self {
        Self {
            id: StudyId::new(),
            organisation,
            researcher_sub: researcher_sub.to_owned(),
            spec: std::sync::Arc::new(spec),
            status: StudyStatus::Running,
            status_reason: None,
            created_at: now,
            updated_at: now,
            rounds_done: 0,
            epsilon_spent: 0.0,
            row_version: 1,
        }
    }

    /// Rebuilds a stored study; only the store calls this.
    #[allow(clippy::too_many_arguments)]
    pub fn restore(
        id: StudyId,
        organisation: OrgId,
        researcher_sub: String,
        spec: StudySpec,
        status: StudyStatus,
        status_reason: Option<String>,
        created_at: Timestamp,
        updated_at: Timestamp,
        rounds_done: u64,
        epsilon_spent: f64,
        row_version: i64,
    ) -> Self {
        Self {
            id,
            organisation,
            researcher_sub,
            spec: std::sync::Arc::new(spec),
            status,
            status_reason,
            created_at,
            updated_at,
            rounds_done,
            epsilon_spent,
            row_version,
        }
    }

    pub fn status(&self) -> StudyStatus {
        self.status
    }

    fn refuse(&self, action: &str) -> TransitionError {
        TransitionError {
            code: "invalid_transition",
            current_state: self.status.as_str(),
            message: format!("cannot {action} a study that is {}", self.status.as_str()),
        }
    }

    fn set(&mut self, status: StudyStatus, reason: Option<String>, now: Timestamp) {
        self.status = status;
        self.status_reason = reason;
        self.updated_at = now;
        self.row_version += 1;
    }

    fn end(
        &mut self,
        action: &str,
        status: StudyStatus,
        reason: String,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        if !self.status.is_live() {
            return Err(self.refuse(action));
        }
        self.set(status, Some(reason), now);
        Ok(())
    }

    pub fn cancel(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        self.end("cancel", StudyStatus::Cancelled, reason, now)
    }

    pub fn stop(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        self.end("stop", StudyStatus::Stopped, reason, now)
    }

    pub fn fail(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        self.end("fail", StudyStatus::Failed, reason, now)
    }

    pub fn suspend(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Running {
            return Err(self.refuse("suspend"));
        }
        self.set(StudyStatus::Suspended, Some(reason), now);
        Ok(())
    }

    pub fn resume(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Suspended {
            return Err(self.refuse("resume"));
        }
        self.set(StudyStatus::Running, None, now);
        Ok(())
    }

    /// Marks activity without a change of status, so concurrent drivers of the same study
    /// conflict on the row version rather than both acting.
    pub fn touch(&mut self, now: Timestamp) {
        self.updated_at = now;
        self.row_version += 1;
    }

    /// Records an aggregated round and the study's epsilon after it.
    pub fn record_round(
        &mut self,
        round: u64,
        epsilon_total: f64,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Running || round != self.rounds_done + 1 {
            return Err(self.refuse("record a round of"));
        }
        self.rounds_done = round;
        self.epsilon_spent = epsilon_total;
        self.updated_at = now;
        self.row_version += 1;
        Ok(())
    }

    pub fn complete(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Running || self.rounds_done < self.spec.rounds {
            return Err(self.refuse("complete"));
        }
        self.set(StudyStatus::Completed, None, now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(rounds: u64) -> Study {
        let spec = crate::domain::study_request::fixtures::spec(rounds);
        Study::new(
            OrgId::parse("uni-a").unwrap(),
            "alice",
            spec,
            crate::domain::time::now(),
        )
    }

    #[test]
    fn the_lifecycle_admits_only_its_transitions() {
        let now = crate::domain::time::now();
        let mut s = study(2);
        assert_eq!(s.status(), StudyStatus::Running);
        assert!(s.complete(now).is_err(), "no round has run");
        assert!(
            s.record_round(2, 1.0, now).is_err(),
            "rounds are recorded in order"
        );
        s.record_round(1, 1.0, now).unwrap();
        s.suspend("permit suspended".into(), now).unwrap();
        assert!(
            s.record_round(2, 2.0, now).is_err(),
            "no round while suspended"
        );
        assert!(s.suspend("again".into(), now).is_err());
        s.resume(now).unwrap();
        s.record_round(2, 2.0, now).unwrap();
        let v = s.row_version;
        s.complete(now).unwrap();
        assert_eq!(
            (s.status(), s.rounds_done, s.epsilon_spent),
            (StudyStatus::Completed, 2, 2.0)
        );
        assert!(s.row_version > v);
        for (name, r) in [
            ("cancel", s.clone().cancel("x".into(), now)),
            ("stop", s.clone().stop("x".into(), now)),
            ("fail", s.clone().fail("x".into(), now)),
            ("resume", s.clone().resume(now)),
        ] {
            let e = r.expect_err(name);
            assert_eq!(e.current_state, "completed", "{name}");
        }
        let mut c = study(3);
        c.cancel("no longer needed".into(), now).unwrap();
        assert_eq!(c.status(), StudyStatus::Cancelled);
        assert!(!c.status().is_live());
    }
}
