//! The development issuer's discovery document and JWKS (only mounted with `serve --dev`).

use axum::{extract::State, routing::get, Json, Router};

use super::AppState;
use ehds_core::dev_issuer::DEV_ISSUER_PATH;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{DEV_ISSUER_PATH}/.well-known/openid-configuration"),
            get(discovery),
        )
        .route(&format!("{DEV_ISSUER_PATH}/jwks.json"), get(jwks))
}

async fn discovery(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(
        state
            .dev
            .as_ref()
            .map(|d| d.discovery_document())
            .unwrap_or_default(),
    )
}

async fn jwks(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(state.dev.as_ref().map(|d| d.jwks()).unwrap_or_default())
}
