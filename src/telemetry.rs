//! JSON logs via tracing; the level comes from `RUST_LOG` (default `info`).

use tracing_subscriber::{fmt, EnvFilter};

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // A second initialisation (tests) is harmless.
    let _ = fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .with_writer(std::io::stderr)
        .try_init();
}
