//! The one HTTP client of the gateway's API, used by the node agent, the demo, the tests and
//! the benchmarks. Requests and answers are the gateway's own types where the API shares them
//! ([`ehds_core::wire`] for the node protocol, the domain's otherwise); a refusal is a
//! [`ClientError::Problem`] carrying the problem document's stable `code`.
//!
//! A client holds a base URL, a connection pool, an optional [`TokenSource`] and a
//! [`RetryPolicy`]; [`GatewayClient::with_tokens`] and [`GatewayClient::with_retry`] derive
//! clients that share the pool, so one process can act as several callers.

mod error;
mod governance;
mod node;
pub mod token;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use backon::{ExponentialBuilder, Retryable};
use bytes::Bytes;
use http::{header, HeaderMap, Method, StatusCode};
use serde::{de::DeserializeOwned, Serialize};

pub use error::ClientError;
pub use governance::{ModelFile, OptOutImport};
pub use node::{Delivery, MatchValues, Matched, OptOutQuery};
pub use token::{
    ClientAuth, ClientCredentials, ClientKey, ClientLogin, DevTokens, StaticToken, TokenSource,
};

/// Called before each retry with the error that caused it and the pause before the next try.
pub type RetryHook = Arc<dyn Fn(&ClientError, Duration) + Send + Sync>;

/// How a call reacts to a transient failure ([`ClientError::is_transient`]) or a refused
/// token (401: the token source is asked for a new one): exponential backoff, bounded by a
/// number of retries or a deadline. A refusal is never retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    backoff: Option<ExponentialBuilder>,
    deadline: Option<Instant>,
}

impl RetryPolicy {
    /// One attempt: the caller sees every failure at once.
    pub fn never() -> Self {
        Self {
            backoff: None,
            deadline: None,
        }
    }

    /// At most `retries` retries, the first after `first_delay`, each pause twice the last.
    pub fn attempts(retries: usize, first_delay: Duration) -> Self {
        Self {
            backoff: Some(
                ExponentialBuilder::default()
                    .with_min_delay(first_delay)
                    .without_max_delay()
                    .with_max_times(retries),
            ),
            deadline: None,
        }
    }

    /// Retries until `deadline`, pausing 100 ms at first and at most 2 s: a node keeps working
    /// through a gateway restart.
    pub fn until(deadline: Instant) -> Self {
        Self {
            backoff: Some(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(100))
                    .with_max_delay(Duration::from_secs(2))
                    .without_max_times(),
            ),
            deadline: Some(deadline),
        }
    }

    fn allows_retry(&self, e: &ClientError) -> bool {
        let retryable = e.is_transient() || e.status() == Some(StatusCode::UNAUTHORIZED);
        retryable && self.deadline.is_none_or(|d| Instant::now() < d)
    }
}

/// A successful answer.
pub(crate) struct Answer {
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A request, re-sendable on retry.
pub(crate) struct Call {
    method: Method,
    path: String,
    body: Option<(&'static str, Bytes)>,
}

impl Call {
    pub fn get(path: impl Into<String>) -> Self {
        Self {
            method: Method::GET,
            path: path.into(),
            body: None,
        }
    }

    pub fn post(path: impl Into<String>) -> Self {
        Self {
            method: Method::POST,
            path: path.into(),
            body: None,
        }
    }

    pub fn json(mut self, body: &impl Serialize) -> Result<Self, ClientError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ClientError::decode(self.what(), format!("request body: {e}")))?;
        self.body = Some(("application/json", bytes.into()));
        Ok(self)
    }

    pub fn body(mut self, content_type: &'static str, body: Bytes) -> Self {
        self.body = Some((content_type, body));
        self
    }

    /// `METHOD /path`, for messages.
    pub fn what(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

#[derive(Clone)]
pub struct GatewayClient {
    base: Arc<str>,
    http: reqwest::Client,
    tokens: Option<Arc<dyn TokenSource>>,
    retry: RetryPolicy,
    on_retry: Option<RetryHook>,
}

/// Settings of a new client's connection pool.
pub struct GatewayClientBuilder {
    base: String,
    http: reqwest::ClientBuilder,
}

impl GatewayClientBuilder {
    /// Bounds every request, long polls included.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.timeout(timeout);
        self
    }

    pub fn pool_max_idle_per_host(mut self, n: usize) -> Self {
        self.http = self.http.pool_max_idle_per_host(n);
        self
    }

    pub fn build(self) -> Result<GatewayClient, ClientError> {
        Ok(GatewayClient {
            base: self.base.trim_end_matches('/').into(),
            http: self.http.build().map_err(ClientError::Transport)?,
            tokens: None,
            retry: RetryPolicy::never(),
            on_retry: None,
        })
    }
}

impl GatewayClient {
    /// A client of the gateway at `base` (`http://host:port`), without token or retries.
    pub fn new(base: &str) -> Result<Self, ClientError> {
        Self::builder(base).build()
    }

    pub fn builder(base: &str) -> GatewayClientBuilder {
        GatewayClientBuilder {
            base: base.to_owned(),
            http: ehds_http::builder(),
        }
    }

    /// The same gateway and connection pool, calling with tokens from `tokens`.
    pub fn with_tokens(&self, tokens: impl TokenSource + 'static) -> Self {
        Self {
            tokens: Some(Arc::new(tokens)),
            ..self.clone()
        }
    }

    /// The same gateway and connection pool, with `token` as bearer token.
    pub fn with_token(&self, token: impl Into<String>) -> Self {
        self.with_tokens(StaticToken(token.into()))
    }

    pub fn with_retry(&self, retry: RetryPolicy) -> Self {
        Self {
            retry,
            ..self.clone()
        }
    }

    /// Reports every retry to `hook` (counting them, say).
    pub fn on_retry(&self, hook: RetryHook) -> Self {
        Self {
            on_retry: Some(hook),
            ..self.clone()
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The connection pool, for requests to other servers (an identity provider).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// One try of `call`.
    async fn attempt(&self, call: &Call) -> Result<Answer, ClientError> {
        let mut req = self
            .http
            .request(call.method.clone(), format!("{}{}", self.base, call.path));
        if let Some(tokens) = &self.tokens {
            req = req.bearer_auth(tokens.token().await.map_err(ClientError::Token)?);
        }
        if let Some((content_type, body)) = &call.body {
            req = req
                .header(header::CONTENT_TYPE, *content_type)
                .body(body.clone());
        }
        let resp = req.send().await.map_err(ClientError::Transport)?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.map_err(ClientError::Transport)?;
        if status.is_success() {
            return Ok(Answer { headers, body });
        }
        if status == StatusCode::UNAUTHORIZED {
            if let Some(tokens) = &self.tokens {
                tokens.invalidate().await;
            }
        }
        Err(ClientError::from_answer(status, &body))
    }

    /// Sends `call` under the client's retry policy.
    pub(crate) async fn send(&self, call: Call) -> Result<Answer, ClientError> {
        let Some(backoff) = self.retry.backoff else {
            return self.attempt(&call).await;
        };
        let call = &call;
        (|| self.attempt(call))
            .retry(backoff)
            .when(|e| self.retry.allows_retry(e))
            .notify(|e, pause| {
                match e {
                    ClientError::Transport(_) => {
                        tracing::debug!(error = %e, request = %call.what(), "gateway unreachable; retrying")
                    }
                    _ => {
                        tracing::warn!(error = %e, request = %call.what(), "gateway error; retrying")
                    }
                }
                if let Some(hook) = &self.on_retry {
                    hook(e, pause);
                }
            })
            .await
    }

    /// Sends `call` and reads the answer as `T`.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        call: Call,
    ) -> Result<T, ClientError> {
        let what = call.what();
        let answer = self.send(call).await?;
        serde_json::from_slice(&answer.body).map_err(|e| ClientError::decode(what, e))
    }
}
