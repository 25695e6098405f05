//! Federated statistics for health data requests (Regulation (EU) 2025/327, Art. 69): an
//! applicant asks for a statistical answer only, and the health data access body (the gateway)
//! computes it from the data holders' nodes without any record leaving them.
//!
//! The pipeline, one module per step, all pure functions without I/O:
//!
//! 1. [`query`]: the applicant's declared statistical content, parsed from a [`QueryForm`] into
//!    a [`Query`] with every problem reported at once;
//! 2. [`table`]: a node's local [`Table`];
//! 3. [`partial()`]: the node's sufficient statistics for the query ([`Partial`]);
//! 4. [`combine()`]: the gateway pools the partials ([`Combined`], exact, never released as is);
//! 5. [`check()`]: output checking against [`Rules`] (minimum counts, dominance, p%, zeros,
//!    survival at-risk, secondary suppression) gives the [`Release`] the applicant may see, and
//!    [`differencing`] compares counts across the requests of one lineage;
//! 6. [`noise`]: optional differential privacy on the released values ([`privatize`]).
//!
//! Noise mechanisms are implemented here rather than taken from the `opendp` crate: with its
//! default features opendp 0.16 brings 155 crates including OpenSSL (a C library), 68 without
//! them, and its samplers draw from their own entropy source, so a caller cannot pass the
//! explicitly seeded, cryptographically secure generator the product requires for noise (and
//! its tests). The samplers here are the exact discrete ones of Canonne, Kamath & Steinke
//! (2020), taking `&mut (impl Rng + CryptoRng)`.

pub mod combine;
pub mod noise;
pub mod output_check;
pub mod partial;
pub mod query;
pub mod table;

pub use combine::{combine, CombineError, Combined, PooledCell, PooledStats, SurvivalPoint};
pub use noise::{privatize, DpRelease, DpValue, IntegerNoise, NoiseError, NoisyValue, PrivacyCost};
pub use output_check::{
    check, differencing, CellValue, DifferencingRisk, Outcome, Reason, Release, ReleasedCell,
    ReleasedCount, Rules,
};
pub use partial::{partial, Exclusion, Partial};
pub use query::{ErrorCode, FieldError, Limits, Query, QueryErrors, QueryForm};
pub use table::{Table, TableError};

#[cfg(all(test, feature = "openapi"))]
mod openapi_tests {
    use utoipa::PartialSchema;

    #[test]
    fn request_and_result_schemas_serialise() {
        let schemas = [
            ("QueryForm", crate::QueryForm::schema()),
            ("Rules", crate::Rules::schema()),
            ("Release", crate::Release::schema()),
            ("DpRelease", crate::DpRelease::schema()),
            ("QueryErrors", crate::QueryErrors::schema()),
        ];
        for (name, schema) in schemas {
            let json = serde_json::to_value(&schema).unwrap();
            assert!(json.is_object(), "{name}");
        }
    }
}
