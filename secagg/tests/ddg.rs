//! The distributed discrete Gaussian end to end: noise of the aggregate, and a secure
//! aggregation round carrying DP-encoded updates.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use secagg::ddg::accounting;
use secagg::ddg::mechanism::{DdgParams, DdgPlan};
use secagg::{Client, ClientId, MaskedSum, RoundConfig, Server, SessionId};

fn params(dim: usize, n: u32, bits: u32) -> DdgParams {
    DdgParams {
        dim,
        clip: 1.0,
        central_stddev: 0.2,
        min_survivors: n,
        max_clients: n,
        modulus_bits: bits,
        k_stddevs: 4.0,
        beta: (-0.5f64).exp(),
        rotation_seed: [11; 32],
    }
}

fn ring_sum(parts: &[Vec<u64>], bits: u32) -> Vec<u64> {
    let mask = (1u64 << bits) - 1;
    let mut s = vec![0u64; parts[0].len()];
    for p in parts {
        for (a, x) in s.iter_mut().zip(p) {
            *a = a.wrapping_add(*x) & mask;
        }
    }
    s
}

fn variance(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = xs.clone().count() as f64;
    let mean = xs.clone().sum::<f64>() / n;
    xs.map(|x| (x - mean).powi(2)).sum::<f64>() / n
}

#[test]
fn the_sum_of_the_survivors_carries_the_planned_noise() {
    // 16 nodes whose updates are all zero: what the sum holds is exactly their noise.
    let (n, dim, bits) = (16, 4096, 24);
    let plan = DdgPlan::new(params(dim, n, bits)).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let parts: Vec<Vec<u64>> = (0..n)
        .map(|_| plan.encode(&vec![0.0; dim], &mut rng).unwrap())
        .collect();
    let sum = ring_sum(&parts, bits);

    // In ring units: n·σ²_node, exactly as planned. 4,096 entries: the estimate's relative
    // sd is √(2/4096) = 2.2 %; allow 10 %.
    let want = n as f64 * plan.node_variance.value();
    let got = variance(plan.lift(&sum).into_iter().map(|v| v as f64));
    assert!(
        (got / want - 1.0).abs() < 0.10,
        "ring variance {got}, planned {want}"
    );

    // In model units after the inverse rotation: the planned central variance σ² = 0.04.
    let decoded = plan.decode(&sum).unwrap();
    let got = variance(decoded.iter().map(|&v| v as f64));
    let want = plan.central_variance(n);
    assert!((want / 0.04 - 1.0).abs() < 1e-3, "plan {want}");
    assert!(
        (got / want - 1.0).abs() < 0.10,
        "model variance {got}, planned {want}"
    );

    // Half the nodes: half the noise — which is why such a round must be discarded.
    let half = ring_sum(&parts[..8], bits);
    let got = variance(plan.lift(&half).into_iter().map(|v| v as f64));
    assert!((got / (8.0 * plan.node_variance.value()) - 1.0).abs() < 0.10);
    assert!(plan.check_survivors(8).is_err());
}

#[test]
fn a_secure_aggregation_round_of_dp_encoded_updates_decodes_to_the_noisy_sum() {
    let (n, dim, bits) = (8u32, 1000usize, 24u32);
    let plan = DdgPlan::new(params(dim, n, bits)).unwrap();
    let cfg = RoundConfig {
        session: SessionId([2; 32]),
        clients: n,
        threshold: 5,
        degree: n - 1,
        graph_seed: [4; 32],
        vector_len: plan.padded_dim,
        modulus_bits: bits,
    };
    let mut data = ChaCha20Rng::seed_from_u64(9);
    // Updates of norm about 0.6, under the clip of 1.
    let updates: Vec<Vec<f32>> = (0..n)
        .map(|_| {
            (0..dim)
                .map(|_| ((data.next_u32() as f32 / u32::MAX as f32) - 0.5) * 0.066)
                .collect()
        })
        .collect();
    let mut clients: Vec<Client> = (1..=n)
        .map(|i| {
            Client::new(
                cfg.clone(),
                ClientId(i),
                ChaCha20Rng::seed_from_u64(i as u64),
            )
            .unwrap()
        })
        .collect();
    let mut server = Server::new(cfg.clone()).unwrap();
    for c in clients.iter_mut() {
        server
            .receive_advertise(c.advertise_keys().unwrap())
            .unwrap();
    }
    let mut shared = Vec::new();
    for m in server.close_advertise().unwrap() {
        let c = &mut clients[m.to.0 as usize - 1];
        let msg = c.share_keys(&m).unwrap();
        server.receive_share_keys(&msg).unwrap();
        shared.push(msg);
    }
    let mut noise_rng = ChaCha20Rng::seed_from_u64(77);
    let mut sum = MaskedSum::zero(server.config());
    for m in server.close_share_keys(shared).unwrap() {
        let i = m.to.0 as usize - 1;
        let encoded = plan.encode(&updates[i], &mut noise_rng).unwrap();
        server
            .receive_masked_input(&clients[i].masked_input(&m, &encoded).unwrap(), &mut sum)
            .unwrap();
    }
    let mut answers = Vec::new();
    for m in server.close_masked_input().unwrap() {
        let c = &mut clients[m.to.0 as usize - 1];
        let msg = c.unmask(&m).unwrap();
        server.receive_unmask(&msg).unwrap();
        answers.push(msg);
    }
    let agg = server.finish(sum, answers).unwrap();
    plan.check_survivors(agg.contributors.len()).unwrap();
    let decoded = plan.decode(&agg.sum).unwrap();

    let truth: Vec<f64> = (0..dim)
        .map(|j| updates.iter().map(|u| u[j] as f64).sum())
        .collect();
    let mse = decoded
        .iter()
        .zip(&truth)
        .map(|(d, t)| (*d as f64 - t).powi(2))
        .sum::<f64>()
        / dim as f64;
    // Error = planned noise (0.04) + randomized rounding (at most n·γ²/4, tiny here).
    let expected = plan.central_variance(n) + n as f64 * plan.gamma.powi(2) / 4.0;
    assert!(
        (mse / expected - 1.0).abs() < 0.15,
        "mse {mse}, expected {expected}"
    );

    let spent = accounting::epsilon(&plan, 1, 1e-5).unwrap();
    assert!(spent.epsilon.is_finite() && spent.epsilon > 0.0);
}
