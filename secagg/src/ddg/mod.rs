//! The distributed discrete Gaussian mechanism (Kairouz, Liu, Steinke, ICML 2021,
//! arXiv 2102.06387).
pub mod accounting;
pub mod mechanism;
pub mod sampler;
