//! Splitting one table across 1, 2 or 4 nodes, in any order, gives the pooled result of the
//! single table (counts exactly, floating-point results to 1e-9), and the same partials in any
//! order give bit-identical results.

use ehds_stats::{check, combine, partial, Combined, Limits, Query, QueryForm, Rules, Table};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

fn table(rng: &mut ChaCha20Rng, rows: usize) -> Table {
    let mut cols: Vec<(&str, Vec<f64>)> = vec![
        ("sex", vec![]),
        ("age", vec![]),
        ("bmi", vec![]),
        ("months", vec![]),
        ("died", vec![]),
    ];
    for _ in 0..rows {
        let sex = if rng.random_bool(0.02) {
            f64::NAN
        } else {
            f64::from(rng.random_range(1..=2))
        };
        let age = rng.random_range(18.0..95.0);
        // Large offset: the pooled SD must survive cancellation.
        let bmi = if rng.random_bool(0.05) {
            f64::NAN
        } else {
            1e6 + rng.random_range(15.0..45.0)
        };
        let months = f64::from(rng.random_range(1..=60));
        let died = f64::from(u8::from(rng.random_bool(0.4)));
        for (c, v) in cols.iter_mut().zip([sex, age, bmi, months, died]) {
            c.1.push(v);
        }
    }
    Table::from_columns(cols).unwrap()
}

fn queries() -> Vec<Query> {
    let grid: Vec<f64> = (0..=60).step_by(6).map(f64::from).collect();
    [
        json!({"statistic": "count", "group_by": [
            {"column": "sex", "levels": [1, 2]}, {"column": "age", "edges": [18, 40, 65, 95]}]}),
        json!({"statistic": "mean", "variable": "bmi", "group_by": [{"column": "sex", "levels": [1, 2]}],
            "filters": [{"column": "age", "op": "ge", "value": 30}]}),
        json!({"statistic": "quantiles", "variable": "age", "probabilities": [0.1, 0.5, 0.9],
            "range": {"lo": 20, "hi": 90}, "bins": 70, "group_by": [{"column": "sex", "levels": [1, 2]}]}),
        json!({"statistic": "histogram", "variable": "months", "edges": [0, 12, 24, 36, 48, 60]}),
        json!({"statistic": "kaplan_meier", "time": "months", "event": "died", "time_grid": grid,
            "group_by": [{"column": "sex", "levels": [1, 2]}]}),
    ]
    .into_iter()
    .map(|v| {
        let form: QueryForm = serde_json::from_value(v).unwrap();
        Query::parse(form, &Limits::default()).unwrap()
    })
    .collect()
}

/// Equal JSON trees, numbers to a relative tolerance.
fn assert_close(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                "{path}: {x} vs {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}");
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                assert_close(u, v, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{path}"
            );
            for (k, u) in x {
                // The number of nodes differs by construction.
                if k != "nodes" {
                    assert_close(u, &y[k], &format!("{path}.{k}"));
                }
            }
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

fn split(t: &Table, nodes: usize, rng: &mut ChaCha20Rng) -> Vec<Table> {
    let mut parts: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for i in 0..t.len() {
        parts[rng.random_range(0..nodes)].push(i);
    }
    parts.iter().map(|p| t.select_rows(p)).collect()
}

#[test]
fn any_split_in_any_order_pools_to_the_single_table() {
    let mut rng = ChaCha20Rng::seed_from_u64(2026);
    let t = table(&mut rng, 600);
    for query in queries() {
        let whole: Combined = combine(&query, &[partial(&query, &t).unwrap()]).unwrap();
        let whole_json = serde_json::to_value(&whole).unwrap();
        for nodes in [1, 2, 4] {
            let parts = split(&t, nodes, &mut rng);
            let mut partials: Vec<_> = parts.iter().map(|p| partial(&query, p).unwrap()).collect();
            let first = combine(&query, &partials).unwrap();
            assert_eq!(first.rows_matched, whole.rows_matched);
            assert_close(
                &whole_json,
                &serde_json::to_value(&first).unwrap(),
                query.statistic().name(),
            );
            for _ in 0..5 {
                partials.shuffle(&mut rng);
                let again = combine(&query, &partials).unwrap();
                assert_eq!(again, first, "order changed the result");
            }
            // The release (output checking) is the same too.
            let rules = Rules::default();
            assert_close(
                &serde_json::to_value(check(&query, &whole, &rules)).unwrap(),
                &serde_json::to_value(check(&query, &first, &rules)).unwrap(),
                "release",
            );
        }
    }
}

#[test]
fn nothing_is_dropped_silently() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let t = table(&mut rng, 300);
    for query in queries() {
        let p = partial(&query, &t).unwrap();
        let in_cells: u64 = p.cells.iter().map(|c| c.n).sum();
        let excluded: u64 = p.excluded.values().sum();
        assert_eq!(
            p.rows_matched,
            in_cells + excluded,
            "{}",
            query.statistic().name()
        );
    }
}
