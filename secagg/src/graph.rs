//! The SecAgg+ communication graph (Bell et al. 2020): nodes placed on a ring in an order
//! drawn from the public graph seed, each joined to the `k/2` nearest nodes on either side
//! (the Harary graph `H_{k,n}`). With `k = n - 1` it is the complete graph of Bonawitz et al.
//! Everyone derives the same graph from the configuration, so the server cannot choose a
//! node's neighbours.

use std::collections::BTreeSet;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use crate::config::{ClientId, RoundConfig};

#[derive(Debug, Clone)]
pub struct Graph {
    n: u32,
    degree: u32,
    /// `order[p]` is the node at ring position `p`.
    order: Vec<u32>,
    /// `position[id - 1]` is the ring position of node `id`.
    position: Vec<u32>,
}

impl Graph {
    pub fn new(config: &RoundConfig) -> Self {
        let n = config.clients;
        let mut order: Vec<u32> = (1..=n).collect();
        let mut rng = ChaCha20Rng::from_seed(config.graph_seed);
        // Fisher-Yates with rejection sampling, so the order is uniform.
        for i in (1..order.len()).rev() {
            let j = uniform_below(&mut rng, i as u64 + 1) as usize;
            order.swap(i, j);
        }
        let mut position = vec![0; n as usize];
        for (p, &id) in order.iter().enumerate() {
            position[id as usize - 1] = p as u32;
        }
        Self {
            n,
            degree: config.degree,
            order,
            position,
        }
    }

    pub fn is_complete(&self) -> bool {
        self.degree == self.n - 1
    }

    /// The neighbours of `id`, in id order; `id` itself is not among them.
    pub fn neighbours(&self, id: ClientId) -> BTreeSet<ClientId> {
        if self.is_complete() {
            return (1..=self.n).filter(|&v| v != id.0).map(ClientId).collect();
        }
        let p = self.position[id.0 as usize - 1] as u64;
        let n = self.n as u64;
        let half = (self.degree / 2) as u64;
        (1..=half)
            .flat_map(|d| [(p + d) % n, (p + n - d) % n])
            .map(|q| ClientId(self.order[q as usize]))
            .collect()
    }

    pub fn are_neighbours(&self, a: ClientId, b: ClientId) -> bool {
        if a == b {
            return false;
        }
        if self.is_complete() {
            return true;
        }
        let n = self.n as u64;
        let (pa, pb) = (
            self.position[a.0 as usize - 1] as u64,
            self.position[b.0 as usize - 1] as u64,
        );
        let d = (pa + n - pb) % n;
        d.min(n - d) <= (self.degree / 2) as u64
    }
}

/// Uniform integer in `0..bound` by rejection, no modulo bias.
pub(crate) fn uniform_below<R: Rng + ?Sized>(rng: &mut R, bound: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % bound);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SessionId;

    fn config(n: u32, k: u32) -> RoundConfig {
        RoundConfig {
            session: SessionId([0; 32]),
            clients: n,
            threshold: k / 2 + 1,
            degree: k,
            graph_seed: [9; 32],
            vector_len: 1,
            modulus_bits: 32,
        }
    }

    #[test]
    fn harary_graph_is_k_regular_and_symmetric() {
        for (n, k) in [(10, 4), (11, 6), (100, 14), (1000, 20)] {
            let g = Graph::new(&config(n, k));
            for a in 1..=n {
                let na = g.neighbours(ClientId(a));
                assert_eq!(na.len(), k as usize, "n={n} k={k} node {a}");
                for b in &na {
                    assert!(g.neighbours(*b).contains(&ClientId(a)));
                    assert!(g.are_neighbours(ClientId(a), *b));
                }
                let others = (1..=n).filter(|&b| b != a && !na.contains(&ClientId(b)));
                for b in others {
                    assert!(!g.are_neighbours(ClientId(a), ClientId(b)));
                }
            }
        }
    }

    #[test]
    fn the_seed_decides_the_placement() {
        let a = Graph::new(&config(50, 6));
        let mut c = config(50, 6);
        c.graph_seed = [10; 32];
        let b = Graph::new(&c);
        assert_ne!(a.order, b.order);
        assert_eq!(a.order, Graph::new(&config(50, 6)).order);
    }

    #[test]
    fn complete_graph_joins_everyone() {
        let g = Graph::new(&config(7, 6));
        assert_eq!(g.neighbours(ClientId(3)).len(), 6);
        assert!(!g.neighbours(ClientId(3)).contains(&ClientId(3)));
    }
}
