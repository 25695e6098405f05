//! The opt-out match protocol's cost per check (docs/threat-model.md, "Opt-out filtering"),
//! against the disclosing filter it replaces, in the same run.
//!
//! For a holder of `cohort` subjects and a permit scope of `in_scope` opted-out subjects:
//! - node: blind every pseudonym and the padding, unblind and salt every answer element, and
//!   intersect with the answer's entries; and a later check, where the node keeps its
//!   subjects' values and only salts and intersects;
//! - gateway: evaluate every element, salt every in-scope match value and the padding;
//! - baseline: what the disclosing filter computes for the same cohort, one HMAC-SHA256
//!   subject key per pseudonym (its database lookups, like the match's registry read, are not
//!   counted in either);
//! - bytes: request and answer bodies of both protocols.
//!
//! `cargo bench -p ehds-core --bench optout_match [-- COHORT:IN_SCOPE ...]`
use std::collections::BTreeSet;
use std::time::Instant;

use base64::{engine::general_purpose::STANDARD as B64, Engine as _};
use ehds_core::domain::optout::{salted_match, PseudonymKey, SALTED_MATCH_LEN};
use ehds_core::domain::SubjectPseudonym;
use ehds_core::oprf::Blinded;

fn pseudonym(i: usize) -> String {
    format!("psn-site-{i:016x}")
}

fn padded(n: usize) -> usize {
    n.max(64).next_power_of_two()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn case(cohort: usize, in_scope: usize) {
    let key = PseudonymKey::new(vec![7; 32]);
    let oprf = key.match_key();
    let subjects: Vec<String> = (0..cohort).map(pseudonym).collect();
    // every tenth holder subject opted out; the rest of the scope is other holders' subjects
    let opted: Vec<String> = (0..in_scope)
        .map(|i| {
            if i * 10 < cohort {
                pseudonym(i * 10)
            } else {
                pseudonym(cohort + i)
            }
        })
        .collect();
    let stored: Vec<[u8; 64]> = opted
        .iter()
        .map(|p| oprf.evaluate_direct(p.as_bytes()))
        .collect();

    // Node: blind (with padding).
    let t = Instant::now();
    let mut blinds: Vec<(Option<&str>, Blinded)> = subjects
        .iter()
        .map(|s| (Some(s.as_str()), Blinded::new(s.as_bytes()).unwrap()))
        .collect();
    while blinds.len() < padded(cohort) {
        blinds.push((None, Blinded::new(&blinds.len().to_le_bytes()).unwrap()));
    }
    let request: Vec<String> = blinds.iter().map(|(_, b)| B64.encode(b.element)).collect();
    let node_blind = ms(t);

    // Gateway: evaluate, salt the scope, pad.
    let t = Instant::now();
    let evaluated: Vec<String> = request
        .iter()
        .map(|e| B64.encode(oprf.evaluate(&B64.decode(e).unwrap()).unwrap()))
        .collect();
    let salt = [9u8; 32];
    let mut answer: Vec<String> = stored.iter().map(|m| salted_match(&salt, m)).collect();
    let mut filler = 0u64;
    while answer.len() < padded(in_scope) {
        filler += 1;
        answer.push(hex::encode([filler as u8; SALTED_MATCH_LEN]));
    }
    answer.sort_unstable();
    let gateway = ms(t);

    // Node: unblind, salt, intersect.
    let t = Instant::now();
    let set: BTreeSet<&str> = answer.iter().map(String::as_str).collect();
    let mut excluded = 0;
    for ((subject, blind), z) in blinds.iter().zip(&evaluated) {
        let Some(subject) = subject else { continue };
        let value = blind
            .finalize(subject.as_bytes(), &B64.decode(z).unwrap())
            .unwrap();
        if set.contains(salted_match(&salt, &value).as_str()) {
            excluded += 1;
        }
    }
    let node_finish = ms(t);

    // A later check: the node keeps its subjects' values, so it only salts and intersects
    // (the gateway's side is then the padding's 64 evaluations and the scope's salting).
    let kept: Vec<[u8; 64]> = subjects
        .iter()
        .map(|s| oprf.evaluate_direct(s.as_bytes()))
        .collect();
    let t = Instant::now();
    let again = kept
        .iter()
        .filter(|v| set.contains(salted_match(&salt, &v[..]).as_str()))
        .count();
    let node_later = ms(t);
    assert_eq!(again, excluded);
    assert_eq!(
        excluded,
        in_scope.min(cohort.div_ceil(10)),
        "the match finds every opt-out"
    );

    // Baseline: the disclosing filter's per-subject work at the gateway.
    let t = Instant::now();
    let keys: Vec<String> = subjects
        .iter()
        .map(|s| key.subject_key(&SubjectPseudonym::parse(s).unwrap()))
        .collect();
    let baseline = ms(t);
    assert_eq!(keys.len(), cohort);

    let json_len = |v: &[String]| serde_json::to_vec(v).unwrap().len();
    let match_bytes = json_len(&request) + json_len(&evaluated) + json_len(&answer);
    let filter_bytes = json_len(&subjects) + json_len(&opted[..excluded]);
    println!(
        "| {cohort} | {in_scope} | {node_blind:.1} | {gateway:.1} | {node_finish:.1} | {node_later:.1} | {baseline:.2} | {:.0}x | {:.1} | {:.1} |",
        gateway / baseline,
        match_bytes as f64 / 1e6,
        filter_bytes as f64 / 1e6,
    );
}

fn main() {
    let cases: Vec<(usize, usize)> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| {
            let (c, s) = a.split_once(':')?;
            Some((c.parse().ok()?, s.parse().ok()?))
        })
        .collect();
    let cases = if cases.is_empty() {
        vec![
            (1_000, 100),
            (10_000, 1_000),
            (10_000, 100_000),
            (100_000, 10_000),
        ]
    } else {
        cases
    };
    println!("| cohort | in scope | node blind ms | gateway ms | node unblind+intersect ms | node later check ms | filter baseline ms | gateway / baseline | match MB | filter MB |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (cohort, in_scope) in cases {
        case(cohort, in_scope);
    }
}
