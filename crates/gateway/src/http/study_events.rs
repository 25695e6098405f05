//! `GET /v1/studies/{id}/events`: a study's progress as server-sent events, for the console
//! and the SDK to follow a study without polling the rounds view.
//!
//! The stream reads the database (so it follows rounds closed by any replica), at most once per
//! [`POLL`] and sooner when a node task changes, and sends what changed since it last looked:
//! * `study`: status, rounds done and epsilon spent, whenever one of them changes;
//! * `round`: a round attempt as the rounds view shows it (small-cell rule included), when it
//!   opens, again when it closes, and again whenever its view changes after that (the holders'
//!   evaluation of the model it produced arrives with the next round); its id is
//!   `<round>.<attempt>.<phase>`;
//! * `end`: the study is over (completed, failed, stopped or cancelled); the stream closes.
//!
//! A subscription is one access: authorised and audited once, when it opens. It lasts at most
//! [`MAX_STREAM`], so that a revoked role or an expired token stops being served within that
//! time; EventSource clients reconnect by themselves and get the current state again (every
//! event describes a whole state, so receiving one twice is harmless).
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::{
    extract::State,
    response::sse::{Event, KeepAlive, Sse},
};
use futures_util::stream::{self, Stream};
use serde::Serialize;

use super::{
    error::ApiResult,
    extract::{ApiPath, Caller},
    studies::{authorized_study, rounds_view},
    AppState,
};
use crate::app::reads::{self, Read};
use crate::authz::Action;
use ehds_core::domain::{audit::AuditSubject, study::StudyStatus, StudyId};

/// Longest wait between two looks at the database.
const POLL: Duration = Duration::from_secs(1);
/// Longest a subscription is served before the client must reconnect (and be authorised again).
const MAX_STREAM: Duration = Duration::from_secs(300);

/// The `study` event.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StudyProgress {
    pub study_id: StudyId,
    pub status: StudyStatus,
    pub rounds_done: u64,
    pub rounds: u64,
    pub epsilon_spent: f64,
}

/// The study's progress as server-sent events: `study` (status, rounds done, epsilon spent),
/// `round` (a round attempt as in the rounds view, when it opens, when it closes and when the
/// holders' evaluation of its model arrives) and `end` (the study is over). The stream ends
/// after at most 5 minutes; reconnect to go on.
#[utoipa::path(get, path = "/v1/studies/{id}/events", tag = "studies", security(("bearer" = [])),
    params(("id" = String, Path, description = "Study id")),
    responses(
        (status = 200, description = "text/event-stream of `study`, `round` and `end` events", content_type = "text/event-stream"),
        (status = 404, body = super::error::Problem)))]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StudyId>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let mut tx = state.store.begin().await?;
    let study = authorized_study(&state, &caller, &mut *tx, id, Action::StudyRead).await?;
    let read = Read::of(Action::StudyRead, AuditSubject::Study(id))
        .under(study.spec.permit_id)
        .view("events");
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;

    let follower = Follower {
        state,
        id,
        sent_progress: None,
        sent_rounds: HashMap::new(),
        queued: VecDeque::new(),
        first_look: true,
        finished: false,
        until: tokio::time::Instant::now() + MAX_STREAM,
    };
    let events = stream::unfold(follower, |mut f| async move {
        let event = f.next_event().await?;
        Some((Ok(event), f))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

struct Follower {
    state: AppState,
    id: StudyId,
    sent_progress: Option<StudyProgress>,
    /// The view last sent of each (round, attempt).
    sent_rounds: HashMap<(u64, u32), serde_json::Value>,
    queued: VecDeque<Event>,
    first_look: bool,
    finished: bool,
    until: tokio::time::Instant,
}

impl Follower {
    /// The next event to send; `None` ends the stream.
    async fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.queued.pop_front() {
                return Some(e);
            }
            if self.finished || tokio::time::Instant::now() >= self.until {
                return None;
            }
            if !self.first_look {
                let changed = self.state.federation.fleet.waiters.tasks.notified();
                let wait = (tokio::time::Instant::now() + POLL).min(self.until);
                tokio::select! {
                    _ = changed => {},
                    _ = tokio::time::sleep_until(wait) => {},
                }
            }
            self.first_look = false;
            if let Err(e) = self.look().await {
                // the client reconnects and gets the whole state again
                tracing::warn!(error = %e, study = %self.id, "study event stream stopped");
                return None;
            }
        }
    }

    /// Reads the study and queues what changed since the last look.
    async fn look(&mut self) -> anyhow::Result<()> {
        let mut tx = self.state.store.read().await?;
        let Some(study) = tx.get_study(self.id).await? else {
            anyhow::bail!("the study disappeared");
        };
        let view = rounds_view(&mut *tx, &study, self.state.small_cells()).await?;
        drop(tx);
        for round in &view.rounds {
            let key = (round.round, round.attempt);
            let shown = serde_json::to_value(round)?;
            if self.sent_rounds.get(&key) == Some(&shown) {
                continue;
            }
            self.queued.push_back(
                Event::default()
                    .event("round")
                    .id(format!(
                        "{}.{}.{}",
                        round.round,
                        round.attempt,
                        round.phase.as_str()
                    ))
                    .json_data(&shown)?,
            );
            self.sent_rounds.insert(key, shown);
        }
        let progress = StudyProgress {
            study_id: study.id,
            status: study.status(),
            rounds_done: study.rounds_done,
            rounds: study.spec.rounds,
            epsilon_spent: study.epsilon_spent,
        };
        if self.sent_progress.as_ref() != Some(&progress) {
            self.queued
                .push_back(Event::default().event("study").json_data(&progress)?);
            self.sent_progress = Some(progress);
        }
        if !study.status().is_live() {
            self.queued
                .push_back(Event::default().event("end").data(study.status().as_str()));
            self.finished = true;
        }
        Ok(())
    }
}
