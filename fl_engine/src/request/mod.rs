//! The request forms of the engine's parts, as a study request writes them: the model and its
//! feature extractors over the study's row ([`RowLayout`]), and the rule that combines the
//! holders' updates ([`Aggregation`]). Each parses into the engine's own types; every problem
//! with a request is reported at once, as [`FieldError`]s, so that a caller sees them together.
//!
//! The form of the method itself is [`crate::StrategyConfig`].

mod aggregation;
mod layout;
mod model;

pub use aggregation::Aggregation;
pub use layout::RowLayout;
pub use model::{
    BackboneRequest, InputsRequest, ModelRequest, RecurrentRequest, MAX_CNN_STAGES,
    MAX_HIDDEN_WIDTH,
};

/// One field that failed to parse, reported back to the caller all at once.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// JSON pointer-like path of the offending field, e.g. `purposes[1]`.
    pub field: String,
    /// Stable machine-readable code.
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            code,
            message: message.into(),
        }
    }
}

/// Collects field errors while parsing a request so the caller sees every problem in one answer.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<FieldError>);

impl Errors {
    pub fn push(
        &mut self,
        field: impl Into<String>,
        code: &'static str,
        message: impl Into<String>,
    ) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// Records the error of a fallible parse and returns the value if it succeeded.
    pub fn take<T>(
        &mut self,
        field: impl Into<String>,
        result: Result<T, (&'static str, String)>,
    ) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err((code, message)) => {
                self.push(field, code, message);
                None
            }
        }
    }

    pub fn into_result<T>(self, value: impl FnOnce() -> T) -> Result<T, Vec<FieldError>> {
        if self.0.is_empty() {
            Ok(value())
        } else {
            Err(self.0)
        }
    }
}

/// Records `out_of_range` on `field` unless `lo <= v <= hi`.
pub fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    e: &mut Errors,
    field: &str,
    v: T,
    lo: T,
    hi: T,
) {
    if v < lo || v > hi {
        e.push(
            field,
            "out_of_range",
            format!("`{field}` must lie in [{lo}, {hi}], got {v}"),
        );
    }
}
