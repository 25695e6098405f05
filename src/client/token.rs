//! Where the client's bearer token comes from: a fixed token, tokens minted with the
//! development key, or an OAuth 2.0 client-credentials login at an OpenID Connect issuer.
//! Renewable sources cache their token and renew it before it expires, or at once after the
//! gateway refused it ([`TokenSource::invalidate`]).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use tokio::sync::Mutex;

use crate::auth::dev::DevIssuer;

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

/// OAuth 2.0 client credentials (HTTP basic authentication) at the token endpoint the issuer
/// publishes in its OpenID Connect discovery document.
pub struct ClientCredentials {
    http: reqwest::Client,
    issuer: String,
    client_id: String,
    client_secret: String,
    cache: Cache,
}

impl ClientCredentials {
    pub fn new(http: reqwest::Client, issuer: &str, client_id: &str, client_secret: &str) -> Self {
        Self {
            http,
            issuer: issuer.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            cache: Cache::default(),
        }
    }

    async fn login(&self) -> anyhow::Result<(String, Duration)> {
        let discovery: serde_json::Value = self
            .http
            .get(format!("{}/.well-known/openid-configuration", self.issuer))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let endpoint = discovery["token_endpoint"]
            .as_str()
            .context("the issuer publishes no token endpoint")?;
        let answer: serde_json::Value = self
            .http
            .post(endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let token = answer["access_token"]
            .as_str()
            .context("the token response has no access_token")?
            .to_owned();
        let expires = answer["expires_in"].as_u64().unwrap_or(300);
        // renew a little early so a long task never runs on an expired token
        Ok((
            token,
            Duration::from_secs(expires.saturating_sub(30).max(10)),
        ))
    }
}

#[async_trait::async_trait]
impl TokenSource for ClientCredentials {
    async fn token(&self) -> anyhow::Result<String> {
        self.cache.get(self.login()).await
    }

    async fn invalidate(&self) {
        self.cache.clear().await;
    }
}
