//! The one error type at the crate boundary.
//!
//! Inside the engine candle errors travel with `?`; everything a caller can act on (a bad
//! update from a site, a mismatched checkpoint, a configuration mistake) gets its own variant
//! so the gateway can map it to a response without string matching.
use thiserror::Error;

/// Result alias used throughout the crate.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("tensor backend: {0}")]
    Candle(#[from] candle_core::Error),

    #[error("parameter `{0}` is missing")]
    MissingParameter(String),

    #[error("parameter `{0}` is not expected here")]
    UnexpectedParameter(String),

    #[error("shape mismatch on `{name}`: expected {expected:?}, found {found:?}")]
    ShapeMismatch {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },

    #[error("flat vector has {found} values but the template needs {expected}")]
    LengthMismatch { expected: usize, found: usize },

    #[error("non-finite value (NaN or Inf) in `{0}`")]
    NonFinite(String),

    #[error("update from site `{site}` rejected: {source}")]
    InvalidUpdate {
        site: String,
        #[source]
        source: Box<EngineError>,
    },

    #[error("site `{0}` reported zero training samples")]
    ZeroSamples(String),

    #[error("no site updates to aggregate")]
    NoUpdates,

    #[error("differential privacy: {0}")]
    Privacy(#[from] crate::dp::DpError),

    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    #[error("data: {0}")]
    Data(String),

    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),

    #[error("serialisation: {0}")]
    Serialization(String),

    #[error("parameter digest mismatch: header says {expected}, content hashes to {found}")]
    DigestMismatch { expected: String, found: String },

    /// A Byzantine-robust rule got fewer updates than its guarantee needs (Krum: n >= 2f + 3,
    /// Bulyan: n >= 4f + 3, trimmed mean: n > 2b).
    #[error("{rule} needs at least {needed} updates, got {found}")]
    TooFewUpdates {
        rule: &'static str,
        needed: usize,
        found: usize,
    },
}

impl From<safetensors::SafeTensorError> for EngineError {
    fn from(e: safetensors::SafeTensorError) -> Self {
        EngineError::Serialization(e.to_string())
    }
}

impl From<serde_json::Error> for EngineError {
    fn from(e: serde_json::Error) -> Self {
        EngineError::Serialization(e.to_string())
    }
}

impl EngineError {
    /// Attach the offending site to an error found while validating its update.
    pub fn for_site(self, site: impl Into<String>) -> Self {
        EngineError::InvalidUpdate {
            site: site.into(),
            source: Box::new(self),
        }
    }
}
