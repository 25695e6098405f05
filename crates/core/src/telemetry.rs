//! Logs via tracing: human-readable on a terminal, JSON lines otherwise (log collectors); the
//! level comes from `RUST_LOG` (default `info`).
use std::io::IsTerminal;

use tracing_subscriber::{fmt, EnvFilter};

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second initialisation (tests) is harmless.
    let _ = if std::io::stderr().is_terminal() {
        builder.compact().try_init()
    } else {
        builder.json().with_current_span(true).try_init()
    };
}
