//! The node's own log of every task it accepted or refused, and why, and of every round whose
//! secure aggregation it stopped because the relay sent what the protocol refuses: append-only
//! JSON lines,
//! each carrying the SHA-256 of the line before it, so an edited, removed or reordered line
//! breaks the chain (`ehds-node log verify`). It stays with the data holder: the
//! hospital's own evidence of what its node did, independent of the gateway's audit trail.
//!
//! Like any hash chain, it cannot show that its last lines were cut off; keep the count and
//! head that `node log verify` prints (e.g. in the hospital's own records) to detect that.
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// File name in the node's state directory.
pub const FILE: &str = "node-log.jsonl";
/// `prev` of the first line.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogEntry {
    pub seq: u64,
    pub at: chrono::DateTime<chrono::Utc>,
    pub task_id: String,
    pub study_id: String,
    pub permit_id: String,
    pub round: u64,
    pub kind: String,
    pub method: String,
    /// `accepted` or `refused`; `aborted` when the node stopped its part of the round's secure
    /// aggregation.
    pub decision: String,
    /// The refusal's or abort's code, and its reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Epsilon of this holder's releases under the permit, by the node's accounting, once the
    /// accepted task counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit_epsilon: Option<f64>,
    pub prev: String,
    pub hash: String,
}

impl LogEntry {
    /// SHA-256 over the entry's JSON without `hash` (field order as declared).
    fn digest(&self) -> String {
        let mut unhashed = serde_json::to_value(self).expect("an entry serialises");
        unhashed.as_object_mut().expect("an object").remove("hash");
        hex::encode(Sha256::digest(unhashed.to_string().as_bytes()))
    }
}

/// What an entry says, before it is chained.
pub struct Decision<'a> {
    pub task_id: String,
    pub study_id: String,
    pub permit_id: String,
    pub round: u64,
    pub kind: &'a str,
    pub method: &'a str,
    pub verdict: Verdict<'a>,
}

/// What the node decided, or did, about a task.
pub enum Verdict<'a> {
    /// Worked, with the permit's epsilon by the node's accounting once it counts.
    Accepted { permit_epsilon: Option<f64> },
    /// Refused by the node's policy.
    Refused { code: &'a str, reason: &'a str },
    /// Accepted, but the node stopped its part of the round's secure aggregation: the relay
    /// sent something the protocol refuses (a message of another session or stage, keys or
    /// shares that do not check out, an inconsistent survivor list, a sum of fewer holders
    /// than the noise was planned for).
    Aborted { code: &'a str, reason: &'a str },
}

/// The log, open for appending.
pub struct NodeLog {
    path: PathBuf,
    next_seq: u64,
    head: String,
}

impl NodeLog {
    /// Opens the log in `state_dir`, checking the chain it continues.
    pub fn open(state_dir: &Path) -> anyhow::Result<Self> {
        let path = state_dir.join(FILE);
        let (count, head) = verify(&path)?;
        Ok(Self {
            path,
            next_seq: count + 1,
            head,
        })
    }

    pub fn append(&mut self, d: Decision<'_>) -> anyhow::Result<LogEntry> {
        let (decision, code, reason, permit_epsilon) = match d.verdict {
            Verdict::Accepted { permit_epsilon } => ("accepted", None, None, permit_epsilon),
            Verdict::Refused { code, reason } => ("refused", Some(code), Some(reason), None),
            Verdict::Aborted { code, reason } => ("aborted", Some(code), Some(reason), None),
        };
        let mut entry = LogEntry {
            seq: self.next_seq,
            at: chrono::Utc::now(),
            task_id: d.task_id,
            study_id: d.study_id,
            permit_id: d.permit_id,
            round: d.round,
            kind: d.kind.to_owned(),
            method: d.method.to_owned(),
            decision: decision.to_owned(),
            code: code.map(str::to_owned),
            reason: reason.map(str::to_owned),
            permit_epsilon,
            prev: self.head.clone(),
            hash: String::new(),
        };
        entry.hash = entry.digest();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("opening {}", self.path.display()))?;
        writeln!(file, "{}", serde_json::to_string(&entry)?)?;
        file.sync_data()?;
        self.next_seq += 1;
        self.head = entry.hash.clone();
        Ok(entry)
    }
}

/// Checks the chain of the log at `path`: the number of entries and the last hash (a missing
/// file is an empty log), or which line is wrong.
pub fn verify(path: &Path) -> anyhow::Result<(u64, String)> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, GENESIS.into())),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut head = GENESIS.to_owned();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let entry: LogEntry = serde_json::from_str(line)
            .with_context(|| format!("{} line {n}: not a log entry", path.display()))?;
        anyhow::ensure!(
            entry.seq == n as u64,
            "{} line {n}: sequence number {} (a line was removed or reordered)",
            path.display(),
            entry.seq
        );
        anyhow::ensure!(
            entry.prev == head,
            "{} line {n}: does not follow the line before it",
            path.display()
        );
        anyhow::ensure!(
            entry.hash == entry.digest(),
            "{} line {n}: its content does not match its hash (edited)",
            path.display()
        );
        head = entry.hash;
        count += 1;
    }
    Ok((count, head))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(n: u64, refusal: Option<(&'static str, &'static str)>) -> Decision<'static> {
        Decision {
            task_id: format!("task-{n}"),
            study_id: "study".into(),
            permit_id: "permit".into(),
            round: n,
            kind: "fit",
            method: "fedavg",
            verdict: match refusal {
                Some((code, reason)) => Verdict::Refused { code, reason },
                None => Verdict::Accepted {
                    permit_epsilon: Some(0.5 * n as f64),
                },
            },
        }
    }

    #[test]
    fn the_chain_shows_edits_removals_and_reordering() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = NodeLog::open(dir.path()).unwrap();
        log.append(decision(1, None)).unwrap();
        log.append(decision(2, Some(("node_budget_exhausted", "over"))))
            .unwrap();
        let last = log.append(decision(3, None)).unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(verify(&path).unwrap(), (3, last.hash.clone()));
        // reopened, it continues the chain; an aborted round is an entry like the others
        let mut again = NodeLog::open(dir.path()).unwrap();
        let aborted = again
            .append(Decision {
                verdict: Verdict::Aborted {
                    code: "secagg_wrong_session",
                    reason: "message belongs to another session",
                },
                ..decision(4, None)
            })
            .unwrap();
        assert_eq!(aborted.seq, 4);
        assert_eq!(
            (aborted.decision.as_str(), aborted.code.as_deref()),
            ("aborted", Some("secagg_wrong_session"))
        );
        assert_eq!(aborted.permit_epsilon, None);
        assert_eq!(verify(&path).unwrap(), (4, aborted.hash.clone()));

        let good = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = good.lines().collect();
        let cases = [
            // an accepted round rewritten as refused
            (
                good.replacen("\"decision\":\"accepted\"", "\"decision\":\"refused\"", 1),
                "edited",
            ),
            // the refusal removed
            (
                [lines[0], lines[2], lines[3]].join("\n"),
                "removed or reordered",
            ),
            // two lines swapped
            (
                [lines[1], lines[0], lines[2], lines[3]].join("\n"),
                "removed or reordered",
            ),
        ];
        for (text, why) in cases {
            std::fs::write(&path, text).unwrap();
            let err = format!("{:#}", verify(&path).unwrap_err());
            assert!(err.contains(why), "{err}");
        }
    }
}
