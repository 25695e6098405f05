//! ehds-tools: what the source tree runs beside the two programs the product ships (the
//! gateway, `ehds-gateway`, and the node agent, `ehds-node`): the whole EHDS flow on one
//! machine ([`demo`]), and the generators of the example data, which a hospital's node never
//! needs ([`example_federation`]: the UCI Heart Disease files as four hospitals' FHIR Bundles;
//! [`corpus`]: a multi-site ICU Bulk Data export), and FHIR Bundles in the `fhir-sdk` model
//! types for the tests ([`fhir_model`]).
#![forbid(unsafe_code)]

pub mod corpus;
pub mod demo;
pub mod example_federation;
pub mod fhir_model;

use std::path::PathBuf;

/// A program of this workspace built beside the running one (`target/<profile>/NAME`): the
/// tests and benchmarks run the real `ehds-gateway` and `ehds-node`, which
/// `cargo test --workspace` builds before it runs any test.
pub fn built_program(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the running program's path");
    // target/<profile>/deps/<test> for tests and benches, target/<profile>/<bin> for programs.
    let mut dir = exe.parent().expect("a directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build -p {name}` (or `cargo test --workspace`) first",
        path.display()
    );
    path
}
