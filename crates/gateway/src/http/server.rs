//! The connection layer under the router: how many connections are served at once, how long a
//! client may take to send a request head or keep an idle connection open, and how large a head
//! may be. axum's own `serve` exposes none of these, so connections are driven by hyper directly.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{extract::ConnectInfo, Router};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::ServiceExt;

use crate::configuration::HttpSettings;

/// Smallest read buffer hyper accepts.
const MIN_READ_BUFFER: usize = 8192;

/// How much larger than the documented head limit hyper's own read buffer is: heads between
/// the two are refused by the router with a problem document (431); heads beyond the buffer
/// (and heads of more than 100 fields) are refused by hyper itself, whose answer
/// [`ProblemAnswers`] rewrites into the same problem document.
const READ_BUFFER_FACTOR: usize = 4;

/// Serves `app` on `listener` until `shutdown` resolves, then lets open requests finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    http: &HttpSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(http.header_read_timeout_seconds.max(1)))
        .max_buf_size((http.max_header_bytes * READ_BUFFER_FACTOR).max(MIN_READ_BUFFER))
        .max_headers(100);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(http.max_header_bytes).unwrap_or(u32::MAX))
        .max_concurrent_streams(64)
        .keep_alive_interval(Duration::from_secs(http.header_read_timeout_seconds.max(1)))
        .keep_alive_timeout(Duration::from_secs(http.header_read_timeout_seconds.max(1)));
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(http.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);

    loop {
        // Wait for a free slot before accepting: beyond the limit clients queue in the backlog
        // instead of using up the process's file descriptors.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot?,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: back off briefly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone().map_request(
            move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                req.map(axum::body::Body::new)
            },
        ));
        let builder = builder.clone();
        let first_bytes = Duration::from_secs(http.header_read_timeout_seconds.max(1));
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            // The protocol detection below waits for the first bytes without a timer of its
            // own: a client that connects and sends nothing is dropped here.
            let mut first = [0u8; 1];
            if !matches!(
                tokio::time::timeout(first_bytes, stream.peek(&mut first)).await,
                Ok(Ok(1..))
            ) {
                drop(slot);
                return;
            }
            let connection = builder
                .serve_connection_with_upgrades(TokioIo::new(ProblemAnswers::new(stream)), service)
                .into_owned();
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!(error = %e, %peer, "connection closed with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    // Open requests may finish; the request timeout bounds how long that takes.
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_secs(30)) => {
            tracing::warn!("connections still open after 30 s at shutdown");
        }
    }
    Ok(())
}

/// A connection whose HTTP/1 answers hyper writes by itself, without the router, are problem
/// documents like every other refusal. Hyper answers a request head it cannot parse (400), one
/// whose target is too long (414) and one too large for its read buffer or with too many fields
/// (431) with an empty body, then closes the connection; this rewrites those answers, which
/// hyper writes whole in one write (vectored writes are turned off here), as the router's
/// problem documents with `Connection: close`.
struct ProblemAnswers<S> {
    inner: S,
    /// The rewritten answer being written in place of hyper's, and how much of it is written.
    replacing: Option<(Vec<u8>, usize)>,
}

impl<S> ProblemAnswers<S> {
    fn new(inner: S) -> Self {
        Self {
            inner,
            replacing: None,
        }
    }
}

/// The problem document for an answer hyper wrote by itself (`head`), or `None` for any other
/// write. Hyper's own answers are a status line, `content-length: 0` and at most `connection`
/// and `date` fields; the router's always carry a body.
fn rewrite_automatic_answer(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ")?;
    let fields = rest.strip_suffix("\r\n\r\n")?;
    let mut lines = fields.split("\r\n");
    let status: u16 = lines.next()?.get(..3)?.parse().ok()?;
    let (code, detail) = match status {
        400 => (
            "malformed_request",
            "the request head is not valid HTTP/1.1",
        ),
        414 => ("uri_too_long", "the request target is too long"),
        431 => (
            "header_too_large",
            "the request head is larger, or has more fields, than the gateway reads",
        ),
        _ => return None,
    };
    let mut empty = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" if value.trim() == "0" => empty = true,
            "date" | "connection" => {}
            _ => return None,
        }
    }
    if !empty {
        return None;
    }
    let status = axum::http::StatusCode::from_u16(status).ok()?;
    let reason = status.canonical_reason().unwrap_or("");
    let body =
        serde_json::Value::Object(super::error::problem_body(status, code, detail)).to_string();
    let status = status.as_u16();
    Some(
        format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/problem+json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ProblemAnswers<S> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for ProblemAnswers<S> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use std::task::Poll;
        let this = self.get_mut();
        if this.replacing.is_none() {
            match rewrite_automatic_answer(buf) {
                Some(answer) => this.replacing = Some((answer, 0)),
                None => return std::pin::Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        // hyper calls again with the same bytes until they count as written
        let (answer, written) = this.replacing.as_mut().expect("set above");
        while *written < answer.len() {
            match std::pin::Pin::new(&mut this.inner).poll_write(cx, &answer[*written..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()))
                }
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        this.replacing = None;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    // one contiguous write per answer, so that hyper's own answers are seen whole
    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite_automatic_answer;

    #[test]
    fn hypers_own_answers_become_problem_documents() {
        // as hyper 1.x writes it
        let hyper_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Sun, 29 Nov 2026 16:52:11 GMT\r\n\r\n";
        let answer = String::from_utf8(rewrite_automatic_answer(hyper_431).unwrap()).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("content-type: application/problem+json"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["code"], "header_too_large");
        assert_eq!(problem["status"], 431);
        let hyper_400 = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        assert!(rewrite_automatic_answer(hyper_400).is_some());
    }

    #[test]
    fn the_routers_answers_pass_unchanged() {
        // a problem document of the router, a success, and a body write
        for write in [
            &b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/problem+json\r\ncontent-length: 80\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nx-request-id: 1\r\n\r\n",
            b"{\"status\":431}",
        ] {
            assert!(rewrite_automatic_answer(write).is_none());
        }
    }
}
