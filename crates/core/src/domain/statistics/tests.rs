use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::*;
use ehds_stats::{partial, Table};

const SPEC: &str = include_str!("../../../../../examples/federation/heart_disease.features.json");

fn spec_value() -> serde_json::Value {
    serde_json::from_str(SPEC).unwrap()
}

fn form(json: serde_json::Value) -> QueryForm {
    serde_json::from_value(json).unwrap()
}

fn ehr() -> Vec<DataCategory> {
    vec![DataCategory::parse("ehr_data").unwrap()]
}

#[test]
fn variables_are_the_model_columns_and_the_label() {
    let spec = FeatureSpec::from_json(SPEC).unwrap();
    let v = variables(&spec);
    assert_eq!(v.first().map(String::as_str), Some("age"));
    assert_eq!(v.last().map(String::as_str), Some("coronary_heart_disease"));
    assert!(v.iter().any(|c| c == "cp=2"), "{v:?}");
}

#[test]
fn a_request_reports_every_problem_under_its_path() {
    let req = StatisticsRequest {
        feature_spec: spec_value(),
        queries: vec![
            form(
                serde_json::json!({"statistic": "count", "group_by": [{"column": "sex", "levels": [0, 1]}]}),
            ),
            form(serde_json::json!({"statistic": "mean", "variable": "bmi"})),
            form(serde_json::json!({"statistic": "median"})),
        ],
    };
    let mut e = Errors::default();
    assert!(req.parse(&mut e, "statistics", &ehr()).is_none());
    let at = |p: &str| -> Vec<&str> {
        e.0.iter()
            .filter(|x| x.field == p)
            .map(|x| x.code)
            .collect()
    };
    assert_eq!(at("statistics.queries[1]"), vec!["unknown_variable"]);
    assert!(
        !e.0.iter()
            .any(|x| x.field.starts_with("statistics.queries[0]")),
        "{e:?}"
    );
    assert!(
        e.0.iter()
            .any(|x| x.field.starts_with("statistics.queries[2]")),
        "{e:?}"
    );
}

#[test]
fn a_specification_reading_an_uncovered_category_is_refused() {
    let req = StatisticsRequest {
        feature_spec: spec_value(),
        queries: vec![form(serde_json::json!({"statistic": "count"}))],
    };
    let mut e = Errors::default();
    let genetic = vec![DataCategory::GeneticGenomic];
    assert!(req.parse(&mut e, "statistics", &genetic).is_none());
    assert!(
        e.0.iter()
            .any(|x| x.field == "statistics.feature_spec" && x.code == "category_not_covered"),
        "{e:?}"
    );
}

#[test]
fn a_valid_request_parses() {
    let req = StatisticsRequest {
        feature_spec: spec_value(),
        queries: vec![form(
            serde_json::json!({"statistic": "mean", "variable": "age", "bounds": {"lo": 0, "hi": 120}}),
        )],
    };
    let mut e = Errors::default();
    let d = req.parse(&mut e, "statistics", &ehr()).expect("valid");
    assert_eq!(d.queries.len(), 1);
    // the parsed form round-trips through storage
    let back: DeclaredStatistics =
        serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
    assert_eq!(back, d);
}

#[test]
fn charges_are_epsilon_at_the_permit_delta() {
    let q = |dp: serde_json::Value| {
        Query::parse(
            form(serde_json::json!({"statistic": "count", "dp": dp})),
            &Default::default(),
        )
        .unwrap()
    };
    let laplace = q(serde_json::json!({"mechanism": "laplace", "epsilon": 0.5}));
    assert_eq!(
        charge(&laplace, 1e-5).unwrap(),
        Some(Charge { epsilon: 0.5 })
    );
    // ρ = 0.125 at δ = 1e-5: ε = ρ + 2√(ρ ln(1/δ)) is the classic bound; the exact
    // conversion (Canonne, Kamath & Steinke 2020) is tighter.
    let zcdp = q(serde_json::json!({"mechanism": "gaussian", "rho": 0.125}));
    let eps = charge(&zcdp, 1e-5).unwrap().unwrap().epsilon;
    let classic = 0.125 + 2.0 * (0.125f64 * (1e5f64).ln()).sqrt();
    assert!(eps > 0.125 && eps < classic, "{eps} vs {classic}");
    let approx = q(serde_json::json!({"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-4}));
    assert!(matches!(
        charge(&approx, 1e-5),
        Err(ChargeError::DeltaAbovePermit { .. })
    ));
    let distributed =
        q(serde_json::json!({"mechanism": "gaussian", "rho": 0.1, "placement": "distributed"}));
    assert_eq!(
        charge(&distributed, 1e-5),
        Err(ChargeError::DistributedNotOffered)
    );
    let plain = Query::parse(
        form(serde_json::json!({"statistic": "count"})),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(charge(&plain, 1e-5).unwrap(), None);
}

fn run(query: Query, holders: &[&str], now: Timestamp) -> StatisticsRun {
    StatisticsRun::new(
        NewRun {
            permit_id: PermitId::new(),
            application_id: Some(ApplicationId::new()),
            organisation: OrgId::parse("uni").unwrap(),
            requested_by: "r".into(),
            purpose: Purpose::ScientificResearch,
            query,
            feature_spec: spec_value(),
            categories: ehr(),
            data_holders: holders.iter().map(|h| OrgId::parse(h).unwrap()).collect(),
            optout_policy: FilterPolicy::AtIssue,
            registry_version: 0,
            rules: Rules::default(),
            charge: None,
            deadline: now + chrono::Duration::minutes(10),
            approved_at: Some(now),
        },
        now,
    )
}

fn contribution(holder: &str, query: &Query, sexes: &[f64]) -> Contribution {
    let table = Table::new(vec!["sex".into()], sexes.iter().map(|s| vec![*s]).collect()).unwrap();
    Contribution {
        holder: OrgId::parse(holder).unwrap(),
        partial: partial(query, &table).unwrap(),
        opted_out: 2,
        incomplete: 0,
    }
}

fn by_sex() -> Query {
    Query::parse(
        form(serde_json::json!({"statistic": "count", "group_by": [{"column": "sex", "levels": [0, 1]}]})),
        &Default::default(),
    )
    .unwrap()
}

#[test]
fn an_answer_with_nothing_flagged_is_released_and_small_exclusions_are_suppressed() {
    let now = chrono::Utc::now();
    let q = by_sex();
    let mut r = run(q.clone(), &["a", "b", "c"], now);
    let parts = [
        contribution("a", &q, &[vec![0.0; 20], vec![1.0; 30]].concat()),
        contribution("b", &q, &[vec![0.0; 15], vec![1.0; 12]].concat()),
    ];
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    r.complete(&parts, &[], ReviewPolicy::Flagged, &mut rng, now)
        .unwrap();
    assert_eq!(r.status, RunStatus::Released);
    let o = r.outcome.as_ref().unwrap();
    assert_eq!(o.holders_answered, 2);
    assert_eq!(o.holders_missing, vec![OrgId::parse("c").unwrap()]);
    // 4 opted out in all: below the minimum count, so not shown
    assert_eq!(o.not_counted.opted_out.count, None);
    let Some(Answer::Checked(rel)) = r.answer() else {
        panic!("checked answer expected")
    };
    let counts: Vec<_> = rel
        .cells
        .iter()
        .map(|c| match c.value {
            Some(ehds_stats::CellValue::Count { n }) => n,
            _ => panic!("count"),
        })
        .collect();
    assert_eq!(counts, vec![35, 42]);
    // a second step is refused
    assert_eq!(
        r.review(ReviewDecision::Release, "o", "x".into(), now),
        Err(RunStateError(RunStatus::Released))
    );
}

#[test]
fn a_small_cell_sends_the_answer_to_review_and_the_officer_cannot_reveal_it() {
    let now = chrono::Utc::now();
    let q = by_sex();
    let mut r = run(q.clone(), &["a"], now);
    let parts = [contribution(
        "a",
        &q,
        &[vec![0.0; 3], vec![1.0; 30]].concat(),
    )];
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    r.complete(&parts, &[], ReviewPolicy::Flagged, &mut rng, now)
        .unwrap();
    assert_eq!(r.status, RunStatus::UnderReview);
    assert!(r.answer().is_none(), "nothing before release");
    r.review(ReviewDecision::Release, "officer", "checked".into(), now)
        .unwrap();
    let Some(Answer::Checked(rel)) = r.answer() else {
        panic!("released")
    };
    // the small cell, and the other one: with the total released, either would give it away
    assert!(rel.cells.iter().all(|c| c.value.is_none()), "{rel:?}");
    assert_eq!(
        rel.cells[1].outcome,
        ehds_stats::Outcome::Suppressed {
            reasons: vec![ehds_stats::Reason::SecondarySuppression]
        }
    );
}

#[test]
fn differencing_an_earlier_answer_withholds_everything() {
    let now = chrono::Utc::now();
    let q = Query::parse(
        form(serde_json::json!({"statistic": "count"})),
        &Default::default(),
    )
    .unwrap();
    let mut first = run(q.clone(), &["a"], now);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    first
        .complete(
            &[contribution("a", &q, &[1.0; 40])],
            &[],
            ReviewPolicy::Flagged,
            &mut rng,
            now,
        )
        .unwrap();
    assert_eq!(first.status, RunStatus::Released);
    // the same population counted again three records later: the difference is a group of 3
    let mut second = run(q.clone(), &["a"], now);
    second
        .complete(
            &[contribution("a", &q, &[1.0; 43])],
            &first.released_counts(),
            ReviewPolicy::Flagged,
            &mut rng,
            now,
        )
        .unwrap();
    assert_eq!(second.status, RunStatus::Withheld);
    assert!(second.answer().is_none());
    assert_eq!(second.outcome.as_ref().unwrap().differencing.len(), 1);
}

#[test]
fn under_differential_privacy_only_noisy_values_are_answered() {
    let now = chrono::Utc::now();
    let q = Query::parse(
        form(serde_json::json!({"statistic": "count", "dp": {"mechanism": "laplace", "epsilon": 1.0}})),
        &Default::default(),
    )
    .unwrap();
    let mut r = run(q.clone(), &["a"], now);
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    r.complete(
        &[contribution("a", &q, &[1.0; 500])],
        &[],
        ReviewPolicy::Flagged,
        &mut rng,
        now,
    )
    .unwrap();
    assert_eq!(r.status, RunStatus::Released);
    assert!(matches!(r.answer(), Some(Answer::Noisy(_))));
}

#[test]
fn nobody_answering_fails_and_the_always_policy_reviews() {
    let now = chrono::Utc::now();
    let q = by_sex();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut r = run(q.clone(), &["a"], now);
    r.complete(&[], &[], ReviewPolicy::Flagged, &mut rng, now)
        .unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    let mut r = run(q.clone(), &["a"], now);
    let parts = [contribution(
        "a",
        &q,
        &[vec![0.0; 30], vec![1.0; 30]].concat(),
    )];
    r.complete(&parts, &[], ReviewPolicy::Always, &mut rng, now)
        .unwrap();
    assert_eq!(r.status, RunStatus::UnderReview);
    r.review(
        ReviewDecision::Withhold,
        "o",
        "not anonymous enough".into(),
        now,
    )
    .unwrap();
    assert_eq!(r.status, RunStatus::Withheld);
    assert!(r.answer().is_none());
}

#[test]
fn the_answer_is_overdue_three_months_after_approval() {
    let now = chrono::Utc::now();
    let r = run(by_sex(), &["a"], now);
    assert!(!r.overdue(now));
    assert!(r.overdue(now + chrono::Duration::days(93)));
}
