//! A study's feature specification: the contract between the researcher, the gateway (which
//! checks the categories it touches against the permit) and each data holder's node (which
//! extracts its rows by it). The parsing and the rules live here; the extraction from FHIR
//! and CSV data lives in `crate::node`.
pub mod cohort;
pub mod features;
pub mod image;
pub mod transform;
pub mod units;

pub use features::{FeatureSpec, SpecError, Task, MAX_CLASSES};
