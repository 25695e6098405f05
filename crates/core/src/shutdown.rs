//! The end of a program's run: the operator's interrupt or the service manager's SIGTERM, which
//! the gateway answers with a graceful shutdown and the node agent by stopping where it next
//! waits (a task it had not answered stays open at the gateway until its deadline, and the
//! restarted agent fetches it again).

/// Resolves on Ctrl-C or, on Unix, SIGTERM (what `docker stop` and Kubernetes send).
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
    tracing::info!("shutting down");
}
