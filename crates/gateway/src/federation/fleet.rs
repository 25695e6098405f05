//! Gateway replicas on one database working as one: what wakes a waiter in one process wakes it
//! in every process, and work that must happen once (a study's round loop, the sweeps, a webhook
//! endpoint's deliveries) is leased to one replica at a time.
//!
//! Signals travel through the store ([`Store::publish`]: PostgreSQL `NOTIFY`); a replica that
//! misses some (its listening connection dropped) wakes every waiter once, and every waiter
//! also looks again on its own timer, so a lost signal costs time, never correctness. Leases
//! save work, not correctness either: every change still checks its row version, so two
//! replicas that both believed they held a lease (clock skew, a stalled owner) would conflict
//! rather than aggregate a round twice.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use crate::store::{Store, StoreError};
use ehds_core::domain::time;

/// What a waiter waits for; a set of them travels as one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Signal {
    /// The round loop has something to act on.
    RoundLoop = 1,
    /// Node tasks appeared or closed: the nodes' long polls and the study event streams.
    Tasks = 2,
    /// A secure aggregation moved on: holders waiting on its next stage.
    Secagg = 4,
}

const ALL: u8 = Signal::RoundLoop as u8 | Signal::Tasks as u8 | Signal::Secagg as u8;

/// The waiters of this process, woken by signals from here and from the other replicas.
#[derive(Default)]
pub struct Waiters {
    /// Signalled with `notify_one`, which keeps a permit when nobody waits, so a wake-up that
    /// arrives while the loop is busy is not lost.
    pub round_loop: Notify,
    pub tasks: Notify,
    pub secagg: Notify,
}

impl Waiters {
    fn wake(&self, signals: u8) {
        if signals & Signal::RoundLoop as u8 != 0 {
            self.round_loop.notify_one();
        }
        if signals & Signal::Tasks as u8 != 0 {
            self.tasks.notify_waiters();
        }
        if signals & Signal::Secagg as u8 != 0 {
            self.secagg.notify_waiters();
        }
    }
}

/// This replica's part in the fleet.
pub struct Fleet {
    store: Arc<dyn Store>,
    /// This process: the owner named in its leases and the sender named in its signals.
    replica: String,
    lease_ttl: Duration,
    pub waiters: Waiters,
    /// Signals raised here and not yet sent to the others: a burst of them (a thousand node
    /// results) goes out as one notification.
    unsent: AtomicU8,
    outbox: Notify,
    /// The leases this replica holds, and when it next renews each.
    held: Mutex<HashMap<String, Instant>>,
}

impl Fleet {
    pub fn new(store: Arc<dyn Store>, lease_ttl: Duration) -> Self {
        // the pod's name where there is one, so that an operator reading the lease table
        // knows which replica holds what
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "gateway".to_owned());
        let host: String = host
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
            .take(63)
            .collect();
        Self {
            store,
            replica: format!("{host}/{}", uuid::Uuid::new_v4().simple()),
            lease_ttl: lease_ttl.max(Duration::from_secs(1)),
            waiters: Waiters::default(),
            unsent: AtomicU8::new(0),
            outbox: Notify::new(),
            held: Mutex::default(),
        }
    }

    pub fn replica(&self) -> &str {
        &self.replica
    }

    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }

    /// Wakes the waiters for `signal` here at once, and in the other replicas as soon as the
    /// sender gets to it.
    pub fn signal(&self, signal: Signal) {
        self.waiters.wake(signal as u8);
        self.unsent.fetch_or(signal as u8, Ordering::AcqRel);
        self.outbox.notify_one();
    }

    /// Whether this replica holds lease `name` (for the fleet's lease time), taking it if it is
    /// free or its holder stopped renewing it.
    pub async fn hold(&self, name: &str) -> Result<bool, StoreError> {
        self.hold_for(name, self.lease_ttl).await
    }

    /// [`Fleet::hold`] with a lease time of its own, for work that renews less often.
    pub async fn hold_for(&self, name: &str, ttl: Duration) -> Result<bool, StoreError> {
        let now = Instant::now();
        if self
            .lock()
            .get(name)
            .is_some_and(|renew_at| now < *renew_at)
        {
            return Ok(true);
        }
        let clock = time::now();
        let until = clock + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(1));
        let mut tx = self.store.begin().await?;
        let held = tx.take_lease(name, &self.replica, clock, until).await?;
        tx.commit().await?;
        let mut leases = self.lock();
        if held {
            // renewed halfway through, so it never runs out while this replica is alive
            if leases.insert(name.to_owned(), now + ttl / 2).is_none() {
                tracing::info!(lease = name, replica = %self.replica, "lease taken");
            }
        } else if leases.remove(name).is_some() {
            tracing::warn!(lease = name, replica = %self.replica, "lease lost to another replica");
        }
        Ok(held)
    }

    /// Gives up every lease of this replica, so that a replica stopping in order hands its
    /// work over at once rather than after the lease time.
    pub async fn release_all(&self) -> Result<u64, StoreError> {
        self.lock().clear();
        let mut tx = self.store.begin().await?;
        let released = tx.release_leases(&self.replica).await?;
        tx.commit().await?;
        Ok(released)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends this replica's signals to the others and wakes its waiters on theirs, until the
    /// process stops. Does nothing where the store serves one process.
    pub fn spawn(self: &Arc<Self>) -> Vec<tokio::task::JoinHandle<()>> {
        vec![
            tokio::spawn(self.clone().send_signals()),
            tokio::spawn(self.clone().receive_signals()),
        ]
    }

    async fn send_signals(self: Arc<Self>) {
        loop {
            self.outbox.notified().await;
            let signals = self.unsent.swap(0, Ordering::AcqRel);
            if signals == 0 {
                continue;
            }
            if let Err(e) = self
                .store
                .publish(&format!("{} {signals}", self.replica))
                .await
            {
                // the others still look on their own timers
                tracing::warn!(error = %e, "could not signal the other replicas");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    async fn receive_signals(self: Arc<Self>) {
        loop {
            let mut subscription = match self.store.subscribe().await {
                Ok(Some(s)) => s,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "could not listen to the other replicas; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            loop {
                match subscription.next().await {
                    Ok(Some(payload)) => match parse(&payload) {
                        Some((from, _)) if from == self.replica => {}
                        Some((_, signals)) => self.waiters.wake(signals),
                        None => tracing::warn!(payload, "unreadable fleet signal"),
                    },
                    // listening again after a lost connection: whatever was missed, look now
                    Ok(None) => self.waiters.wake(ALL),
                    Err(e) => {
                        tracing::warn!(error = %e, "lost the other replicas' signals; listening again");
                        self.waiters.wake(ALL);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        break;
                    }
                }
            }
        }
    }
}

/// `"<replica> <signals>"`.
fn parse(payload: &str) -> Option<(&str, u8)> {
    let (from, signals) = payload.rsplit_once(' ')?;
    let signals: u8 = signals.parse().ok()?;
    (signals & !ALL == 0).then_some((from, signals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_travel_as_one_byte_with_their_sender() {
        assert_eq!(parse("gw-0/ab12 3"), Some(("gw-0/ab12", 3)));
        assert_eq!(parse("gw-0/ab12 7"), Some(("gw-0/ab12", ALL)));
        assert_eq!(parse("gw-0/ab12 8"), None);
        assert_eq!(parse("gw-0/ab12 x"), None);
        assert_eq!(parse("nothing"), None);
    }
}
