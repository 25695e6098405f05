//! Which round's global model a completed study releases, chosen from the holders'
//! evaluations.

use serde::{Deserialize, Serialize};

use super::SiteEvaluation;

/// Which global model a completed study releases (FL4Health's checkpointing protocol).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ModelRelease {
    /// The aggregated round whose model has the lowest example-weighted validation loss over
    /// the holders that evaluated it (ties keep the earlier round); the last aggregated round
    /// when no round's model was evaluated.
    #[default]
    BestValidation,
    /// The last aggregated round's model.
    Last,
}

impl ModelRelease {
    /// Studies stored before the choice existed were promised the last round's model.
    pub(super) fn stored_default() -> Self {
        Self::Last
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::BestValidation => "best_validation",
            Self::Last => "last",
        }
    }
}

/// The round whose model a study releases, and why that one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReleaseChoice {
    pub round: u64,
    pub selection: ModelRelease,
    /// Example-weighted validation loss of the chosen model over the holders that evaluated it.
    pub validation_loss: Option<f64>,
}

/// Chooses the released round among the `aggregated` rounds (ascending) from the holders'
/// evaluations `(round of the evaluated model, evaluation)`. `BestValidation` keeps the round
/// with the strictly lowest example-weighted validation loss, so ties keep the earlier round;
/// rounds nobody evaluated are skipped; with no evaluated round it falls back to the last.
pub fn choose_release(
    policy: ModelRelease,
    aggregated: &[u64],
    evaluations: &[(u64, SiteEvaluation)],
) -> Option<ReleaseChoice> {
    let weighted_loss = |round: u64| {
        let (sum, n) = evaluations
            .iter()
            .filter(|(r, e)| *r == round && e.validation.n > 0 && e.validation.loss.is_finite())
            .fold((0.0, 0usize), |(s, n), (_, e)| {
                (
                    s + e.validation.loss * e.validation.n as f64,
                    n + e.validation.n,
                )
            });
        (n > 0).then(|| sum / n as f64)
    };
    let last = *aggregated.last()?;
    if policy == ModelRelease::BestValidation {
        let mut best: Option<(u64, f64)> = None;
        for &round in aggregated {
            if let Some(loss) = weighted_loss(round) {
                if best.is_none_or(|(_, b)| loss < b) {
                    best = Some((round, loss));
                }
            }
        }
        if let Some((round, loss)) = best {
            return Some(ReleaseChoice {
                round,
                selection: ModelRelease::BestValidation,
                validation_loss: Some(loss),
            });
        }
    }
    Some(ReleaseChoice {
        round: last,
        selection: ModelRelease::Last,
        validation_loss: weighted_loss(last),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::OrgId;

    fn evaluated(round: u64, holder: &str, n: usize, loss: f64) -> (u64, SiteEvaluation) {
        let mut summary: fl_engine::MetricSummary = serde_json::from_value(serde_json::json!({
            "n": n, "loss": 0.0, "accuracy": 0.0, "balanced_accuracy": 0.0,
            "auroc": null, "auprc": null, "f1": null
        }))
        .unwrap();
        summary.loss = loss;
        let holder = OrgId::parse(holder).unwrap();
        (
            round,
            SiteEvaluation {
                data_holder: holder,
                validation: summary.clone(),
                test: summary,
            },
        )
    }

    #[test]
    fn best_validation_weighs_each_holders_loss_by_its_examples() {
        // round 1: (10·0.9 + 30·0.5) / 40 = 0.6; round 2: (10·0.2 + 30·0.7) / 40 = 0.575;
        // round 3: (10·0.8 + 30·0.6) / 40 = 0.65. Round 0 (the initial model, loss 0.1) is
        // not an aggregated round and is never released.
        let evals = vec![
            evaluated(0, "a", 10, 0.1),
            evaluated(1, "a", 10, 0.9),
            evaluated(1, "b", 30, 0.5),
            evaluated(2, "a", 10, 0.2),
            evaluated(2, "b", 30, 0.7),
            evaluated(3, "a", 10, 0.8),
            evaluated(3, "b", 30, 0.6),
        ];
        let c = choose_release(ModelRelease::BestValidation, &[1, 2, 3], &evals).unwrap();
        assert_eq!((c.round, c.selection), (2, ModelRelease::BestValidation));
        assert!((c.validation_loss.unwrap() - 0.575).abs() < 1e-12);

        // weighting decides: round 1 unweighted (0.0 + 1.0) / 2 = 0.5, weighted
        // (1·0.0 + 99·1.0) / 100 = 0.99; round 2 unweighted 0.6, weighted 0.6
        let evals = vec![
            evaluated(1, "a", 1, 0.0),
            evaluated(1, "b", 99, 1.0),
            evaluated(2, "a", 1, 0.6),
            evaluated(2, "b", 99, 0.6),
        ];
        let c = choose_release(ModelRelease::BestValidation, &[1, 2], &evals).unwrap();
        assert_eq!(c.round, 2);
    }

    #[test]
    fn release_ties_keep_the_earlier_round_and_unevaluated_rounds_are_skipped() {
        let evals = vec![
            evaluated(1, "a", 5, 0.3),
            evaluated(2, "a", 5, 0.3),
            evaluated(3, "a", 0, 0.0),
            evaluated(3, "b", 5, f64::NAN),
        ];
        let c = choose_release(ModelRelease::BestValidation, &[1, 2, 3, 4], &evals).unwrap();
        assert_eq!(c.round, 1);
    }

    #[test]
    fn release_falls_back_to_the_last_round() {
        let c = choose_release(ModelRelease::BestValidation, &[1, 2], &[]).unwrap();
        assert_eq!(
            (c.round, c.selection, c.validation_loss),
            (2, ModelRelease::Last, None)
        );
        let evals = vec![evaluated(1, "a", 5, 0.1), evaluated(2, "a", 5, 0.4)];
        let c = choose_release(ModelRelease::Last, &[1, 2], &evals).unwrap();
        assert_eq!((c.round, c.selection), (2, ModelRelease::Last));
        assert_eq!(c.validation_loss, Some(0.4));
        assert!(choose_release(ModelRelease::BestValidation, &[], &evals).is_none());
    }

    #[test]
    fn studies_stored_before_the_release_choice_release_the_last_round() {
        let field: ModelRelease =
            serde_json::from_value(serde_json::json!("best_validation")).unwrap();
        assert_eq!(field, ModelRelease::BestValidation);
        assert_eq!(ModelRelease::stored_default(), ModelRelease::Last);
    }
}
