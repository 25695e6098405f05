//! Verifiable append-only log core: the Certificate Transparency Merkle tree of RFC 9162
//! (leaf and node hashing, inclusion and consistency proofs) and checkpoints in the C2SP
//! `tlog-checkpoint` format, signed as C2SP signed notes with Ed25519.
//!
//! An auditor who keeps one signed checkpoint can later prove, from a consistency proof alone,
//! that the log it is shown now extends the one it saw: a truncated or rewritten log has no
//! such proof.
#![forbid(unsafe_code)]

mod checkpoint;
mod hash;
mod note;
mod proof;
mod tree;

pub use checkpoint::Checkpoint;
pub use hash::{empty_root, hash_children, hash_leaf, Hash, HASH_LEN};
pub use note::{Note, NoteSignature, NoteSigner, NoteVerifier, VerifiedNote};
pub use proof::{
    consistency_proof, inclusion_proof, root_from_inclusion_proof, subtree_root,
    verify_consistency, verify_inclusion, SubtreeHashes,
};
pub use tree::{Frontier, MemoryTree};

/// Everything that can go wrong building or checking a proof, a checkpoint or a note.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("index {index} is outside a tree of size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("a tree of size {first} cannot be a prefix of a tree of size {second}")]
    SizesOutOfOrder { first: u64, second: u64 },
    #[error("the store holds {have} leaves; size {want} was asked for")]
    TreeTooSmall { have: u64, want: u64 },
    #[error("proof has {got} hashes; {expected} expected")]
    ProofLength { expected: usize, got: usize },
    #[error("the proof does not lead to the expected root")]
    RootMismatch,
    #[error("malformed checkpoint: {0}")]
    MalformedCheckpoint(&'static str),
    #[error("malformed note: {0}")]
    MalformedNote(&'static str),
    #[error("malformed key: {0}")]
    MalformedKey(&'static str),
    #[error("invalid signature for key {name}+{key_id:08x}")]
    InvalidSignature { name: String, key_id: u32 },
    #[error("note has no signature from a known key")]
    UnverifiedNote,
    #[error("two known keys share the name {name} and id {key_id:08x}")]
    AmbiguousKey { name: String, key_id: u32 },
    #[error("the hash store failed: {0}")]
    Store(String),
}
