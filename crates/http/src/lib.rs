//! ehds-http: the HTTP client set-up the gateway (`ehds-gateway`) and the node agent
//! (`ehds-node`) share without depending on each other: one TLS configuration for every client
//! ([`builder`]) and the client that OpenID Connect discovery, key-set and token requests run on
//! ([`OidcClient`]).
#![forbid(unsafe_code)]

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use openidconnect::{AsyncHttpClient, HttpClientError, HttpRequest, HttpResponse};

/// A reqwest client builder with the shared TLS configuration: rustls over ring, trusting the
/// Mozilla root list bundled in `webpki-roots` (not the host's trust store), TLS 1.2 and 1.3.
#[allow(clippy::disallowed_methods)] // the one place a client builder starts
pub fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(tls_config())
}

fn tls_config() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring offers TLS 1.2 and 1.3")
    .with_root_certificates(roots)
    .with_no_client_auth();
    // reqwest offers ALPN itself only on configurations it builds; the clients speak HTTP/1.1
    // (reqwest is built without HTTP/2).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// The HTTP client of OpenID Connect requests (discovery documents, key sets, tokens). It never
/// follows redirects, as openidconnect requires of its clients: a discovery document that
/// redirects could otherwise send the caller, and a client secret, anywhere (SSRF).
#[derive(Clone)]
pub struct OidcClient(reqwest::Client);

impl OidcClient {
    /// A client whose every request ends within `timeout`.
    pub fn new(timeout: Duration) -> reqwest::Result<Self> {
        builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map(Self)
    }
}

impl<'c> AsyncHttpClient<'c> for OidcClient {
    type Error = HttpClientError<reqwest::Error>;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, Self::Error>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let response = self
                .0
                .execute(request.try_into().map_err(Box::new)?)
                .await
                .map_err(Box::new)?;
            let mut answer = openidconnect::http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let body = response.bytes().await.map_err(Box::new)?;
            answer.body(body.to_vec()).map_err(HttpClientError::Http)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A redirect reaches openidconnect as the answer, which it refuses; the client does not go
    /// where the redirect points.
    #[tokio::test]
    async fn the_oidc_client_follows_no_redirect() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 2048];
            let _ = stream.read(&mut request).await;
            stream
                .write_all(
                    b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await
                .unwrap();
        });
        let client = OidcClient::new(Duration::from_secs(5)).unwrap();
        let request = openidconnect::http::Request::get(format!(
            "http://{addr}/.well-known/openid-configuration"
        ))
        .body(Vec::new())
        .unwrap();
        let answer = client.call(request).await.unwrap();
        assert_eq!(answer.status(), 302);
        assert_eq!(answer.headers()["location"], "http://169.254.169.254/");
    }
}
