//! Cost of one secure-aggregation round, per node and at the server, against plain summation
//! of the same vectors in the same run.
//!
//! `cargo bench -p secagg --bench secagg -- [--cases 10x10000,100x1000000,…] [--drop 0.1]`
//! Each case is `nodes x entries[/degree]`; without a degree the graph is complete below 100
//! nodes and SecAgg+ (degree 2⌈log2 n⌉) from 100 on. Nodes run one after another on this
//! thread, so "per node" is the mean over nodes of the time inside that node's calls.

use std::time::{Duration, Instant};

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use secagg::ddg::mechanism::{DdgParams, DdgPlan};
use secagg::{Client, ClientId, MaskedSum, RoundConfig, Server, SessionId};

struct Case {
    n: u32,
    len: usize,
    degree: u32,
}

fn parse_case(s: &str) -> Case {
    let (n, rest) = s.split_once('x').expect("case is NODESxENTRIES[/DEGREE]");
    let n: u32 = n.parse().unwrap();
    let (len, degree) = match rest.split_once('/') {
        Some((l, d)) => (l.parse().unwrap(), d.parse().unwrap()),
        None => {
            let d = if n < 100 {
                n - 1
            } else {
                2 * (32 - (n - 1).leading_zeros())
            };
            (rest.parse().unwrap(), d)
        }
    };
    Case { n, len, degree }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run(case: &Case, drop: f64) {
    let bits = 32;
    let cfg = RoundConfig {
        session: SessionId([1; 32]),
        clients: case.n,
        threshold: case.degree / 2 + 1,
        degree: case.degree,
        graph_seed: [2; 32],
        vector_len: case.len,
        modulus_bits: bits,
    };
    let mask = cfg.ring_mask();
    // Inputs are regenerated from a per-node seed instead of held: 1,000 × 1M entries would
    // need 8 GB.
    let input = |i: u32| -> Vec<u64> {
        let mut r = ChaCha20Rng::seed_from_u64(i as u64);
        (0..case.len).map(|_| r.next_u64() & mask).collect()
    };
    // Nodes that drop after ShareKeys: the costliest dropout for the server.
    let dropped = |i: u32| (i as f64) <= drop * case.n as f64;

    let mut clients: Vec<Client> = (1..=case.n)
        .map(|i| {
            Client::new(
                cfg.clone(),
                ClientId(i),
                ChaCha20Rng::seed_from_u64(1_000_000 + i as u64),
            )
            .unwrap()
        })
        .collect();
    let mut server = Server::new(cfg.clone()).unwrap();
    let mut sum = MaskedSum::zero(&cfg);
    let mut node = vec![Duration::ZERO; case.n as usize];
    let mut srv = Duration::ZERO;
    let timed = |acc: &mut Duration, f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        *acc += t.elapsed();
    };

    for (i, c) in clients.iter_mut().enumerate() {
        let mut m = None;
        timed(&mut node[i], &mut || m = Some(c.advertise_keys().unwrap()));
        timed(&mut srv, &mut || {
            server.receive_advertise(m.take().unwrap()).unwrap()
        });
    }
    let mut keys = None;
    timed(&mut srv, &mut || {
        keys = Some(server.close_advertise().unwrap())
    });
    // the ShareKeys messages and Unmasking answers, which a relay keeps beside the server
    let mut shared = Vec::new();
    let mut answers = Vec::new();
    for m in keys.unwrap() {
        let i = m.to.0 as usize - 1;
        let mut out = None;
        timed(&mut node[i], &mut || {
            out = Some(clients[i].share_keys(&m).unwrap())
        });
        let msg = out.take().unwrap();
        timed(&mut srv, &mut || server.receive_share_keys(&msg).unwrap());
        shared.push(msg);
    }
    let mut relays = None;
    timed(&mut srv, &mut || {
        relays = Some(
            server
                .close_share_keys(std::mem::take(&mut shared))
                .unwrap(),
        )
    });
    for m in relays.unwrap() {
        if dropped(m.to.0) {
            continue;
        }
        let i = m.to.0 as usize - 1;
        let x = input(m.to.0);
        let mut out = None;
        timed(&mut node[i], &mut || {
            out = Some(clients[i].masked_input(&m, &x).unwrap())
        });
        timed(&mut srv, &mut || {
            server
                .receive_masked_input(&out.take().unwrap(), &mut sum)
                .unwrap()
        });
    }
    let mut reqs = None;
    timed(&mut srv, &mut || {
        reqs = Some(server.close_masked_input().unwrap())
    });
    for m in reqs.unwrap() {
        let i = m.to.0 as usize - 1;
        let mut out = None;
        timed(&mut node[i], &mut || {
            out = Some(clients[i].unmask(&m).unwrap())
        });
        let msg = out.take().unwrap();
        timed(&mut srv, &mut || server.receive_unmask(&msg).unwrap());
        answers.push(msg);
    }
    let mut agg = None;
    timed(&mut srv, &mut || {
        agg = Some(
            server
                .finish(
                    std::mem::replace(&mut sum, MaskedSum::zero(&cfg)),
                    std::mem::take(&mut answers),
                )
                .unwrap(),
        )
    });
    let agg = agg.unwrap();

    // Baseline in the same run: the server adds the same vectors as they arrive, in the ring
    // and as f32 (what a plain FedAvg sum does).
    let (mut plain_ring, mut plain_f32) = (Duration::ZERO, Duration::ZERO);
    let mut ring = vec![0u64; case.len];
    let mut floats = vec![0f32; case.len];
    for id in &agg.contributors {
        let x = input(id.0);
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        timed(&mut plain_ring, &mut || {
            for (a, v) in ring.iter_mut().zip(&x) {
                *a = a.wrapping_add(*v) & mask;
            }
        });
        timed(&mut plain_f32, &mut || {
            for (a, v) in floats.iter_mut().zip(&xf) {
                *a += v;
            }
        });
    }
    assert_eq!(ring, agg.sum, "secure sum differs from the plain sum");

    let active: Vec<f64> = (1..=case.n)
        .filter(|i| !dropped(*i))
        .map(|i| ms(node[i as usize - 1]))
        .collect();
    let per_node = active.iter().sum::<f64>() / active.len() as f64;
    let worst = active.iter().cloned().fold(0.0, f64::max);
    println!(
        "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
        case.n,
        case.len,
        case.degree,
        case.n - agg.contributors.len() as u32,
        per_node,
        worst,
        ms(srv),
        ms(plain_ring),
        ms(plain_f32),
        ms(srv) / ms(plain_f32).max(1e-6),
    );
}

fn ddg_encode(len: usize) {
    let plan = DdgPlan::new(DdgParams {
        dim: len,
        clip: 1.0,
        central_stddev: 0.5,
        min_survivors: 80,
        max_clients: 100,
        modulus_bits: 24,
        k_stddevs: 4.0,
        beta: (-0.5f64).exp(),
        rotation_seed: [3; 32],
    })
    .unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let update: Vec<f32> = (0..len)
        .map(|_| (rng.next_u32() as f32 / u32::MAX as f32) - 0.5)
        .collect();
    let t = Instant::now();
    let enc = plan.encode(&update, &mut rng).unwrap();
    let e = t.elapsed();
    let t = Instant::now();
    let dec = plan.decode(&enc).unwrap();
    let d = t.elapsed();
    assert_eq!(dec.len(), len);
    println!(
        "| DDG encode (node) | {len} | {:.1} ms | decode (server) {:.1} ms |",
        ms(e),
        ms(d)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .map(|i| args[i + 1].clone())
    };
    let cases = get("--cases")
        .unwrap_or_else(|| "10x10000,100x10000,1000x10000,10x1000000,100x1000000".into());
    let drop: f64 = get("--drop").map_or(0.0, |d| d.parse().unwrap());
    println!("dropout after ShareKeys: {:.0} %", drop * 100.0);
    println!("| nodes | entries | degree | dropped | per node ms | slowest node ms | server ms | plain ring sum ms | plain f32 sum ms | server / plain f32 |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in cases.split(',') {
        run(&parse_case(c), drop);
    }
    if args.iter().any(|a| a == "--ddg") {
        for len in [10_000, 1_000_000] {
            ddg_encode(len);
        }
    }
}
