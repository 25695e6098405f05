//! The console's static files, embedded in the binary: the vendored htmx and uPlot
//! (assets/vendor/README.md says where each comes from) and the console's own style and script.
//! Pages link them with `?v=` and a digest of all of them, so they can be cached for a year:
//! a gateway whose assets changed links new URLs.

use axum::{
    extract::Path,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

/// A digest of every asset, the `v` query of their links.
pub static VERSION: LazyLock<String> = LazyLock::new(|| {
    let mut digest = Sha256::new();
    for asset in &ASSETS {
        digest.update(asset.name.as_bytes());
        digest.update(asset.bytes);
    }
    hex::encode(&digest.finalize()[..8])
});

struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: [Asset; 5] = [
    Asset {
        name: "htmx.min.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../../../assets/vendor/htmx/htmx.min.js"),
    },
    Asset {
        name: "uPlot.iife.min.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../../../assets/vendor/uplot/uPlot.iife.min.js"),
    },
    Asset {
        name: "uPlot.min.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../../../assets/vendor/uplot/uPlot.min.css"),
    },
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("static/console.css"),
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("static/console.js"),
    },
];

/// `GET /console/assets/{file}`.
pub async fn serve(Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == file) else {
        return super::pages::not_found().await;
    };
    let etag = format!("\"{}\"", hex::encode(&Sha256::digest(asset.bytes)[..12]));
    let cache = HeaderValue::from_static("public, max-age=31536000, immutable");
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        return (StatusCode::NOT_MODIFIED, [(header::CACHE_CONTROL, cache)]).into_response();
    }
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (header::CACHE_CONTROL, cache),
            (
                header::ETAG,
                HeaderValue::from_str(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"\"")),
            ),
        ],
        asset.bytes,
    )
        .into_response()
}
