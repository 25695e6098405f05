//! The cost of answering a statistics request (docs/data-requests.md):
//! - node: one holder's partial over its table, per row, for growing tables (work must be
//!   linear in rows: the per-row cost stays flat);
//! - gateway: for 4 and for 100 holders, parsing the holders' partials from their JSON bodies,
//!   pooling, output checking, the differencing check against 20 earlier answers, and central
//!   noise, for each kind of statistic; the ratio 100 / 4 holders in the same run.
//!
//! `cargo bench -p ehds-stats --bench federated_statistics`
use std::time::Instant;

use ehds_stats::{
    check, combine, differencing, partial, privatize, Partial, Query, QueryForm, Rules, Table,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn query(json: serde_json::Value) -> Query {
    let form: QueryForm = serde_json::from_value(json).unwrap();
    Query::parse(form, &Default::default()).unwrap()
}

/// A holder's table: age, sex, a label, a follow-up time and an event.
fn table(rows: usize, seed: u64) -> Table {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let data = (0..rows)
        .map(|_| {
            let age: f64 = rng.random_range(25.0..85.0);
            let sex = f64::from(rng.random_bool(0.6) as u8);
            let label = f64::from(rng.random_bool(0.45) as u8);
            let time: f64 = rng.random_range(1.0..3650.0);
            let event = f64::from(rng.random_bool(0.3) as u8);
            vec![age, sex, label, time, event]
        })
        .collect();
    Table::new(
        ["age", "sex", "label", "days", "event"]
            .map(String::from)
            .to_vec(),
        data,
    )
    .unwrap()
}

fn queries() -> Vec<(&'static str, Query)> {
    vec![
        (
            "count 2x2",
            query(serde_json::json!({"statistic": "count", "group_by": [
                {"column": "sex", "levels": [0, 1]}, {"column": "label", "levels": [0, 1]}]})),
        ),
        (
            "mean by label",
            query(serde_json::json!({"statistic": "mean", "variable": "age",
                "bounds": {"lo": 0, "hi": 120}, "group_by": [{"column": "label", "levels": [0, 1]}]})),
        ),
        (
            "histogram 20 bins",
            query(
                serde_json::json!({"statistic": "histogram", "variable": "age",
                "edges": (0..=20).map(|i| 25.0 + 3.0 * f64::from(i)).collect::<Vec<_>>()}),
            ),
        ),
        (
            "Kaplan-Meier 10 points",
            query(
                serde_json::json!({"statistic": "kaplan_meier", "time": "days", "event": "event",
                "time_grid": (0..=10).map(|i| 365.0 * f64::from(i)).collect::<Vec<_>>()}),
            ),
        ),
        (
            "DP count by sex",
            query(
                serde_json::json!({"statistic": "count", "group_by": [{"column": "sex", "levels": [0, 1]}],
                "dp": {"mechanism": "laplace", "epsilon": 1.0}}),
            ),
        ),
    ]
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// The gateway's work for one request with `bodies` (the holders' partials as JSON), in ms.
fn gateway_ms(q: &Query, bodies: &[String], earlier: &[ehds_stats::ReleasedCount]) -> f64 {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let start = Instant::now();
    let partials: Vec<Partial> = bodies
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let pooled = combine(q, &partials).unwrap();
    let release = check(q, &pooled, &Rules::default());
    let risks = differencing(earlier, &release.released_counts(q), 10);
    std::hint::black_box(&risks);
    if q.dp().is_some() {
        std::hint::black_box(privatize(q, &pooled, &release, &mut rng).unwrap());
    }
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    println!("node: one holder's partial, ns per row (linear work: flat across sizes)");
    println!(
        "{:<24} {:>10} {:>10} {:>10} {:>10}",
        "query", "1k rows", "10k rows", "100k rows", "100k/1k"
    );
    for (name, q) in queries() {
        let per_row: Vec<f64> = [1_000usize, 10_000, 100_000]
            .iter()
            .map(|&n| {
                let t = table(n, 1);
                let reps = (200_000 / n).max(3);
                median(
                    (0..reps)
                        .map(|_| {
                            let s = Instant::now();
                            std::hint::black_box(partial(&q, &t).unwrap());
                            s.elapsed().as_secs_f64() * 1e9 / n as f64
                        })
                        .collect(),
                )
            })
            .collect();
        println!(
            "{:<24} {:>10.1} {:>10.1} {:>10.1} {:>10.2}",
            name,
            per_row[0],
            per_row[1],
            per_row[2],
            per_row[2] / per_row[0]
        );
    }

    println!("\ngateway: parse the partials, pool, check, difference against 20 earlier answers, noise (ms, median of 21)");
    println!(
        "{:<24} {:>10} {:>12} {:>10}",
        "query", "4 holders", "100 holders", "100/4"
    );
    for (name, q) in queries() {
        let bodies = |holders: usize| -> Vec<String> {
            (0..holders)
                .map(|h| {
                    serde_json::to_string(&partial(&q, &table(300, h as u64)).unwrap()).unwrap()
                })
                .collect()
        };
        let (four, hundred) = (bodies(4), bodies(100));
        // the organisation's earlier answers: the same query over other populations
        let earlier: Vec<_> = (0..20)
            .flat_map(|i| {
                let p = partial(&q, &table(300 + i, 100 + i as u64)).unwrap();
                let pooled = combine(&q, &[p]).unwrap();
                check(&q, &pooled, &Rules::default()).released_counts(&q)
            })
            .collect();
        let time = |b: &[String]| median((0..21).map(|_| gateway_ms(&q, b, &earlier)).collect());
        let (a, b) = (time(&four), time(&hundred));
        println!("{:<24} {:>10.3} {:>12.3} {:>10.1}", name, a, b, b / a);
    }
}
