//! The public register, without authentication: JSON for machines and an Atom feed (RFC 4287)
//! for anyone following the HDAB's decisions. Public information only (`app::register`); reads
//! are not audited, as reads of the published page would not be.

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::IntoResponse,
    routing::get,
    Json, Router,
};
use serde::Serialize;

use super::{
    applications::ListParams,
    error::{ApiError, ApiResult, Problem},
    extract::{ApiPath, ApiQuery},
    AppState,
};
use crate::{
    app::register::{self, RegisterEntry, RegisterSummary},
    store::Page,
};
use ehds_core::domain::{time, ApplicationId, ApplicationStatus};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/register", get(list))
        .route("/v1/register/feed", get(feed))
        .route("/v1/register/{id}", get(read))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RegisterPage {
    pub summary: RegisterSummary,
    pub entries: Vec<RegisterEntry>,
}

/// The public register of applications, decisions and permits (Art. 57(1)(j), Art. 58).
#[utoipa::path(get, path = "/v1/register", tag = "register", params(ListParams),
    responses((status = 200, body = RegisterPage), (status = 400, body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<RegisterPage>> {
    let page = params.page()?;
    let mut tx = state.store.read().await?;
    let entries = register::entries(&mut *tx, page, time::now()).await?;
    let summary = register::summary(&mut *tx, state.small_cells()).await?;
    tx.commit().await?;
    Ok(Json(RegisterPage { summary, entries }))
}

/// One application in the public register.
#[utoipa::path(get, path = "/v1/register/{id}", tag = "register",
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = RegisterEntry), (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<RegisterEntry>> {
    let mut tx = state.store.read().await?;
    let app = tx
        .get_application(id)
        .await?
        .filter(|a| a.status != ApplicationStatus::Draft)
        .ok_or_else(|| ApiError::not_found("application", id))?;
    let entry = register::entry(&mut *tx, app, time::now()).await?;
    tx.commit().await?;
    Ok(Json(entry))
}

/// The register as an Atom feed, newest change first (the latest 100 applications).
#[utoipa::path(get, path = "/v1/register/feed", tag = "register",
    responses((status = 200, content_type = "application/atom+xml", body = String, description = "Atom feed (RFC 4287)")))]
pub async fn feed(State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let now = time::now();
    let mut tx = state.store.read().await?;
    let mut entries = register::entries(
        &mut *tx,
        Page {
            limit: 100,
            offset: 0,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    entries.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then(a.application_id.0.cmp(&b.application_id.0))
    });
    let base = state.settings.public_url();
    let body = atom(&base, &state.settings.hdab.name, &entries, now);
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")],
        body,
    ))
}

/// XML text and attribute escaping (XML 1.0 §2.4).
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // characters XML 1.0 cannot carry at all
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

fn atom(base: &str, hdab: &str, entries: &[RegisterEntry], now: time::Timestamp) -> String {
    let stamp = |t: &time::Timestamp| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let updated = entries.iter().map(|e| e.updated_at).max().unwrap_or(now);
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    out.push_str(&format!(
        "  <title>{} - public register of data access applications</title>\n",
        xml(hdab)
    ));
    out.push_str(&format!("  <id>{}/v1/register/feed</id>\n", xml(base)));
    out.push_str(&format!(
        "  <link rel=\"self\" href=\"{}/v1/register/feed\"/>\n",
        xml(base)
    ));
    out.push_str(&format!("  <updated>{}</updated>\n", stamp(&updated)));
    out.push_str(&format!("  <author><name>{}</name></author>\n", xml(hdab)));
    for e in entries {
        let mut summary = format!(
            "{} by {}; purposes: {}; categories: {}",
            e.status,
            e.applicant_organisation.as_str(),
            e.purposes
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            e.categories
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        );
        if let Some(d) = &e.decision {
            if let Some(reasons) = &d.reasons {
                summary.push_str(&format!("; reasons: {reasons}"));
            }
            if let Some(p) = &d.permit {
                summary.push_str(&format!("; permit {} ({})", p.permit_id, p.status));
            }
        }
        out.push_str("  <entry>\n");
        out.push_str(&format!("    <id>urn:uuid:{}</id>\n", e.application_id));
        out.push_str(&format!(
            "    <title>{}: {}</title>\n",
            xml(e.status),
            xml(&e.title)
        ));
        out.push_str(&format!(
            "    <link rel=\"alternate\" type=\"application/json\" href=\"{}/v1/register/{}\"/>\n",
            xml(base),
            e.application_id
        ));
        out.push_str(&format!(
            "    <published>{}</published>\n",
            stamp(&e.received_at)
        ));
        out.push_str(&format!(
            "    <updated>{}</updated>\n",
            stamp(&e.updated_at)
        ));
        out.push_str(&format!("    <summary>{}</summary>\n", xml(&summary)));
        out.push_str("  </entry>\n");
    }
    out.push_str("</feed>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::xml;

    #[test]
    fn xml_escapes_markup_and_drops_what_xml_cannot_carry() {
        assert_eq!(
            xml("a<b>&\"c\"'d'\u{1}\n"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;\n"
        );
    }
}
