//! The committed OpenAPI document must match the one generated from the code.
//! Regenerate with `UPDATE_OPENAPI=1 cargo test --test api openapi`.

use crate::helpers::*;

#[test]
fn the_committed_openapi_document_matches_the_code() {
    let generated = ehds_gateway::http::openapi::spec_json();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json");
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo test --test api openapi`"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_and_docs_page_are_served() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = app
        .send(app.client.get(format!("{}/openapi.json", app.base)))
        .await;
    assert_eq!(doc.status, 200);
    assert!(doc.body["paths"]["/v1/permits/{id}/check"].is_object());
    let page = app
        .send(app.client.get(format!("{}/docs/", app.base)))
        .await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("swagger-ui"), "{}", page.text);
    // Every asset the page loads is served by the gateway itself: an air-gapped network sees
    // the same page.
    let initializer = app
        .send(
            app.client
                .get(format!("{}/docs/swagger-initializer.js", app.base)),
        )
        .await;
    assert_eq!(initializer.status, 200);
    assert!(initializer.text.contains("/docs/openapi.json"));
    for text in [&page.text, &initializer.text] {
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "the docs page refers to another host: {text}"
        );
    }
    for asset in ["swagger-ui-bundle.js", "swagger-ui.css"] {
        let r = app
            .send(app.client.get(format!("{}/docs/{asset}", app.base)))
            .await;
        assert_eq!(r.status, 200, "{asset}");
        assert!(r.text.len() > 10_000, "{asset} is {} bytes", r.text.len());
    }
    let document = app
        .send(app.client.get(format!("{}/docs/openapi.json", app.base)))
        .await;
    assert_eq!(document.body, doc.body);
    let health = app
        .send(app.client.get(format!("{}/readyz", app.base)))
        .await;
    assert_eq!(health.body["status"], "ready");
    let nowhere = app
        .send(app.client.get(format!("{}/v2/anything", app.base)))
        .await;
    assert_eq!(
        (nowhere.status.as_u16(), nowhere.code()),
        (404, "route_not_found")
    );
}
