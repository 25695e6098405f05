//! A round-robin TCP balancer for gateway replicas, shared by the system tests and the fleet
//! benchmark.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

/// A round-robin TCP balancer in front of gateway replicas, as a cloud load balancer or a
/// Kubernetes Service is: each connection goes to the next replica that accepts it, so a
/// killed replica's clients reconnect to the others.
pub struct Balancer {
    pub port: u16,
    accept: tokio::task::JoinHandle<()>,
}

impl Balancer {
    pub async fn start(replicas: Vec<u16>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let next = Arc::new(AtomicUsize::new(0));
        let accept = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let (replicas, next) = (replicas.clone(), next.clone());
                tokio::spawn(async move {
                    for _ in 0..replicas.len() {
                        let i = next.fetch_add(1, Ordering::Relaxed) % replicas.len();
                        let to = tokio::net::TcpStream::connect(("127.0.0.1", replicas[i])).await;
                        if let Ok(mut outbound) = to {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Self { port, accept }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
