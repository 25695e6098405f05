//! Extractors whose rejections are problems with precise codes, never axum's plain-text ones.

use axum::{
    extract::{
        rejection::{JsonRejection, PathRejection, QueryRejection},
        FromRequest, FromRequestParts, Request,
    },
    http::{request::Parts, StatusCode},
};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::auth::Principal;

pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = match axum::Json::<UniqueKeys>::from_request(req, state).await {
            Ok(axum::Json(UniqueKeys(value))) => {
                if let Some(at) = first_control_character(&value, &mut String::new()) {
                    return Err(control_character(&at));
                }
                value
            }
            Err(rejection) => return Err(json_problem(rejection)),
        };
        match serde_path_to_error::deserialize::<_, T>(bytes) {
            Ok(v) => Ok(ApiJson(v)),
            Err(e) => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("Failed to deserialize the JSON body into the target type: {e}"),
            )),
        }
    }
}

/// A JSON document in which no object names a key twice. RFC 8259 leaves duplicates to the
/// reader and `serde_json::Value` keeps the last, so `{"title": "a", "title": "b"}` would be
/// stored as one title the sender may not have meant: every body is refused instead, in the
/// same pass that builds the value.
struct UniqueKeys(serde_json::Value);

/// The start of the parse error a duplicate key raises, which [`json_problem`] recognises.
const DUPLICATE_KEY: &str = "duplicate key";

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor).map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(UniqueKeys(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(serde_json::Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("{DUPLICATE_KEY} {key:?}")));
            }
            let UniqueKeys(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(serde_json::Value::Object(object))
    }
}

/// Text fields may hold tab, line feed and carriage return but no other control character:
/// U+0000 cannot be stored by PostgreSQL, and the others have no place in names, reasons or
/// justifications. One rule for every field of every body and query, checked before parsing
/// into the request type, so both databases refuse the same input the same way.
pub fn is_forbidden_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// Whether `s` holds a character that [`is_forbidden_control`] refuses. Bodies carry
/// megabytes of base64 (model updates, masked inputs), so the bytes are screened first, a
/// block at a time without branches, for anything that can start such a character: a C0
/// byte, DEL, or `0xC2`, the lead byte of U+0080..U+00BF, where the C1 controls are. Only a
/// string with such a byte is decoded.
fn has_forbidden_control(s: &str) -> bool {
    let suspect = |c: u8| c < 0x20 || c == 0x7F || c == 0xC2;
    s.as_bytes()
        .chunks(64)
        .any(|block| block.iter().fold(false, |seen, &c| seen | suspect(c)))
        && s.chars().any(is_forbidden_control)
}

/// The JSON pointer of the first string (key or value) holding a forbidden control character.
fn first_control_character(value: &serde_json::Value, at: &mut String) -> Option<String> {
    use serde_json::Value;
    let bad = has_forbidden_control;
    match value {
        Value::String(s) if bad(s) => Some(if at.is_empty() {
            "/".into()
        } else {
            at.clone()
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            let len = at.len();
            at.push_str(&format!("/{i}"));
            let found = first_control_character(v, at);
            at.truncate(len);
            found
        }),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let len = at.len();
            at.push('/');
            at.push_str(&k.replace('~', "~0").replace('/', "~1"));
            let found = if bad(k) {
                Some(at.clone())
            } else {
                first_control_character(v, at)
            };
            at.truncate(len);
            found
        }),
        _ => None,
    }
}

fn control_character(at: &str) -> ApiError {
    let field = super::error::bounded(at, 128);
    ApiError::invalid(vec![ehds_core::domain::FieldError::new(
        &field,
        "control_character",
        "text may not contain control characters other than tab, line feed and carriage return",
    )])
}

fn json_problem(rejection: JsonRejection) -> ApiError {
    let text = rejection.body_text();
    match rejection {
        JsonRejection::JsonDataError(_) if text.contains(DUPLICATE_KEY) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "duplicate_key", text)
        }
        JsonRejection::JsonDataError(_) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", text)
        }
        JsonRejection::JsonSyntaxError(_) => {
            ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", text)
        }
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "expected `Content-Type: application/json`",
        ),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body exceeds the size limit",
        ),
        other => ApiError::new(other.status(), "invalid_body", text),
    }
}

pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        if let Some((name, _)) = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, v)| k.chars().chain(v.chars()).any(is_forbidden_control))
        {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "control_character",
                format!(
                    "query parameter `{}` may not contain control characters",
                    super::error::bounded(&name, 64)
                ),
            ));
        }
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e: QueryRejection| {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.body_text())
            })
    }
}

pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e: PathRejection| {
                ApiError::new(StatusCode::NOT_FOUND, "invalid_path", e.body_text())
            })
    }
}

/// The authenticated caller and the request id, put in place by the authentication middleware.
#[derive(Clone)]
pub struct Caller {
    pub principal: Principal,
    pub request_id: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("route is missing the authentication layer"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_screen_agrees_with_the_character_rule() {
        let by_chars = |s: &str| s.chars().any(is_forbidden_control);
        let long = "QUJD".repeat(40);
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain text".into(),
            "tab\tline\nreturn\r".into(),
            "nul\u{0}".into(),
            "escape\u{1b}".into(),
            "del\u{7f}".into(),
            "c1 \u{85} next line".into(),
            "c1 \u{9f}".into(),
            "no-break\u{a0}space and \u{bf}".into(),
            "Zürich, São Paulo, Łódź, 東京".into(),
        ];
        // each character at every position around a 64-byte block boundary
        for c in [
            '\u{0}', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}', '\u{a0}', '\t', 'é',
        ] {
            for at in 60..68 {
                let mut s = long.clone();
                s.insert(at, c);
                cases.push(s);
            }
        }
        for s in &cases {
            assert_eq!(has_forbidden_control(s), by_chars(s), "{s:?}");
        }
        assert!(cases.iter().any(|s| has_forbidden_control(s)));
        assert!(cases
            .iter()
            .any(|s| !has_forbidden_control(s) && s.contains('\u{a0}')));
    }
}
