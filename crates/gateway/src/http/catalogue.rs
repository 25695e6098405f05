//! The Art. 77 dataset catalogue in HealthDCAT-AP. Data holders publish, version and withdraw
//! descriptions of their own datasets (authenticated, `catalogue.*` actions); anyone reads the
//! catalogue and its datasets without a token, as JSON-LD (default) or Turtle
//! (`Accept: text/turtle`), paged for harvesters with `hydra:PartialCollectionView`. Reads are
//! public information and not audited, like the public register's.

use axum::{
    extract::State,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post, put},
    Json, Router,
};
use serde::{Deserialize, Serialize};

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    AppState,
};
use crate::{
    app::catalogue::{self, ChangeError},
    authz::{Action, Resource},
    store::Page,
};
use ehds_core::domain::{
    audit::AuditSubject,
    catalogue::{
        graph::{Hdab, PageView, Site},
        jsonld, turtle, CatalogueEntry, Dataset, DatasetForm, DatasetId, Email, EntryStatus, Iri,
    },
    time, FieldError, MemberState,
};

/// Largest page a harvester may ask for.
pub const MAX_PER_PAGE: u64 = 200;
/// The page size when none is asked for.
pub const DEFAULT_PER_PAGE: u64 = 50;

/// The authenticated routes, nested under `/v1`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/catalogue/datasets", post(publish))
        .route(
            "/catalogue/datasets/{id}",
            put(new_version).delete(withdraw),
        )
}

/// The public routes, without authentication.
pub fn public_router() -> Router<AppState> {
    Router::new()
        .route("/v1/catalogue", get(read_catalogue))
        .route("/v1/catalogue/datasets/{id}", get(read_dataset))
}

/// What the API answers about a catalogue entry it changed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CatalogueRecordView {
    pub id: DatasetId,
    /// The dataset's IRI in the catalogue (its HealthDCAT-AP description).
    pub iri: String,
    pub publisher: String,
    pub revision: i64,
    pub status: EntryStatus,
    pub issued: chrono::DateTime<chrono::Utc>,
    pub modified: chrono::DateTime<chrono::Utc>,
}

impl CatalogueRecordView {
    fn new(state: &AppState, e: &CatalogueEntry) -> Self {
        let (base, hdab) = site_parts(state);
        Self {
            id: e.id,
            iri: Site {
                base: &base,
                hdab: &hdab,
            }
            .dataset_iri(e.id),
            publisher: e.publisher().to_string(),
            revision: e.revision,
            status: e.status,
            issued: e.issued,
            modified: e.modified,
        }
    }
}

/// The gateway's base URL and its HDAB as the catalogue names them.
fn site_parts(state: &AppState) -> (String, Hdab) {
    let hdab = &state.settings.hdab;
    let contact = hdab.contact.trim();
    (
        state.base_url.clone(),
        Hdab {
            name: hdab.name.clone(),
            email: Email::parse(contact).ok(),
            url: Iri::parse_web(contact).ok(),
            member_state: MemberState::parse(&hdab.member_state).ok(),
        },
    )
}

/// Parses the form; a refusal names each problem's SHACL path and is audited under `action`.
fn parse(
    state: &AppState,
    form: &DatasetForm,
    action: Action,
    on: AuditSubject,
) -> ApiResult<Dataset> {
    Dataset::parse(form, state.small_cells())
        .map_err(|errors: Vec<FieldError>| ApiError::invalid(errors).action(action).on(on))
}

fn change_error(e: ChangeError, id: DatasetId, action: Action) -> ApiError {
    let on = AuditSubject::Dataset(id);
    match e {
        ChangeError::NotFound => ApiError::not_found("dataset", id).action(action).on(on),
        ChangeError::Withdrawn => ApiError::new(
            StatusCode::CONFLICT,
            "dataset_withdrawn",
            format!("dataset {id} was withdrawn from the catalogue"),
        )
        .action(action)
        .on(on),
        ChangeError::Store(e) => ApiError::from(e).action(action).on(on),
    }
}

/// Publish a dataset description in the catalogue (a data holder, for its own organisation).
#[utoipa::path(post, path = "/v1/catalogue/datasets", tag = "catalogue", request_body = DatasetForm,
    security(("bearer" = [])),
    responses((status = 201, body = CatalogueRecordView), (status = 403, body = Problem),
        (status = 422, body = Problem, description = "The description breaks HealthDCAT-AP: each error's `field` is the SHACL property path")))]
pub async fn publish(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(form): ApiJson<DatasetForm>,
) -> ApiResult<(
    StatusCode,
    [(header::HeaderName, String); 1],
    Json<CatalogueRecordView>,
)> {
    let action = Action::CatalogueCreate;
    state.authorize(
        &caller,
        action,
        &Resource::CatalogueDataset(&form.publisher.organisation),
    )?;
    let dataset = parse(&state, &form, action, AuditSubject::Catalogue)?;
    let mut tx = state.store.begin().await?;
    let entry = catalogue::publish(&mut *tx, &caller.requester(), dataset, time::now()).await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        [(
            header::LOCATION,
            format!("/v1/catalogue/datasets/{}", entry.id),
        )],
        Json(CatalogueRecordView::new(&state, &entry)),
    ))
}

/// Publish a new version of a dataset description (its publisher only; the publisher stays).
#[utoipa::path(put, path = "/v1/catalogue/datasets/{id}", tag = "catalogue", request_body = DatasetForm,
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Dataset id")),
    responses((status = 200, body = CatalogueRecordView), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn new_version(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<DatasetId>,
    ApiJson(form): ApiJson<DatasetForm>,
) -> ApiResult<Json<CatalogueRecordView>> {
    let action = Action::CatalogueUpdate;
    let mut tx = state.store.begin().await?;
    tx.take_write_order().await?;
    let current = catalogue::load_published(&mut *tx, id)
        .await
        .map_err(|e| change_error(e, id, action))?;
    let publisher = current.publisher().to_string();
    state
        .authorize(&caller, action, &Resource::CatalogueDataset(&publisher))
        .map_err(|e| e.on(AuditSubject::Dataset(id)))?;
    let dataset = parse(&state, &form, action, AuditSubject::Dataset(id))?;
    if dataset.publisher.organisation != *current.publisher() {
        return Err(ApiError::field(
            "dct:publisher/dct:identifier",
            "publisher_changed",
            "a new version keeps the dataset's publisher",
        )
        .action(action)
        .on(AuditSubject::Dataset(id)));
    }
    let entry =
        catalogue::new_version(&mut *tx, &caller.requester(), current, dataset, time::now())
            .await
            .map_err(|e| change_error(ChangeError::Store(e), id, action))?;
    tx.commit().await?;
    Ok(Json(CatalogueRecordView::new(&state, &entry)))
}

/// Withdraw a dataset from the catalogue (its publisher only); its revisions stay on record.
#[utoipa::path(delete, path = "/v1/catalogue/datasets/{id}", tag = "catalogue",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Dataset id")),
    responses((status = 200, body = CatalogueRecordView), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn withdraw(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<DatasetId>,
) -> ApiResult<Json<CatalogueRecordView>> {
    let action = Action::CatalogueWithdraw;
    let mut tx = state.store.begin().await?;
    tx.take_write_order().await?;
    let current = catalogue::load_published(&mut *tx, id)
        .await
        .map_err(|e| change_error(e, id, action))?;
    let publisher = current.publisher().to_string();
    state
        .authorize(&caller, action, &Resource::CatalogueDataset(&publisher))
        .map_err(|e| e.on(AuditSubject::Dataset(id)))?;
    let entry = catalogue::withdraw(&mut *tx, &caller.requester(), current, time::now())
        .await
        .map_err(|e| change_error(ChangeError::Store(e), id, action))?;
    tx.commit().await?;
    Ok(Json(CatalogueRecordView::new(&state, &entry)))
}

/// A page of the catalogue (1-based).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CatalogueParams {
    /// The page (default 1).
    #[param(minimum = 1)]
    pub page: Option<u64>,
    /// Datasets a page (1-200, default 50).
    #[param(minimum = 1, maximum = 200)]
    pub per_page: Option<u64>,
}

/// The representations the catalogue is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonLd,
    Turtle,
}

/// The representation an `Accept` header prefers: Turtle when `text/turtle` has the highest
/// quality, JSON-LD otherwise (also when nothing is asked for, or nothing served is).
pub fn negotiate(headers: &HeaderMap) -> Format {
    let mut best = (0.0_f32, Format::JsonLd);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let format = match media.as_str() {
                "text/turtle" => Format::Turtle,
                "application/ld+json" | "application/json" | "*/*" | "application/*" => {
                    Format::JsonLd
                }
                _ => continue,
            };
            if q > best.0 {
                best = (q, format);
            }
        }
    }
    best.1
}

fn render(format: Format, node: &ehds_core::domain::catalogue::rdf::Node) -> Response {
    let (body, content_type) = match format {
        Format::Turtle => (
            turtle::document(std::slice::from_ref(node)),
            "text/turtle; charset=utf-8",
        ),
        Format::JsonLd => (
            serde_json::to_string(&jsonld::document(node)).expect("JSON-LD serialises"),
            "application/ld+json",
        ),
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::VARY, HeaderValue::from_static("accept")),
        ],
        body,
    )
        .into_response()
}

/// The HDAB's dataset catalogue (Art. 77) as a HealthDCAT-AP `dcat:Catalog`, paged with
/// `hydra:PartialCollectionView` (`hydra:next` until the last page). No authentication.
#[utoipa::path(get, path = "/v1/catalogue", tag = "catalogue", params(CatalogueParams),
    responses((status = 200, description = "The catalogue page", content(
        (serde_json::Value = "application/ld+json"), (String = "text/turtle"))),
        (status = 400, body = Problem)))]
pub async fn read_catalogue(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(params): ApiQuery<CatalogueParams>,
) -> ApiResult<Response> {
    let page = params.page.unwrap_or(1);
    let per_page = params.per_page.unwrap_or(DEFAULT_PER_PAGE);
    // pages are int64 in the contract, like every integer of the API
    if !(1..=i64::MAX as u64).contains(&page) || !(1..=MAX_PER_PAGE).contains(&per_page) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("page starts at 1 and per_page is within 1-{MAX_PER_PAGE}"),
        ));
    }
    let mut tx = state.store.read().await?;
    let (entries, total) = catalogue::page(
        &mut *tx,
        Page {
            limit: per_page as i64,
            // a page past any catalogue that can exist is empty, like every page past the end
            offset: (page - 1)
                .checked_mul(per_page)
                .and_then(|o| i64::try_from(o).ok())
                .unwrap_or(i64::MAX),
        },
    )
    .await?;
    tx.commit().await?;
    let (base, hdab) = site_parts(&state);
    let site = Site {
        base: &base,
        hdab: &hdab,
    };
    let node = site.catalogue(
        &entries,
        PageView {
            page,
            per_page,
            total,
        },
    );
    Ok(render(negotiate(&headers), &node))
}

/// One published dataset as a HealthDCAT-AP `dcat:Dataset`. No authentication.
#[utoipa::path(get, path = "/v1/catalogue/datasets/{id}", tag = "catalogue",
    params(("id" = String, Path, description = "Dataset id")),
    responses((status = 200, description = "The dataset", content(
        (serde_json::Value = "application/ld+json"), (String = "text/turtle"))),
        (status = 404, body = Problem), (status = 410, body = Problem)))]
pub async fn read_dataset(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<DatasetId>,
) -> ApiResult<Response> {
    let mut tx = state.store.read().await?;
    let entry = tx
        .get_dataset(id)
        .await?
        .ok_or_else(|| ApiError::not_found("dataset", id))?;
    tx.commit().await?;
    if entry.status == EntryStatus::Withdrawn {
        return Err(ApiError::new(
            StatusCode::GONE,
            "dataset_withdrawn",
            format!("dataset {id} was withdrawn from the catalogue"),
        ));
    }
    let (base, hdab) = site_parts(&state);
    let site = Site {
        base: &base,
        hdab: &hdab,
    };
    Ok(render(negotiate(&headers), &site.dataset(&entry)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn turtle_only_when_preferred() {
        assert_eq!(negotiate(&accept(&[])), Format::JsonLd);
        assert_eq!(negotiate(&accept(&["text/turtle"])), Format::Turtle);
        assert_eq!(
            negotiate(&accept(&["Text/Turtle; charset=utf-8"])),
            Format::Turtle
        );
        assert_eq!(
            negotiate(&accept(&["application/ld+json;q=0.9, text/turtle;q=0.5"])),
            Format::JsonLd
        );
        assert_eq!(
            negotiate(&accept(&["application/ld+json;q=0.4", "text/turtle;q=0.8"])),
            Format::Turtle
        );
        assert_eq!(negotiate(&accept(&["*/*"])), Format::JsonLd);
        assert_eq!(negotiate(&accept(&["text/html"])), Format::JsonLd);
    }
}
