//! Where the client's bearer token comes from: a fixed token, tokens minted with the
//! development key, or an OAuth 2.0 client-credentials login at an OpenID Connect issuer
//! (`client_secret_basic`, `client_secret_post` or `private_key_jwt`).
//! Renewable sources cache their token and renew it before it expires, or at once after the
//! gateway refused it ([`TokenSource::invalidate`]).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use tokio::sync::Mutex;

use ehds_core::dev_issuer::DevIssuer;

#[async_trait::async_trait]
pub trait TokenSource: Send + Sync {
    /// A token to send now.
    async fn token(&self) -> anyhow::Result<String>;
    /// The gateway did not accept the last token: the next [`token`](Self::token) gets a new one.
    async fn invalidate(&self) {}
}

/// One source shared by several clients (one login for every caller of a process).
#[async_trait::async_trait]
impl<T: TokenSource + ?Sized> TokenSource for Arc<T> {
    async fn token(&self) -> anyhow::Result<String> {
        (**self).token().await
    }

    async fn invalidate(&self) {
        (**self).invalidate().await
    }
}

/// A bearer token obtained elsewhere.
pub struct StaticToken(pub String);

#[async_trait::async_trait]
impl TokenSource for StaticToken {
    async fn token(&self) -> anyhow::Result<String> {
        Ok(self.0.clone())
    }
}

/// The cached token of a renewable source.
#[derive(Default)]
struct Cache(Mutex<Option<(String, Instant)>>);

impl Cache {
    /// The cached token while it is fresh, else a new one from `renew` (token, lifetime). The
    /// lock is held while renewing, so concurrent callers log in once.
    async fn get(
        &self,
        renew: impl std::future::Future<Output = anyhow::Result<(String, Duration)>>,
    ) -> anyhow::Result<String> {
        let mut slot = self.0.lock().await;
        if let Some((token, renew_at)) = slot.as_ref() {
            if Instant::now() < *renew_at {
                return Ok(token.clone());
            }
        }
        let (token, lifetime) = renew.await?;
        *slot = Some((token.clone(), Instant::now() + lifetime));
        Ok(token)
    }

    async fn clear(&self) {
        *self.0.lock().await = None;
    }
}

/// Development mode: tokens minted with the gateway's development key.
pub struct DevTokens {
    issuer: Arc<DevIssuer>,
    sub: String,
    roles: Vec<String>,
    organisation: Option<String>,
    cache: Cache,
}

impl DevTokens {
    /// Tokens lasting an hour, renewed after fifty minutes.
    const TTL_SECONDS: i64 = 3600;
    const RENEW_AFTER: Duration = Duration::from_secs(3000);

    pub fn new(issuer: Arc<DevIssuer>, sub: &str, role: &str, organisation: Option<&str>) -> Self {
        Self {
            issuer,
            sub: sub.to_owned(),
            roles: vec![role.to_owned()],
            organisation: organisation.map(str::to_owned),
            cache: Cache::default(),
        }
    }
}

#[async_trait::async_trait]
impl TokenSource for DevTokens {
    async fn token(&self) -> anyhow::Result<String> {
        self.cache
            .get(async {
                let token = self.issuer.mint(
                    &self.sub,
                    &self.roles,
                    self.organisation.as_deref(),
                    Self::TTL_SECONDS,
                )?;
                Ok((token, Self::RENEW_AFTER))
            })
            .await
    }

    async fn invalidate(&self) {
        self.cache.clear().await;
    }
}

/// How the client authenticates at the token endpoint (OpenID Connect Core 1.0 §9).
#[derive(Clone)]
pub enum ClientAuth {
    /// `client_secret_basic`: the secret in an HTTP Basic `Authorization` header.
    SecretBasic(String),
    /// `client_secret_post`: the secret in the form body.
    SecretPost(String),
    /// `private_key_jwt`: a short-lived JWT signed with the client's private key (RFC 7523).
    PrivateKeyJwt(ClientKey),
}

impl ClientAuth {
    /// The method's registered name (`token_endpoint_auth_method`).
    pub fn method(&self) -> &'static str {
        match self {
            ClientAuth::SecretBasic(_) => "client_secret_basic",
            ClientAuth::SecretPost(_) => "client_secret_post",
            ClientAuth::PrivateKeyJwt(_) => "private_key_jwt",
        }
    }
}

/// The private key of a `private_key_jwt` client.
#[derive(Clone)]
pub struct ClientKey {
    key: jsonwebtoken::EncodingKey,
    algorithm: jsonwebtoken::Algorithm,
    /// The `kid` the provider registered the public key under, when it needs one to find it.
    key_id: Option<String>,
}

impl ClientKey {
    /// A PKCS#8 (or SEC1 / PKCS#1) PEM private key: RSA signs RS256, P-256 ES256, Ed25519 EdDSA.
    pub fn from_pem(pem: &[u8], key_id: Option<String>) -> anyhow::Result<Self> {
        use jsonwebtoken::{Algorithm, EncodingKey};
        let (key, algorithm) = if let Ok(k) = EncodingKey::from_rsa_pem(pem) {
            (k, Algorithm::RS256)
        } else if let Ok(k) = EncodingKey::from_ec_pem(pem) {
            (k, Algorithm::ES256)
        } else if let Ok(k) = EncodingKey::from_ed_pem(pem) {
            (k, Algorithm::EdDSA)
        } else {
            anyhow::bail!("not an RSA, P-256 or Ed25519 private key in PEM");
        };
        let key = Self {
            key,
            algorithm,
            key_id,
        };
        // The PEM parsers accept any key of the family; signing once finds an unusable one
        // (another curve, a malformed key) now rather than at the first login.
        key.assertion("probe", "probe")
            .context("the private key cannot sign")?;
        Ok(key)
    }

    pub fn load(path: &std::path::Path, key_id: Option<String>) -> anyhow::Result<Self> {
        let pem =
            std::fs::read(path).with_context(|| format!("Failed to read {}", path.display()))?;
        Self::from_pem(&pem, key_id).with_context(|| format!("{}", path.display()))
    }

    /// The client assertion for one token request (RFC 7523 §3): the client names itself as
    /// issuer and subject, the token endpoint is the audience, and a fresh `jti` lets the
    /// provider refuse a replay.
    fn assertion(&self, client_id: &str, token_endpoint: &str) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": token_endpoint,
            "jti": uuid::Uuid::new_v4().to_string(),
            "iat": now,
            "exp": now + 60,
        });
        let mut header = jsonwebtoken::Header::new(self.algorithm);
        header.kid = self.key_id.clone();
        Ok(jsonwebtoken::encode(&header, &claims, &self.key)?)
    }
}

/// A client-credentials login at an OpenID Connect provider.
#[derive(Clone)]
pub struct ClientLogin {
    /// The issuer; its token endpoint is found by OpenID Connect discovery.
    pub issuer: String,
    pub client_id: String,
    pub auth: ClientAuth,
    /// Scopes to ask for; none leaves it to the client's registration.
    pub scopes: Vec<String>,
    /// RFC 8707 resource indicator of the gateway (providers that issue JWT access tokens per
    /// resource server, such as `oidc-provider`, need it).
    pub resource: Option<String>,
    /// The `audience` parameter some providers use instead of a resource indicator.
    pub audience: Option<String>,
}

/// OAuth 2.0 client credentials at the token endpoint the issuer publishes in its OpenID Connect
/// discovery document.
pub struct ClientCredentials {
    http: ehds_http::OidcClient,
    login: ClientLogin,
    cache: Cache,
}

impl ClientCredentials {
    pub fn new(login: ClientLogin) -> anyhow::Result<Self> {
        openidconnect::IssuerUrl::new(login.issuer.clone()).context("the issuer is not a URL")?;
        // Never follows redirects: a discovery document could otherwise send the secret anywhere.
        let http = ehds_http::OidcClient::new(Duration::from_secs(30))?;
        Ok(Self {
            http,
            login,
            cache: Cache::default(),
        })
    }

    async fn request(&self) -> anyhow::Result<(String, Duration)> {
        use openidconnect::{
            core::{CoreClient, CoreProviderMetadata},
            AuthType, ClientId, ClientSecret, IssuerUrl, OAuth2TokenResponse, Scope,
        };
        let login = &self.login;
        let metadata =
            CoreProviderMetadata::discover_async(IssuerUrl::new(login.issuer.clone())?, &self.http)
                .await
                .context("OpenID Connect discovery failed")?;
        if let Some(supported) = metadata.token_endpoint_auth_methods_supported() {
            let method = login.auth.method();
            anyhow::ensure!(
                supported.iter().any(|m| m.as_ref() == method),
                "the issuer does not offer the `{method}` client authentication"
            );
        }
        let id = ClientId::new(login.client_id.clone());
        let client = match &login.auth {
            ClientAuth::SecretBasic(s) => {
                CoreClient::from_provider_metadata(metadata, id, Some(ClientSecret::new(s.clone())))
                    .set_auth_type(AuthType::BasicAuth)
            }
            ClientAuth::SecretPost(s) => {
                CoreClient::from_provider_metadata(metadata, id, Some(ClientSecret::new(s.clone())))
                    .set_auth_type(AuthType::RequestBody)
            }
            // Without a secret the client id goes in the body, beside the assertion.
            ClientAuth::PrivateKeyJwt(_) => CoreClient::from_provider_metadata(metadata, id, None)
                .set_auth_type(AuthType::RequestBody),
        };
        let mut request = client
            .exchange_client_credentials()
            .context("the issuer publishes no token endpoint")?
            .add_scopes(login.scopes.iter().cloned().map(Scope::new));
        if let ClientAuth::PrivateKeyJwt(key) = &login.auth {
            let endpoint = client
                .token_uri()
                .context("the issuer publishes no token endpoint")?;
            request = request
                .add_extra_param(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                )
                .add_extra_param(
                    "client_assertion",
                    key.assertion(&login.client_id, endpoint.as_str())?,
                );
        }
        if let Some(resource) = &login.resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        if let Some(audience) = &login.audience {
            request = request.add_extra_param("audience", audience.clone());
        }
        let answer = request.request_async(&self.http).await.map_err(|e| {
            anyhow::anyhow!("the client-credentials login failed: {}", describe(&e))
        })?;
        let lifetime = answer
            .expires_in()
            .unwrap_or(Duration::from_secs(300))
            .as_secs();
        // renew a little early so a long task never runs on an expired token
        Ok((
            answer.access_token().secret().clone(),
            Duration::from_secs(lifetime.saturating_sub(30).max(10)),
        ))
    }
}

/// The provider's own words (`invalid_client`, its description), else the transport's.
fn describe<RE, TE>(e: &openidconnect::RequestTokenError<RE, TE>) -> String
where
    RE: std::error::Error + 'static,
    TE: openidconnect::ErrorResponse + 'static,
{
    match e {
        openidconnect::RequestTokenError::ServerResponse(r) => r.to_string(),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    }
}

#[async_trait::async_trait]
impl TokenSource for ClientCredentials {
    async fn token(&self) -> anyhow::Result<String> {
        self.cache.get(self.request()).await
    }

    async fn invalidate(&self) {
        self.cache.clear().await;
    }
}
