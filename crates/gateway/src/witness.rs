//! `ehds-gateway audit witness`: a witness of the verifiable audit log. It polls the gateway's
//! signed checkpoint, checks the signature with the pinned verifier key and, against the last
//! checkpoint it kept, checks a consistency proof that the new tree extends the old one; only
//! then it keeps the new checkpoint. A log that was truncated or rewritten has no such proof,
//! and the witness refuses it and keeps the old one as evidence.

use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine;
use translog::{verify_consistency, Checkpoint, Hash, NoteVerifier};

use crate::app::audit::open_checkpoint;

/// The file in the witness directory holding the last checkpoint kept.
pub const LATEST: &str = "checkpoint";

pub struct Witness {
    pub gateway: String,
    pub token: Option<String>,
    pub verifier: NoteVerifier,
    pub dir: PathBuf,
    client: reqwest::Client,
}

/// What one poll did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// The first checkpoint of this log the witness keeps.
    First { size: u64 },
    /// The log grew consistently from `from` to `to` (or stayed the same).
    Extended { from: u64, to: u64 },
}

impl Witness {
    pub fn new(
        gateway: &str,
        token: Option<String>,
        verifier: NoteVerifier,
        dir: PathBuf,
    ) -> anyhow::Result<Self> {
        ehds_core::key_file::create_private_dir(&dir)?;
        Ok(Self {
            gateway: gateway.trim_end_matches('/').to_owned(),
            token,
            verifier,
            dir,
            client: ehds_http::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()?,
        })
    }

    async fn get(&self, path: &str) -> anyhow::Result<reqwest::Response> {
        let mut req = self.client.get(format!("{}{path}", self.gateway));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("GET {path} failed"))?;
        let status = resp.status();
        anyhow::ensure!(
            status.is_success(),
            "GET {path} answered {status}: {}",
            resp.text().await.unwrap_or_default()
        );
        Ok(resp)
    }

    /// Fetches the gateway's checkpoint, verifies it against the one kept, and keeps it.
    pub async fn poll_once(&self) -> anyhow::Result<Observed> {
        let note = self.get("/v1/audit/log/checkpoint").await?.text().await?;
        let new = open_checkpoint(&note, &self.verifier)
            .context("the gateway's checkpoint is refused")?;
        let latest = self.dir.join(LATEST);
        let kept = match std::fs::read_to_string(&latest) {
            Ok(text) => Some(open_checkpoint(&text, &self.verifier).with_context(|| {
                format!("the kept checkpoint {} does not verify", latest.display())
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).context(format!("Failed to read {}", latest.display())),
        };
        let observed = match kept {
            None => Observed::First { size: new.size },
            Some(old) => {
                self.check_extends(&old, &new).await?;
                Observed::Extended {
                    from: old.size,
                    to: new.size,
                }
            }
        };
        keep(&self.dir, &new, &note)?;
        Ok(observed)
    }

    async fn check_extends(&self, old: &Checkpoint, new: &Checkpoint) -> anyhow::Result<()> {
        anyhow::ensure!(
            new.size >= old.size,
            "inconsistent log: the gateway's checkpoint has {} entries, fewer than the {} of the kept one (entries were removed)",
            new.size,
            old.size
        );
        let proof: Vec<Hash> = if new.size == old.size || old.size == 0 {
            Vec::new()
        } else {
            let body: serde_json::Value = self
                .get(&format!(
                    "/v1/audit/log/consistency?from={}&to={}",
                    old.size, new.size
                ))
                .await?
                .json()
                .await?;
            body["hashes"]
                .as_array()
                .context("the consistency proof has no `hashes`")?
                .iter()
                .map(|h| {
                    h.as_str()
                        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                        .and_then(|b| Hash::try_from(b.as_slice()).ok())
                        .context("a proof hash is not base64 of 32 bytes")
                })
                .collect::<anyhow::Result<_>>()?
        };
        verify_consistency(old.size, new.size, &proof, &old.root, &new.root).map_err(|e| {
            anyhow::anyhow!(
                "inconsistent log: the checkpoint of {} entries does not extend the kept one of {} entries ({e}); entries were rewritten or removed",
                new.size,
                old.size
            )
        })
    }
}

/// Writes the note as the latest checkpoint (atomically) and as `checkpoint.<size>`.
fn keep(dir: &Path, checkpoint: &Checkpoint, note: &str) -> anyhow::Result<()> {
    let archived = dir.join(format!("{LATEST}.{}", checkpoint.size));
    std::fs::write(&archived, note)
        .with_context(|| format!("Failed to write {}", archived.display()))?;
    let tmp = dir.join(format!("{LATEST}.tmp"));
    std::fs::write(&tmp, note).with_context(|| format!("Failed to write {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(LATEST))
        .with_context(|| format!("Failed to keep the checkpoint in {}", dir.display()))?;
    Ok(())
}
