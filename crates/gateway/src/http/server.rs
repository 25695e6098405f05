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
/// the two are refused by the router with a problem document (431), only heads beyond the
/// buffer get hyper's bare 431.
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
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
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
