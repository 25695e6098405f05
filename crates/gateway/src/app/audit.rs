//! Audit-trail services shared by `GET /v1/audit/verify`, the verifiable-log endpoints
//! (`/v1/audit/log/...`) and `ehds-gateway audit verify`.

use std::{cell::RefCell, collections::HashMap};

use base64::Engine;
use serde::Serialize;
use translog::{
    consistency_proof, subtree_root, verify_consistency, Checkpoint, Hash, MemoryTree, Note,
    NoteSigner, NoteVerifier, SubtreeHashes, HASH_LEN,
};

use super::Requester;
use crate::{
    authz::Action,
    store::{AuditFilter, Store, StoreError, Tx},
};
use ehds_core::domain::{
    audit::{AuditEntry, AuditSubject, ChainVerifier, VerifyReport},
    audit_details::{ChainVerified, LogProofServed},
};

/// Entries per page of a verification: audit rows are bounded in size (docs/security.md), so a
/// page is at most a few MB whatever the trail's length.
const VERIFY_PAGE: i64 = 500;

/// The audit entries after a sequence number, in order, a page at a time: however long the
/// trail, memory holds one page.
struct TrailPages {
    after: i64,
    done: bool,
}

impl TrailPages {
    fn after(seq: i64) -> Self {
        Self {
            after: seq,
            done: false,
        }
    }

    async fn next(&mut self, tx: &mut dyn Tx) -> crate::store::Result<Option<Vec<AuditEntry>>> {
        if self.done {
            return Ok(None);
        }
        let page = tx
            .list_audit(&AuditFilter {
                after_seq: Some(self.after),
                limit: VERIFY_PAGE,
                ..Default::default()
            })
            .await?;
        match page.last() {
            Some(last) => {
                self.after = last.seq;
                Ok(Some(page))
            }
            None => {
                self.done = true;
                Ok(None)
            }
        }
    }
}

/// Verifies the whole hash chain, page by page.
#[tracing::instrument(name = "Verifying the audit chain", skip_all)]
pub async fn verify_chain(tx: &mut dyn Tx) -> crate::store::Result<VerifyReport> {
    let mut verifier = ChainVerifier::default();
    let mut pages = TrailPages::after(0);
    while let Some(page) = pages.next(tx).await? {
        if !page.iter().all(|e| verifier.feed(e)) {
            break;
        }
    }
    Ok(verifier.finish())
}

/// Verifies the whole chain for an auditor; the verification is audited with its verdict.
#[tracing::instrument(name = "Verifying the audit chain for an auditor", skip_all)]
pub async fn verify(tx: &mut dyn Tx, by: &Requester<'_>) -> crate::store::Result<VerifyReport> {
    let report = verify_chain(tx).await?;
    tx.append_audit(
        by.audit(Action::AuditVerify, AuditSubject::AuditLog)
            .details(&ChainVerified {
                valid: report.valid,
                entries_checked: report.entries_checked,
                first_bad: report.first_bad.as_ref(),
            }),
    )
    .await?;
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// The verifiable log: the audit trail as an RFC 9162 Merkle tree (docs/verifiable-log.md).

/// The Merkle tree hashes of the audit trail as the gateway stores them (`store::tree`), read
/// for one computation: `translog`'s proof code asks for perfect subtrees synchronously, so
/// [`with_stored_tree`] first learns which ones a computation reads (that depends on sizes and
/// indices only, never on hash values), loads them in one query, then runs it over this.
pub struct StoredSubtrees {
    size: u64,
    hashes: HashMap<(u32, u64), Hash>,
}

impl SubtreeHashes for StoredSubtrees {
    fn size(&self) -> u64 {
        self.size
    }

    fn perfect(&self, level: u32, index: u64) -> Result<Hash, translog::Error> {
        self.hashes.get(&(level, index)).copied().ok_or_else(|| {
            translog::Error::Store(format!(
                "the audit tree lacks the subtree at level {level}, index {index}"
            ))
        })
    }
}

/// A tree of `size` leaves that answers every subtree with zeros and notes which were asked.
struct Recorder {
    size: u64,
    asked: RefCell<Vec<(u32, u64)>>,
}

impl SubtreeHashes for Recorder {
    fn size(&self) -> u64 {
        self.size
    }

    fn perfect(&self, level: u32, index: u64) -> Result<Hash, translog::Error> {
        self.asked.borrow_mut().push((level, index));
        Ok([0; HASH_LEN])
    }
}

/// Runs `f` over the stored tree (of the leaves stored now). The outer error is the store's; the
/// inner one is `f`'s answer (a bad index or size).
pub async fn with_stored_tree<T>(
    tx: &mut dyn Tx,
    f: impl Fn(&dyn SubtreeHashes) -> Result<T, translog::Error>,
) -> crate::store::Result<Result<T, translog::Error>> {
    let size = tx.audit_tree_size().await?;
    let recorder = Recorder {
        size,
        asked: RefCell::new(Vec::new()),
    };
    if let Err(e) = f(&recorder) {
        return Ok(Err(e));
    }
    let mut wanted = recorder.asked.into_inner();
    wanted.sort_unstable();
    wanted.dedup();
    let hashes = tx
        .audit_subtrees(&wanted)
        .await?
        .into_iter()
        .map(|(level, index, hash)| ((level, index), hash))
        .collect();
    let stored = StoredSubtrees { size, hashes };
    match f(&stored) {
        Err(translog::Error::Store(what)) => Err(StoreError::Corrupt(what)),
        other => Ok(other),
    }
}

/// The size and root hash of the stored tree now.
pub async fn tree_head(tx: &mut dyn Tx) -> crate::store::Result<(u64, Hash)> {
    let answer = with_stored_tree(tx, |t| {
        let size = t.size();
        Ok((size, subtree_root(t, 0, size)?))
    })
    .await?;
    answer.map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The signed checkpoint of the stored tree now, as a C2SP signed note.
pub async fn signed_checkpoint(
    tx: &mut dyn Tx,
    signer: &NoteSigner,
) -> crate::store::Result<(Checkpoint, String)> {
    let (size, root) = tree_head(tx).await?;
    let checkpoint = Checkpoint::new(signer.name(), size, root)
        .map_err(|e| StoreError::Other(anyhow::anyhow!("checkpoint: {e}")))?;
    let note = signer
        .sign(&checkpoint.to_text())
        .map_err(|e| StoreError::Other(anyhow::anyhow!("signing the checkpoint: {e}")))?;
    Ok((checkpoint, note))
}

/// The leaf hash of an entry: RFC 9162's `SHA-256(0x00 || entry)` over the bytes the hash
/// chain covers.
pub fn leaf_hash(entry: &AuditEntry) -> Hash {
    translog::hash_leaf(&entry.canonical_bytes())
}

/// Appends as leaves, in sequence order, the entries the tree does not hold yet: entries
/// written before the tree existed (migration 0003). Runs at start-up, in one transaction;
/// refuses a trail whose sequence has a gap, which could not become a tree without one.
#[tracing::instrument(name = "Extending the audit tree over older entries", skip_all)]
pub async fn catch_up_tree(store: &dyn Store) -> anyhow::Result<u64> {
    let mut tx = store.begin().await?;
    // two replicas starting on one database: the second waits here and then finds the tree
    // complete, instead of reading a size the first is about to change
    tx.take_write_order().await?;
    let mut size = tx.audit_tree_size().await?;
    let mut edge = crate::store::tree::load_edge(&mut *tx, size).await?;
    let mut appended = 0;
    let mut pages = TrailPages::after(size as i64);
    while let Some(page) = pages.next(&mut *tx).await? {
        for entry in &page {
            anyhow::ensure!(
                entry.seq == size as i64 + 1,
                "the audit trail has no entry {} (the next is {}): it cannot become a Merkle tree; run `ehds-gateway audit verify`",
                size + 1,
                entry.seq
            );
            let nodes = edge.append(leaf_hash(entry));
            tx.fill_audit_tree_nodes(entry.seq, &nodes).await?;
            size += 1;
            appended += 1;
        }
    }
    tx.commit().await?;
    if appended > 0 {
        tracing::info!(
            entries = appended,
            size,
            "appended older audit entries to the audit tree"
        );
    }
    Ok(appended)
}

/// The tree recomputed from the audit rows themselves, not from the stored subtree hashes:
/// entry `seq` is leaf `seq - 1` for as long as the sequence has no gap.
pub async fn recompute_tree(tx: &mut dyn Tx) -> crate::store::Result<RecomputedTree> {
    let mut tree = MemoryTree::new();
    let mut gap_at = None;
    let mut pages = TrailPages::after(0);
    'pages: while let Some(page) = pages.next(tx).await? {
        for entry in &page {
            if entry.seq != tree.size() as i64 + 1 {
                gap_at = Some(tree.size() + 1);
                break 'pages;
            }
            tree.append_leaf_hash(leaf_hash(entry));
        }
    }
    Ok(RecomputedTree { tree, gap_at })
}

pub struct RecomputedTree {
    pub tree: MemoryTree,
    /// The first missing sequence number when the rows stop being contiguous: the tree covers
    /// the entries before it.
    pub gap_at: Option<u64>,
}

/// What `audit verify --checkpoint` found.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointReport {
    pub valid: bool,
    /// The checkpoint the auditor kept.
    pub checkpoint: TreeHeadView,
    /// The tree recomputed from the audit rows now.
    pub current: TreeHeadView,
    /// Whether the tree the gateway stores has the recomputed root.
    pub stored_tree_matches: bool,
    /// Why the log is not an extension of the kept checkpoint, when it is not.
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TreeHeadView {
    pub size: u64,
    pub root: String,
}

impl TreeHeadView {
    fn new(size: u64, root: &Hash) -> Self {
        Self {
            size,
            root: b64(root),
        }
    }
}

/// Opens a kept checkpoint note with the gateway's verifier key and checks that the log in the
/// database, recomputed from its rows, extends it: the kept tree must be a prefix of the current
/// one (RFC 9162 consistency). A truncated trail or a rewritten entry fails.
pub async fn verify_against_checkpoint(
    tx: &mut dyn Tx,
    note: &str,
    verifier: &NoteVerifier,
) -> anyhow::Result<CheckpointReport> {
    let kept = open_checkpoint(note, verifier)?;
    let recomputed = recompute_tree(tx).await?;
    let tree = &recomputed.tree;
    let current = (tree.size(), tree.root());
    let stored = tree_head(tx).await.ok();
    let mut problem = match (recomputed.gap_at, kept.size > current.0) {
        (Some(seq), true) => Some(format!(
            "the audit trail has no entry {seq}: the database holds {} contiguous entries, fewer than the {} the checkpoint commits to (entries were removed)",
            current.0, kept.size
        )),
        (None, true) => Some(format!(
            "the audit trail holds {} entries, fewer than the {} the checkpoint commits to: the last {} were removed",
            current.0,
            kept.size,
            kept.size - current.0
        )),
        _ => None,
    };
    if problem.is_none() {
        let proof = consistency_proof(tree, kept.size, current.0)?;
        if verify_consistency(kept.size, current.0, &proof, &kept.root, &current.1).is_err() {
            problem = Some(format!(
                "the first {} entries of the audit trail no longer hash to the checkpoint's root: entries were rewritten, removed or reordered",
                kept.size
            ));
        }
    }
    if problem.is_none() {
        if let Some(seq) = recomputed.gap_at {
            problem = Some(format!(
                "the audit trail has no entry {seq}: entries after the checkpoint were removed"
            ));
        }
    }
    let stored_tree_matches = stored == Some(current);
    if problem.is_none() && !stored_tree_matches {
        problem = Some(
            "the stored Merkle tree does not match the audit rows: the tree table was altered"
                .into(),
        );
    }
    Ok(CheckpointReport {
        valid: problem.is_none(),
        checkpoint: TreeHeadView::new(kept.size, &kept.root),
        current: TreeHeadView::new(current.0, &current.1),
        stored_tree_matches,
        problem,
    })
}

/// The checkpoint of a signed note, which `verifier` must have signed under the checkpoint's
/// origin.
pub fn open_checkpoint(note: &str, verifier: &NoteVerifier) -> anyhow::Result<Checkpoint> {
    let opened = Note::open(note, std::slice::from_ref(verifier))
        .map_err(|e| anyhow::anyhow!("the checkpoint's signature does not verify: {e}"))?;
    let checkpoint = Checkpoint::parse(&opened.text)
        .map_err(|e| anyhow::anyhow!("the note is not a checkpoint: {e}"))?;
    anyhow::ensure!(
        checkpoint.origin == verifier.name(),
        "the checkpoint's origin `{}` is not the key's name `{}`",
        checkpoint.origin,
        verifier.name()
    );
    Ok(checkpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gateway verifies stored entries and builds its Merkle leaves over their canonical
    /// bytes: in this crate's build too, the entries of tests/data/audit-canonical give exactly
    /// the pinned bytes (and so the leaves and the chain a gateway wrote).
    #[test]
    fn stored_entries_give_the_pinned_canonical_bytes_and_leaves() {
        let entries = include_str!("../../../../tests/data/audit-canonical/entries.jsonl");
        let pinned = include_str!("../../../../tests/data/audit-canonical/canonical.jsonl");
        let mut verifier = ChainVerifier::default();
        let mut checked = 0;
        for (line, canonical) in entries.lines().zip(pinned.lines()) {
            let entry: AuditEntry = serde_json::from_str(line).unwrap();
            assert_eq!(
                entry.canonical_bytes(),
                canonical.as_bytes(),
                "entry {}",
                entry.seq
            );
            assert_eq!(leaf_hash(&entry), translog::hash_leaf(canonical.as_bytes()));
            assert!(verifier.feed(&entry), "entry {}", entry.seq);
            checked += 1;
        }
        assert_eq!(checked, 13);
        assert!(verifier.finish().valid);
    }
}

// ---------------------------------------------------------------------------------------------
// Proofs served to auditors and witnesses, each read audited.

/// An audit path (RFC 9162 §2.1.3): the leaf's hash and the sibling hashes from the leaf up.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InclusionProof {
    pub index: u64,
    pub size: u64,
    /// `SHA-256(0x00 || canonical entry)`, base64; recompute it from the exported entry.
    pub leaf_hash: String,
    /// Base64 SHA-256 hashes, leaf to root.
    pub hashes: Vec<String>,
}

/// A consistency proof (RFC 9162 §2.1.4): the tree of `from` leaves is a prefix of the tree of
/// `to` leaves. Empty when `from` is 0 or equal to `to`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ConsistencyProof {
    pub from: u64,
    pub to: u64,
    /// Base64 SHA-256 hashes.
    pub hashes: Vec<String>,
}

/// Why a proof was not served.
#[derive(Debug)]
pub enum ProofError {
    /// The parameters make the proof impossible; `code` is stable.
    Impossible {
        code: &'static str,
        detail: String,
    },
    Store(StoreError),
}

impl From<StoreError> for ProofError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<translog::Error> for ProofError {
    fn from(e: translog::Error) -> Self {
        let code = match &e {
            translog::Error::IndexOutOfRange { .. } => "index_out_of_range",
            translog::Error::SizesOutOfOrder { .. } => "sizes_out_of_order",
            translog::Error::TreeTooSmall { .. } => "size_beyond_tree",
            _ => return Self::Store(StoreError::Other(anyhow::anyhow!("audit log proof: {e}"))),
        };
        Self::Impossible {
            code,
            detail: e.to_string(),
        }
    }
}

fn proof_served(
    by: &Requester<'_>,
    proof: &'static str,
    index: Option<u64>,
    from: Option<u64>,
    size: Option<u64>,
) -> ehds_core::domain::audit::NewAuditEvent {
    by.audit(Action::AuditProof, AuditSubject::AuditLog)
        .details(&LogProofServed {
            proof,
            index,
            from,
            size,
        })
}

/// A tree hash as the API and the audit details write it: standard base64.
pub(crate) fn b64(hash: &Hash) -> String {
    base64::engine::general_purpose::STANDARD.encode(hash)
}

/// The signed checkpoint of the log for an auditor. The read is appended first, so the
/// checkpoint covers its own entry.
#[tracing::instrument(name = "Serving the audit log checkpoint", skip_all)]
pub async fn serve_checkpoint(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    signer: &NoteSigner,
) -> crate::store::Result<String> {
    tx.append_audit(proof_served(by, "checkpoint", None, None, None))
        .await?;
    let (_, note) = signed_checkpoint(tx, signer).await?;
    Ok(note)
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves.
#[tracing::instrument(name = "Proving inclusion in the audit log", skip_all)]
pub async fn prove_inclusion(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    index: u64,
    size: u64,
) -> Result<InclusionProof, ProofError> {
    let (hashes, leaf) = with_stored_tree(tx, |t| {
        Ok((
            translog::inclusion_proof(t, index, size)?,
            t.perfect(0, index)?,
        ))
    })
    .await??;
    tx.append_audit(proof_served(by, "inclusion", Some(index), None, Some(size)))
        .await?;
    Ok(InclusionProof {
        index,
        size,
        leaf_hash: b64(&leaf),
        hashes: hashes.iter().map(b64).collect(),
    })
}

/// The consistency proof between the trees of `from` and `to` leaves.
#[tracing::instrument(name = "Proving consistency of the audit log", skip_all)]
pub async fn prove_consistency(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    from: u64,
    to: u64,
) -> Result<ConsistencyProof, ProofError> {
    let hashes = with_stored_tree(tx, |t| translog::consistency_proof(t, from, to)).await??;
    tx.append_audit(proof_served(by, "consistency", None, Some(from), Some(to)))
        .await?;
    Ok(ConsistencyProof {
        from,
        to,
        hashes: hashes.iter().map(b64).collect(),
    })
}
