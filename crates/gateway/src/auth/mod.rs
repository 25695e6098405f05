//! Authentication: bearer JWTs validated against the issuer's JWKS, found by OpenID Connect
//! discovery. Development mode runs this same path against the gateway's own dev issuer.

use std::{
    collections::{BTreeSet, HashMap},
    time::{Duration, Instant},
};

use jsonwebtoken::{jwk::JwkSet, Algorithm, DecodingKey, Validation};
use openidconnect::{core::CoreProviderMetadata, IssuerUrl};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use tokio::sync::{Mutex, RwLock};

use crate::configuration::AuthSettings;
use ehds_core::domain::{audit::Actor, OrgId};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    HdabOfficer,
    Researcher,
    Auditor,
    DataHolder,
    OptoutRegistrar,
    Admin,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::HdabOfficer,
        Role::Researcher,
        Role::Auditor,
        Role::DataHolder,
        Role::OptoutRegistrar,
        Role::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::HdabOfficer => "hdab_officer",
            Role::Researcher => "researcher",
            Role::Auditor => "auditor",
            Role::DataHolder => "data_holder",
            Role::OptoutRegistrar => "optout_registrar",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub sub: String,
    pub roles: BTreeSet<Role>,
    pub organisation: Option<OrgId>,
}

impl Principal {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    pub fn actor(&self) -> Actor {
        Actor {
            sub: self.sub.clone(),
            roles: self.roles.iter().map(|r| r.as_str().to_owned()).collect(),
            organisation: self.organisation.as_ref().map(|o| o.to_string()),
        }
    }
}

/// Why a token was refused. Every variant is a 401.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AuthError {
    pub code: &'static str,
    pub message: String,
}

impl AuthError {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Longest bearer token accepted. Issuers' access tokens are 1-4 kB; the head limit of the
/// HTTP layer is larger.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Longest key id looked up in the issuer's key set.
pub const MAX_KID_BYTES: usize = 128;
/// Longest subject identifier (OpenID Connect Core 1.0 §2: at most 255 ASCII characters).
pub const MAX_SUBJECT_BYTES: usize = 255;

fn unknown_key() -> AuthError {
    AuthError::new(
        "unknown_signing_key",
        "the token names a signing key the issuer does not publish",
    )
}

struct KeyCache {
    keys: JwkSet,
    /// Which set `keys` is: counts the sets fetched, so that a token verified against an
    /// earlier one is verified again.
    generation: u64,
    /// When `keys` were fetched.
    fetched_at: Option<Instant>,
    /// When a fetch was last tried, whether it worked or not.
    tried_at: Option<Instant>,
}

/// A token whose signature and claims were checked, remembered by the SHA-256 of its bytes:
/// callers send the same token with every request until it expires, and the signature check
/// (P-256 or RSA in software) would otherwise be most of a request's CPU.
struct Verified {
    principal: Principal,
    /// The `exp` claim, seconds since the epoch: checked again at every use.
    exp: i64,
    /// The generation of the key set the signature was checked against.
    keys: u64,
}

/// Most tokens remembered at once; beyond it the expired ones are dropped, or all of them.
const MAX_VERIFIED: usize = 10_000;

pub struct Authenticator {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway: u64,
    roles_claim: String,
    organisation_claim: String,
    refresh_min: Duration,
    max_age: Duration,
    http: ehds_http::OidcClient,
    cache: RwLock<KeyCache>,
    refreshing: Mutex<()>,
    verified: std::sync::Mutex<HashMap<[u8; 32], Verified>>,
}

/// Parses the configured algorithm allow-list. Symmetric algorithms would let anyone holding the
/// (public) verification material mint tokens, so they are refused outright.
pub fn parse_algorithms(names: &[String]) -> anyhow::Result<Vec<Algorithm>> {
    names
        .iter()
        .map(|n| {
            let alg: Algorithm = n
                .parse()
                .map_err(|_| anyhow::anyhow!("unknown JWS algorithm `{n}`"))?;
            anyhow::ensure!(
                !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512),
                "HMAC algorithm `{n}` cannot be allowed for an asymmetric issuer"
            );
            Ok(alg)
        })
        .collect()
}

impl Authenticator {
    pub fn new(settings: &AuthSettings, issuer: String) -> anyhow::Result<Self> {
        let algorithms = parse_algorithms(&settings.algorithms)?;
        anyhow::ensure!(
            !algorithms.is_empty(),
            "at least one JWS algorithm must be allowed"
        );
        IssuerUrl::new(issuer.clone())?;
        // Never follows redirects: a discovery document could otherwise point anywhere (SSRF).
        let http = ehds_http::OidcClient::new(Duration::from_secs(10))?;
        Ok(Self {
            issuer,
            audience: settings.audience.clone(),
            algorithms,
            leeway: settings.leeway_seconds,
            roles_claim: settings.roles_claim.clone(),
            organisation_claim: settings.organisation_claim.clone(),
            refresh_min: Duration::from_secs(settings.jwks_refresh_min_seconds),
            max_age: Duration::from_secs(settings.jwks_max_age_seconds),
            http,
            cache: RwLock::new(KeyCache {
                keys: JwkSet { keys: vec![] },
                generation: 0,
                fetched_at: None,
                tried_at: None,
            }),
            refreshing: Mutex::new(()),
            verified: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// An authenticator that trusts `keys` and never asks the issuer for others: tokens are
    /// checked exactly as [`Self::authenticate`] checks them, without discovery over the
    /// network (the parser fuzz targets, tests).
    pub fn with_keys(
        settings: &AuthSettings,
        issuer: String,
        keys: JwkSet,
    ) -> anyhow::Result<Self> {
        let mut auth = Self::new(settings, issuer)?;
        let now = Instant::now();
        auth.refresh_min = Duration::MAX;
        auth.max_age = Duration::MAX;
        auth.cache = RwLock::new(KeyCache {
            keys,
            generation: 1,
            fetched_at: Some(now),
            tried_at: Some(now),
        });
        Ok(auth)
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    async fn discover(&self) -> Result<JwkSet, AuthError> {
        let unavailable = |e: String| {
            AuthError::new(
                "issuer_unavailable",
                format!("OpenID Connect discovery failed: {e}"),
            )
        };
        let issuer = IssuerUrl::new(self.issuer.clone()).map_err(|e| unavailable(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let json = serde_json::to_value(metadata.jwks()).map_err(|e| unavailable(e.to_string()))?;
        serde_json::from_value(json).map_err(|e| unavailable(e.to_string()))
    }

    /// Returns the key for `kid` from the issuer's key set. The set is fetched again when it
    /// names no such key (the issuer rotated its keys) or is older than the configured maximum
    /// age (the issuer may have retired a key), but never more often than the configured minimum
    /// interval. If the issuer cannot be reached, a key from the last set it published still
    /// verifies, so an identity-provider outage does not lock every caller out.
    async fn key(&self, kid: &str) -> Result<jsonwebtoken::jwk::Jwk, AuthError> {
        let fresh = |c: &KeyCache| c.fetched_at.is_some_and(|t| t.elapsed() < self.max_age);
        {
            let cache = self.cache.read().await;
            if fresh(&cache) {
                if let Some(k) = cache.keys.find(kid) {
                    return Ok(k.clone());
                }
            }
        }
        let _one_refresh_at_a_time = self.refreshing.lock().await;
        {
            let cache = self.cache.read().await;
            let known = cache.keys.find(kid);
            if let (true, Some(k)) = (fresh(&cache), known) {
                return Ok(k.clone());
            }
            if cache
                .tried_at
                .is_some_and(|t| t.elapsed() < self.refresh_min)
            {
                return known.cloned().ok_or_else(unknown_key);
            }
        }
        let fetched = self.discover().await;
        let mut cache = self.cache.write().await;
        cache.tried_at = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                cache.keys = keys;
                cache.generation += 1;
                cache.fetched_at = Some(Instant::now());
            }
            Err(e) => match cache.keys.find(kid) {
                Some(k) => {
                    tracing::warn!(error = %e, "the issuer's key set could not be refreshed; using the last one");
                    return Ok(k.clone());
                }
                None => return Err(e),
            },
        }
        cache.keys.find(kid).cloned().ok_or_else(unknown_key)
    }

    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        // Everything the caller controls stays out of the messages below: they are sent back
        // and stored in the audit trail before the signature could be checked.
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::new(
                "invalid_token",
                format!("the token exceeds {MAX_TOKEN_BYTES} bytes"),
            ));
        }
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some(principal) = self.recently_verified(&digest).await {
            return Ok(principal);
        }
        // read before the key: a set fetched meanwhile makes the remembered token a miss
        let generation = self.cache.read().await.generation;
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            if is_unsecured(token) {
                AuthError::new("unsigned_token", "the token is not signed (`alg: none`)")
            } else {
                AuthError::new("invalid_token", "the token is not a well-formed JWS")
            }
        })?;
        if !self.algorithms.contains(&header.alg) {
            return Err(AuthError::new(
                "unsupported_algorithm",
                "the token's signing algorithm is not allowed",
            ));
        }
        let kid = header
            .kid
            .as_deref()
            .ok_or_else(|| AuthError::new("invalid_token", "token header has no `kid`"))?;
        // Key ids are short opaque names; a long one cannot be the issuer's and must not
        // trigger a key-set refresh.
        if kid.is_empty() || kid.len() > MAX_KID_BYTES {
            return Err(unknown_key());
        }
        let jwk = self.key(kid).await?;
        if let Some(key_alg) = jwk.common.key_algorithm {
            if format!("{key_alg:?}") != format!("{:?}", header.alg) {
                return Err(AuthError::new(
                    "invalid_token",
                    "token algorithm does not match its key",
                ));
            }
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| {
            tracing::warn!(error = %e, "the issuer's signing key cannot be used");
            AuthError::new(
                "unknown_signing_key",
                "the issuer's signing key cannot be used",
            )
        })?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data =
            jsonwebtoken::decode::<serde_json::Value>(token, &key, &validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                match e.kind() {
                    K::ExpiredSignature => AuthError::new("token_expired", "the token has expired"),
                    K::ImmatureSignature => {
                        AuthError::new("token_not_yet_valid", "the token is not valid yet (nbf)")
                    }
                    K::InvalidIssuer => {
                        AuthError::new("invalid_issuer", "the token was issued by another issuer")
                    }
                    K::InvalidAudience => AuthError::new(
                        "invalid_audience",
                        "the token is not meant for this service",
                    ),
                    K::InvalidSignature => {
                        AuthError::new("invalid_signature", "the token signature does not verify")
                    }
                    K::MissingRequiredClaim(c) => match c.as_str() {
                        "exp" | "iss" | "aud" | "sub" => AuthError::new(
                            "invalid_token",
                            format!("the token lacks the `{c}` claim"),
                        ),
                        _ => AuthError::new("invalid_token", "the token lacks a required claim"),
                    },
                    _ => AuthError::new("invalid_token", "the token is invalid"),
                }
            })?;
        let principal = self.principal(&data.claims)?;
        if let Some(exp) = data.claims.get("exp").and_then(serde_json::Value::as_f64) {
            self.remember(digest, &principal, exp.floor() as i64, generation);
        }
        Ok(principal)
    }

    /// The principal of a token verified before, if it is still valid as it was then: not
    /// expired (with the configured leeway), and checked against the key set in use now, which
    /// is still fresh (a stale or replaced set means the full check again).
    async fn recently_verified(&self, digest: &[u8; 32]) -> Option<Principal> {
        let (principal, exp, keys) = {
            let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            let v = verified.get(digest)?;
            (v.principal.clone(), v.exp, v.keys)
        };
        if self.expired(exp) {
            return None;
        }
        let cache = self.cache.read().await;
        let fresh = cache.fetched_at.is_some_and(|t| t.elapsed() < self.max_age);
        (fresh && cache.generation == keys).then_some(principal)
    }

    /// As the token check has it: expired once `exp` is more than the leeway in the past.
    fn expired(&self, exp: i64) -> bool {
        i128::from(exp) + i128::from(self.leeway) < i128::from(chrono::Utc::now().timestamp())
    }

    fn remember(&self, digest: [u8; 32], principal: &Principal, exp: i64, keys: u64) {
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if verified.len() >= MAX_VERIFIED {
            verified.retain(|_, v| !self.expired(v.exp));
            if verified.len() >= MAX_VERIFIED {
                verified.clear();
            }
        }
        verified.insert(
            digest,
            Verified {
                principal: principal.clone(),
                exp,
                keys,
            },
        );
    }

    fn principal(&self, claims: &serde_json::Value) -> Result<Principal, AuthError> {
        let sub = claims
            .get("sub")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty() && s.len() <= MAX_SUBJECT_BYTES)
            .ok_or_else(|| {
                AuthError::new(
                    "invalid_token",
                    "the `sub` claim must be a string of 1-255 bytes",
                )
            })?;
        let roles = match claim_at(claims, &self.roles_claim) {
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str())
                .filter_map(Role::parse)
                .collect(),
            Some(serde_json::Value::String(s)) => {
                s.split_whitespace().filter_map(Role::parse).collect()
            }
            _ => BTreeSet::new(),
        };
        let organisation = match claim_at(claims, &self.organisation_claim).and_then(|v| v.as_str())
        {
            Some(o) => Some(OrgId::parse(o).map_err(|_| {
                AuthError::new(
                    "invalid_token",
                    "the organisation claim is not a valid organisation id",
                )
            })?),
            None => None,
        };
        Ok(Principal {
            sub: sub.to_owned(),
            roles,
            organisation,
        })
    }
}

/// Whether the token's header declares an unsecured JWS (RFC 7515 §A.5, `"alg": "none"`),
/// which the JWS parser does not know as an algorithm at all.
fn is_unsecured(token: &str) -> bool {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    #[derive(Deserialize)]
    struct Header {
        alg: String,
    }
    token
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|h| serde_json::from_slice::<Header>(&h).ok())
        .is_some_and(|h| h.alg.eq_ignore_ascii_case("none"))
}

fn claim_at<'a>(claims: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    path.split('.').try_fold(claims, |v, part| v.get(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_and_unknown_algorithms_are_refused() {
        assert!(parse_algorithms(&["HS256".into()]).is_err());
        assert!(parse_algorithms(&["none".into()]).is_err());
        assert_eq!(
            parse_algorithms(&["ES256".into(), "RS256".into()])
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn unsecured_tokens_are_told_apart_from_garbage() {
        use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
        let header = |h: &str| format!("{}.e30.", URL_SAFE_NO_PAD.encode(h));
        assert!(is_unsecured(&header(r#"{"alg":"none"}"#)));
        assert!(is_unsecured(&header(r#"{"alg":"NONE","typ":"JWT"}"#)));
        assert!(!is_unsecured(&header(r#"{"alg":"RS256"}"#)));
        assert!(!is_unsecured(&header(r#"{"typ":"JWT"}"#)));
        assert!(!is_unsecured("not.a.jwt"));
    }

    /// An authenticator that trusts a development issuer's key, without leeway.
    fn trusting_a_dev_issuer() -> (
        tempfile::TempDir,
        ehds_core::dev_issuer::DevIssuer,
        Authenticator,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = crate::configuration::Settings::default().auth;
        settings.leeway_seconds = 0;
        let dev = ehds_core::dev_issuer::DevIssuer::load_or_create(
            dir.path(),
            "http://gateway.test",
            &settings.audience,
        )
        .unwrap();
        let keys: JwkSet = serde_json::from_value(dev.jwks()).unwrap();
        let auth = Authenticator::with_keys(&settings, dev.issuer().to_owned(), keys).unwrap();
        (dir, dev, auth)
    }

    #[tokio::test]
    async fn a_remembered_token_is_refused_once_it_expires() {
        let (_dir, dev, auth) = trusting_a_dev_issuer();
        let now = chrono::Utc::now().timestamp();
        let roles = ["researcher".to_owned()];
        let token = dev
            .mint_at("ana", &roles, Some("uni-a"), now - 10, now + 1)
            .unwrap();
        let first = auth.authenticate(&token).await.unwrap();
        assert_eq!(auth.authenticate(&token).await.unwrap(), first);
        assert_eq!(auth.verified.lock().unwrap().len(), 1, "remembered once");
        tokio::time::sleep(Duration::from_millis(2100)).await;
        let e = auth.authenticate(&token).await.unwrap_err();
        assert_eq!(e.code, "token_expired");
    }

    #[tokio::test]
    async fn a_remembered_token_is_checked_again_against_a_new_key_set() {
        let (_dir, dev, auth) = trusting_a_dev_issuer();
        let token = dev
            .mint("ana", &["researcher".to_owned()], Some("uni-a"), 600)
            .unwrap();
        auth.authenticate(&token).await.unwrap();
        // the issuer retires its key: the set fetched next no longer has it
        {
            let mut cache = auth.cache.write().await;
            cache.keys = JwkSet { keys: vec![] };
            cache.generation += 1;
        }
        let e = auth.authenticate(&token).await.unwrap_err();
        assert_eq!(e.code, "unknown_signing_key");
    }

    #[tokio::test]
    async fn a_token_changed_in_one_byte_is_not_taken_for_a_remembered_one() {
        let (_dir, dev, auth) = trusting_a_dev_issuer();
        let token = dev
            .mint("ana", &["researcher".to_owned()], Some("uni-a"), 600)
            .unwrap();
        auth.authenticate(&token).await.unwrap();
        // the signature's last character changed: another digest, the full check, refused
        let mut forged = token.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == 'A' { 'B' } else { 'A' });
        let e = auth.authenticate(&forged).await.unwrap_err();
        assert!(
            matches!(e.code, "invalid_signature" | "invalid_token"),
            "{}",
            e.code
        );
    }

    #[test]
    fn claims_are_found_by_dotted_path() {
        let c = serde_json::json!({"realm_access": {"roles": ["auditor"]}});
        assert_eq!(
            claim_at(&c, "realm_access.roles"),
            Some(&serde_json::json!(["auditor"]))
        );
        assert_eq!(claim_at(&c, "roles"), None);
    }
}
