//! RDP accountant against reference values.
//!
//! `tests/data/accountant_reference.json` was produced with dp-accounting 0.6.0, opacus 1.6.0
//! (its numpy/scipy-only `accountants/analysis/rdp.py`) and mpmath 1.4.1; its `note` field says
//! exactly which function produced which field. Fractional orders: Opacus sums the MTZ19 series
//! with signs (exact, confirmed by mpmath integration), dp-accounting 0.6 sums absolute values
//! (an upper bound), so we match Opacus and mpmath and never exceed dp-accounting.

use fl_engine::dp::{
    default_orders, rdp_sampled_gaussian, sigma_for_target_epsilon, DpError, RdpAccountant,
    RdpConversion, SampledGaussian,
};
use serde_json::Value;

fn reference() -> Value {
    let text = include_str!("data/accountant_reference.json");
    serde_json::from_str(text).expect("reference JSON parses")
}

fn f(v: &Value) -> f64 {
    // null encodes +infinity in the reference file.
    v.as_f64().unwrap_or(f64::INFINITY)
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(f).collect()
}

fn rel_err(got: f64, want: f64) -> f64 {
    if got == want {
        0.0
    } else {
        (got - want).abs() / want.abs()
    }
}

#[test]
fn reference_orders_are_the_default_grid() {
    assert_eq!(floats(&reference()["orders"]), default_orders());
}

#[test]
fn rdp_matches_opacus_at_every_order_and_never_exceeds_dp_accounting() {
    let r = reference();
    let orders = floats(&r["orders"]);
    let mut worst: f64 = 0.0;
    for row in r["rdp_single_step"].as_array().unwrap() {
        let (q, sigma) = (f(&row["q"]), f(&row["sigma"]));
        let ours = rdp_sampled_gaussian(q, sigma, &orders).unwrap();
        let opacus = floats(&row["rdp_opacus"]);
        let dpa = floats(&row["rdp_dp_accounting"]);
        for (k, &a) in orders.iter().enumerate() {
            let e = rel_err(ours[k], opacus[k]);
            worst = worst.max(e);
            assert!(
                e < 1e-8,
                "q={q} sigma={sigma} alpha={a}: {} vs {}",
                ours[k],
                opacus[k]
            );
            if a.fract() == 0.0 || q == 1.0 {
                assert!(rel_err(ours[k], dpa[k]) < 1e-8, "integer order {a}");
            } else {
                assert!(ours[k] <= dpa[k] * (1.0 + 1e-12), "fractional order {a}");
            }
        }
    }
    assert!(worst < 1e-8, "worst relative error {worst}");
}

#[test]
fn rdp_matches_independent_mpmath_values() {
    for row in reference()["mpmath_rdp"].as_array().unwrap() {
        let (q, sigma, a) = (f(&row["q"]), f(&row["sigma"]), f(&row["order"]));
        let ours = rdp_sampled_gaussian(q, sigma, &[a]).unwrap()[0];
        let want = f(&row["rdp"]);
        assert!(
            rel_err(ours, want) < 1e-6,
            "q={q} sigma={sigma} alpha={a}: {ours} vs {want}"
        );
    }
}

fn epsilon_for(q: f64, sigma: f64, steps: u64, delta: f64, conv: RdpConversion) -> (f64, f64) {
    let acc = RdpAccountant::with_orders(default_orders(), conv).unwrap();
    let step = SampledGaussian::new(q, sigma, steps).unwrap();
    let spent = acc.epsilon_after(&step, delta).unwrap();
    (spent.epsilon, spent.order)
}

#[test]
fn epsilon_grid_matches_both_conversions() {
    for row in reference()["epsilon"].as_array().unwrap() {
        let (q, sigma, delta) = (f(&row["q"]), f(&row["sigma"]), f(&row["delta"]));
        let steps = row["steps"].as_u64().unwrap();
        for (conv, key) in [
            (RdpConversion::Improved, "improved"),
            (RdpConversion::Classic, "classic"),
        ] {
            let (eps, order) = epsilon_for(q, sigma, steps, delta, conv);
            let want = f(&row[format!("epsilon_{key}").as_str()]);
            let want_order = f(&row[format!("order_{key}").as_str()]);
            assert!(
                rel_err(eps, want) < 1e-4,
                "{key}: q={q} sigma={sigma} T={steps}: {eps} vs {want}"
            );
            assert_eq!(order, want_order, "{key}: q={q} sigma={sigma} T={steps}");
        }
        // dp-accounting's own accountant is looser at fractional orders, never tighter.
        let (eps, _) = epsilon_for(q, sigma, steps, delta, RdpConversion::Improved);
        let dpa = f(&row["epsilon_dp_accounting"]);
        assert!(eps <= dpa * (1.0 + 1e-9), "q={q} sigma={sigma} T={steps}");
        if q == 1.0 {
            assert!(rel_err(eps, dpa) < 1e-9);
        }
    }
}

#[test]
fn custom_order_grid_of_dp_accounting() {
    let r = reference();
    let orders = floats(&r["dp_accounting_default_orders"]);
    for row in r["dp_accounting_default_orders_cases"].as_array().unwrap() {
        let (q, sigma, delta) = (f(&row["q"]), f(&row["sigma"]), f(&row["delta"]));
        let steps = row["steps"].as_u64().unwrap();
        let acc = RdpAccountant::with_orders(orders.clone(), RdpConversion::Improved).unwrap();
        let spent = acc
            .epsilon_after(&SampledGaussian::new(q, sigma, steps).unwrap(), delta)
            .unwrap();
        let want = f(&row["epsilon_dp_accounting"]);
        assert!(
            spent.epsilon <= want * (1.0 + 1e-9),
            "{} > {want}",
            spent.epsilon
        );
        // Away from q = 1 the gap is the looser fractional-order bound; it stays small here.
        assert!(
            rel_err(spent.epsilon, want) < 2e-3,
            "{} vs {want}",
            spent.epsilon
        );
        if q == 1.0 {
            assert!(rel_err(spent.epsilon, want) < 1e-9);
            assert_eq!(spent.order, f(&row["order"]));
        }
    }
}

/// FL-EHDS Table V (σ = 1, δ = 1e-5, q = 1): ≈ 42, 98 and 173 after 30, 100 and 200 rounds.
/// Those figures are the classic conversion on orders ≥ 1.5 (order 1.25 would give 171.05 at
/// 200 rounds); the improved conversion gives 40.0 / 96.1 / 168.6 on the default grid.
#[test]
fn fl_ehds_table_v() {
    let orders: Vec<f64> = default_orders().into_iter().filter(|&a| a >= 1.5).collect();
    let classic = RdpAccountant::with_orders(orders, RdpConversion::Classic).unwrap();
    for (rounds, paper) in [(30u64, 42.0), (100, 98.0), (200, 173.0)] {
        let step = SampledGaussian::new(1.0, 1.0, rounds).unwrap();
        let eps = classic.epsilon_after(&step, 1e-5).unwrap().epsilon;
        assert!(
            (eps - paper).abs() < 0.6,
            "{rounds} rounds: {eps} vs {paper}"
        );
    }
    // Closed form for q = 1: RDP(α) = Tα/2, so at α = 1.5 and T = 200: 150 + 2 ln(1e5).
    let step = SampledGaussian::new(1.0, 1.0, 200).unwrap();
    let eps = classic.epsilon_after(&step, 1e-5).unwrap();
    assert!((eps.epsilon - (150.0 + 2.0 * 1e5f64.ln())).abs() < 1e-9);
    assert_eq!(eps.order, 1.5);
    let improved = RdpAccountant::new();
    let expect = [(30u64, 40.0), (100, 96.1), (200, 168.6)];
    for (rounds, want) in expect {
        let step = SampledGaussian::new(1.0, 1.0, rounds).unwrap();
        let eps = improved.epsilon_after(&step, 1e-5).unwrap().epsilon;
        assert!((eps - want).abs() < 0.1, "{rounds} rounds: {eps}");
    }
}

#[test]
fn spending_composes_and_epsilon_after_does_not_mutate() {
    let mut acc = RdpAccountant::new();
    let round = SampledGaussian::new(0.1, 1.2, 10).unwrap();
    let before = acc.clone();
    let predicted = acc.epsilon_after(&round, 1e-5).unwrap();
    assert_eq!(acc, before);
    assert_eq!(acc.epsilon(1e-5).unwrap().epsilon, 0.0);
    for _ in 0..3 {
        acc.spend(round).unwrap();
    }
    assert_eq!(
        acc.history(),
        &[SampledGaussian::new(0.1, 1.2, 30).unwrap()]
    );
    let once = RdpAccountant::new()
        .epsilon_after(&SampledGaussian::new(0.1, 1.2, 30).unwrap(), 1e-5)
        .unwrap();
    assert!(rel_err(acc.epsilon(1e-5).unwrap().epsilon, once.epsilon) < 1e-12);
    assert!(predicted.epsilon < once.epsilon);

    // A different mechanism adds a history entry and more epsilon.
    acc.spend(SampledGaussian::new(1.0, 3.0, 1).unwrap())
        .unwrap();
    assert_eq!(acc.history().len(), 2);
    assert!(acc.epsilon(1e-5).unwrap().epsilon > once.epsilon);
}

#[test]
fn try_spend_refuses_overspending_and_leaves_state_unchanged() {
    let mut acc = RdpAccountant::new();
    let round = SampledGaussian::new(1.0, 1.0, 1).unwrap();
    let budget = 10.0;
    let mut rounds = 0;
    loop {
        match acc.try_spend(round, 1e-5, budget) {
            Ok(spent) => {
                assert!(spent.epsilon <= budget);
                rounds += 1;
            }
            Err(DpError::BudgetExceeded {
                would_be,
                budget: b,
                ..
            }) => {
                assert!(would_be > b);
                break;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(rounds >= 1);
    let frozen = acc.clone();
    assert!(acc.try_spend(round, 1e-5, budget).is_err());
    assert_eq!(acc, frozen);
    assert_eq!(acc.history()[0].steps, rounds);
}

#[test]
fn serde_round_trip_recomputes_rdp_and_rejects_tampering() {
    let mut acc = RdpAccountant::with_orders(vec![2.0, 4.5, 32.0], RdpConversion::Classic).unwrap();
    acc.spend(SampledGaussian::new(0.05, 0.9, 100).unwrap())
        .unwrap();
    acc.spend(SampledGaussian::new(1.0, 4.0, 2).unwrap())
        .unwrap();
    let json = serde_json::to_string(&acc).unwrap();
    assert!(
        !json.contains("rdp"),
        "derived totals are not stored: {json}"
    );
    let back: RdpAccountant = serde_json::from_str(&json).unwrap();
    assert_eq!(back, acc);
    assert_eq!(back.conversion(), RdpConversion::Classic);

    let tampered = json.replace("0.05", "1.5");
    assert!(serde_json::from_str::<RdpAccountant>(&tampered).is_err());
    let bad_orders = json.replace("[2.0,", "[0.5,");
    assert!(serde_json::from_str::<RdpAccountant>(&bad_orders).is_err());
}

#[test]
fn sigma_for_target_inverts_epsilon() {
    let orders = default_orders();
    for (q, steps, target) in [(0.01, 1000u64, 1.0), (1.0, 50, 8.0), (0.1, 10, 3.0)] {
        for conv in [RdpConversion::Improved, RdpConversion::Classic] {
            let sigma = sigma_for_target_epsilon(target, q, steps, 1e-5, &orders, conv).unwrap();
            let (at, _) = epsilon_for(q, sigma, steps, 1e-5, conv);
            let (below, _) = epsilon_for(q, sigma * (1.0 - 1e-6), steps, 1e-5, conv);
            assert!(at <= target, "eps({sigma}) = {at} > {target}");
            assert!(below > target, "sigma {sigma} is not minimal");
        }
    }
    // Round trip through a reference point: σ = 1.1, q = 0.01, 1000 steps.
    let (eps, _) = epsilon_for(0.01, 1.1, 1000, 1e-5, RdpConversion::Improved);
    let sigma =
        sigma_for_target_epsilon(eps, 0.01, 1000, 1e-5, &orders, RdpConversion::Improved).unwrap();
    assert!(rel_err(sigma, 1.1) < 1e-6, "{sigma}");
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let invalid =
        |r: Result<SampledGaussian, DpError>| matches!(r, Err(DpError::InvalidParameter { .. }));
    assert!(invalid(SampledGaussian::new(0.0, 1.0, 1)));
    assert!(invalid(SampledGaussian::new(1.5, 1.0, 1)));
    assert!(invalid(SampledGaussian::new(f64::NAN, 1.0, 1)));
    assert!(invalid(SampledGaussian::new(0.5, 0.0, 1)));
    assert!(invalid(SampledGaussian::new(0.5, -1.0, 1)));
    assert!(invalid(SampledGaussian::new(0.5, f64::INFINITY, 1)));
    assert!(invalid(SampledGaussian::new(0.5, 1.0, 0)));

    let acc = RdpAccountant::new();
    let ok = SampledGaussian::new(0.5, 1.0, 1).unwrap();
    for delta in [0.0, 1.0, -1e-5, f64::NAN] {
        assert!(matches!(
            acc.epsilon_after(&ok, delta),
            Err(DpError::InvalidParameter { name: "delta", .. })
        ));
    }
    // A hand-built step bypassing the constructor is still validated.
    let sneaky = SampledGaussian {
        sampling_rate: 0.5,
        noise_multiplier: f64::NAN,
        steps: 1,
    };
    assert!(acc.epsilon_after(&sneaky, 1e-5).is_err());
    assert!(RdpAccountant::new().spend(sneaky).is_err());
    assert!(RdpAccountant::with_orders(vec![], RdpConversion::Improved).is_err());
    assert!(RdpAccountant::with_orders(vec![1.0], RdpConversion::Improved).is_err());

    let orders = default_orders();
    let conv = RdpConversion::Improved;
    for target in [0.0, -1.0, f64::NAN] {
        assert!(matches!(
            sigma_for_target_epsilon(target, 0.1, 10, 1e-5, &orders, conv),
            Err(DpError::InvalidParameter { .. })
        ));
    }
    assert!(matches!(
        sigma_for_target_epsilon(1e-6, 1.0, 1000, 1e-5, &orders, conv),
        Err(DpError::TargetUnreachable { .. })
    ));
    assert!(RdpAccountant::new().try_spend(ok, 1e-5, 0.0).is_err());
}
