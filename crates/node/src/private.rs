//! Site-private features in FENDA-FL's local extractor (Tyler et al., "FENDA-FL: Personalized
//! federated learning on heterogeneous clinical datasets", arXiv:2309.16825; FL4Health's
//! extreme-heterogeneity setting, where a site's local model reads features only it has).
//!
//! A holder declares its site-private features in its code map ([`super::codemap`]); they are
//! extracted with the study's cohort and feature machinery into each row's `private` values.
//! For a FENDA study the node appends them, imputed and standardised with statistics of its own
//! training part, to the end of every row, and rewrites the study's model for itself only:
//!
//! * the global extractor reads exactly the columns it read before (a column selection over the
//!   wider row), so its parameters `global.*` keep their names and shapes and the gateway's
//!   model stays the same for every holder;
//! * the local extractor reads its columns plus the private ones, its first layer one input
//!   wider per private column (`local.*` never leaves the node);
//! * the head keeps its width (the extractors' feature widths do not change).
//!
//! The plain-MLP FENDA form (`Fenda`, extractors without `model.backbone`) is widened the same
//! way: its extractors are MLP backbones without normalisation over the whole row, with the
//! same parameter names and the same computation, so the holder's model becomes the equivalent
//! `BackboneFenda` with the wider local extractor.
//!
//! Private features feed parts that never leave the node, so a model is widened only under a
//! method that keeps `local.*` at the holder (FENDA-FL, PerFCL): under one that sends the whole
//! model (FedAvg on a FENDA model, Ditto, ...) a wider local extractor would not fit the
//! global model. Any other model, and a FENDA model the node cannot widen (a recurrent or CNN
//! local extractor), trains without them, and the node says so in its log.
use fl_engine::{
    data::{Dataset, SiteData, Standardizer, Task as Target},
    model::{Backbone, ColumnRange, MlpConfig, Norm},
    ModelSpec, Net, Selector,
};

use super::{impute::Imputer, SiteRows, SourceError, SubjectRow};

fn refused(msg: String) -> SourceError {
    SourceError::Engine(fl_engine::error::EngineError::InvalidConfig(msg))
}

/// `body` reading `extra` more columns at the end of what it reads.
fn wider_body(body: &Backbone, extra: usize) -> Result<Backbone, SourceError> {
    Ok(match body.clone() {
        Backbone::Mlp {
            inputs,
            hidden,
            dropout,
            norm,
        } => Backbone::Mlp {
            inputs: inputs + extra,
            hidden,
            dropout,
            norm,
        },
        // the private columns follow the static part
        Backbone::Fusion {
            series,
            static_inputs,
            static_hidden,
        } => Backbone::Fusion {
            series,
            static_inputs: static_inputs + extra,
            static_hidden,
        },
        other => {
            return Err(refused(format!(
                "site-private features need an MLP or fusion local extractor, not {}",
                match other {
                    Backbone::Recurrent(_) => "a recurrent one",
                    Backbone::Cnn(_) => "a CNN",
                    _ => "this one",
                }
            )))
        }
    })
}

/// `b`'s column ranges of a `width`-wide row and the backbone over them.
fn selection(b: &Backbone, width: usize) -> (Vec<ColumnRange>, Backbone) {
    match b {
        Backbone::Columns { columns, body, .. } => (columns.clone(), (**body).clone()),
        other => (
            vec![ColumnRange {
                start: 0,
                end: width,
            }],
            other.clone(),
        ),
    }
}

/// A plain-MLP extractor as the backbone that computes the same (`fc{i}` -> ReLU -> dropout).
fn mlp_backbone(c: &MlpConfig) -> Backbone {
    Backbone::Mlp {
        inputs: c.inputs,
        hidden: c.hidden.clone(),
        dropout: c.dropout,
        norm: Norm::None,
    }
}

/// The model this holder trains for a study of `spec` under a method that sends the
/// parameters `shared` selects, when it has `private` site-private columns: `spec` itself
/// unless it is a FENDA model and there are private columns.
pub fn local_spec(
    spec: &ModelSpec,
    private: usize,
    shared: &Selector,
) -> Result<ModelSpec, SourceError> {
    if private == 0 {
        return Ok(spec.clone());
    }
    let (global, local, outputs) = match spec {
        ModelSpec::BackboneFenda {
            global,
            local,
            outputs,
        } => (global.clone(), local.clone(), *outputs),
        ModelSpec::Fenda {
            global,
            local,
            outputs,
        } => (mlp_backbone(global), mlp_backbone(local), *outputs),
        _ => return Ok(spec.clone()),
    };
    let width = spec.inputs();
    let wide = width + private;
    let (columns, body) = selection(&global, width);
    let global = Backbone::Columns {
        inputs: wide,
        columns,
        body: Box::new(body),
    };
    let (mut columns, body) = selection(&local, width);
    columns.push(ColumnRange {
        start: width,
        end: wide,
    });
    let local = Backbone::Columns {
        inputs: wide,
        columns,
        body: Box::new(wider_body(&body, private)?),
    };
    let out = ModelSpec::BackboneFenda {
        global,
        local,
        outputs,
    };
    out.validate()
        .map_err(|e| refused(format!("the local model with site-private features: {e}")))?;
    keeps_shared_part(spec, &out, shared)?;
    Ok(out)
}

/// Refuses a widened model whose part the method sends differs from the study's in a name or
/// shape: the gateway would refuse the update (a method that sends `local.*` too).
fn keeps_shared_part(
    study: &ModelSpec,
    wide: &ModelSpec,
    shared: &Selector,
) -> Result<(), SourceError> {
    let study = Net::new(study, 0)?.parameters()?;
    for (name, t) in Net::new(wide, 0)?.parameters()?.iter() {
        if shared.matches(name) && study.get(name).map(|s| &s.shape) != Some(&t.shape) {
            return Err(refused(format!(
                "the method sends `{name}`, which site-private columns would widen: they feed \
                 only parts that stay at the holder (FENDA-FL's local extractor)"
            )));
        }
    }
    Ok(())
}

/// `d` with `extra` (`[n, p]`, row-major) appended to every row, targets kept.
fn widened(d: &Dataset, extra: &[f32], p: usize) -> Result<Dataset, SourceError> {
    let (n, w) = (d.len(), d.n_features());
    if extra.len() != n * p {
        return Err(refused(format!(
            "{} private values for {n} rows of {p}",
            extra.len()
        )));
    }
    let mut x = Vec::with_capacity(n * (w + p));
    for i in 0..n {
        x.extend_from_slice(&d.features()[i * w..(i + 1) * w]);
        x.extend_from_slice(&extra[i * p..(i + 1) * p]);
    }
    Ok(match d.task() {
        Target::Classification => Dataset::new(w + p, x, d.labels().to_vec())?,
        Target::MultiLabel { labels } => {
            let m = d.label_matrix().unwrap_or_default();
            let targets: Vec<Vec<bool>> = m
                .chunks(labels as usize)
                .map(|r| r.iter().map(|&v| v == 1).collect())
                .collect();
            Dataset::multi_label(w + p, x, labels, &targets)?
        }
        Target::Survival => {
            let (time, event) = d.survival_targets().unwrap_or_default();
            Dataset::survival(w + p, x, &time, &event)?
        }
    })
}

/// `data` (the study's columns, split as [`SiteRows::train_val`] splits with `plan`) with the
/// holder's private columns appended, imputed and standardised with statistics of the
/// training part.
pub fn with_private_columns(
    rows: &SiteRows,
    data: SiteData,
    plan: &crate::SplitPlan,
) -> Result<SiteData, SourceError> {
    let p = rows.private_columns.len();
    if p == 0 {
        return Ok(data);
    }
    let (train, val, test) = rows.train_val(plan)?;
    let imputer = Imputer::fit(
        &rows.private_imputation,
        train.iter().map(|r| r.private.as_slice()),
    );
    let raw = |part: &[&SubjectRow]| -> Result<Dataset, SourceError> {
        let mut x = Vec::with_capacity(part.len() * p);
        for r in part {
            let start = x.len();
            x.extend_from_slice(&r.private);
            imputer.fill(&mut x[start..]);
        }
        Ok(Dataset::new(p, x, vec![0; part.len()])?)
    };
    let (tr, va, te) = (raw(&train)?, raw(&val)?, raw(&test)?);
    let std = Standardizer::fit(&tr)?;
    let wide = |d: &Dataset, private: &Dataset| -> Result<Dataset, SourceError> {
        widened(d, std.apply(private)?.features(), p)
    };
    Ok(SiteData {
        train: wide(&data.train, &tr)?,
        val: wide(&data.val, &va)?,
        test: wide(&data.test, &te)?,
        name: data.name,
    })
}

#[cfg(test)]
mod tests {
    use fl_engine::{model::Norm, Net};

    use super::*;

    fn mlp(inputs: usize, hidden: Vec<usize>) -> Backbone {
        Backbone::Mlp {
            inputs,
            hidden,
            dropout: 0.0,
            norm: Norm::None,
        }
    }

    /// What FENDA-FL sends.
    fn fenda() -> Selector {
        Selector::prefix("global.")
    }

    fn shape(net: &Net, name: &str) -> Vec<usize> {
        net.parameters().unwrap().get(name).unwrap().shape.clone()
    }

    #[test]
    fn private_columns_widen_only_the_local_extractor() {
        let study = ModelSpec::BackboneFenda {
            global: mlp(5, vec![4]),
            local: mlp(5, vec![3]),
            outputs: 1,
        };
        // no private columns, or another architecture: the study's model as it is
        assert_eq!(local_spec(&study, 0, &fenda()).unwrap(), study);
        let other = ModelSpec::BackboneNet {
            body: mlp(5, vec![4]),
            outputs: 1,
        };
        assert_eq!(local_spec(&other, 2, &fenda()).unwrap(), other);

        let shared = Net::new(&study, 1).unwrap();
        for p in [1, 2] {
            let spec = local_spec(&study, p, &fenda()).unwrap();
            assert_eq!(spec.inputs(), 5 + p);
            let net = Net::new(&spec, 1).unwrap();
            // the shared part keeps its names and shapes; the head its width
            let names = |n: &Net| -> Vec<String> {
                n.parameters()
                    .unwrap()
                    .names()
                    .filter(|n| n.starts_with("global."))
                    .map(str::to_owned)
                    .collect()
            };
            assert_eq!(names(&net), names(&shared));
            for n in names(&net) {
                assert_eq!(shape(&net, &n), shape(&shared, &n), "{n}");
            }
            assert_eq!(shape(&net, "global.fc0.weight"), [4, 5]);
            assert_eq!(shape(&net, "local.fc0.weight"), [3, 5 + p]);
            assert_eq!(shape(&net, "head.out.weight"), [1, 7]);
            // the global extractor reads the study's columns only
            let ModelSpec::BackboneFenda { global, .. } = &spec else {
                unreachable!()
            };
            let Backbone::Columns { columns, .. } = global else {
                unreachable!()
            };
            assert_eq!(columns, &[ColumnRange { start: 0, end: 5 }]);
        }

        // a column selection keeps its columns and gains the private ones
        let selected = ModelSpec::BackboneFenda {
            global: Backbone::Columns {
                inputs: 5,
                columns: vec![ColumnRange { start: 0, end: 3 }],
                body: Box::new(mlp(3, vec![4])),
            },
            local: Backbone::Columns {
                inputs: 5,
                columns: vec![ColumnRange { start: 3, end: 5 }],
                body: Box::new(mlp(2, vec![2])),
            },
            outputs: 1,
        };
        let spec = local_spec(&selected, 2, &fenda()).unwrap();
        let ModelSpec::BackboneFenda { global, local, .. } = &spec else {
            unreachable!()
        };
        let Backbone::Columns { columns, .. } = global else {
            unreachable!()
        };
        assert_eq!(columns, &[ColumnRange { start: 0, end: 3 }]);
        let Backbone::Columns { columns, .. } = local else {
            unreachable!()
        };
        assert_eq!(
            columns,
            &[
                ColumnRange { start: 3, end: 5 },
                ColumnRange { start: 5, end: 7 }
            ]
        );
        let net = Net::new(&spec, 0).unwrap();
        assert_eq!(shape(&net, "local.fc0.weight"), [2, 4]);
        assert_eq!(shape(&net, "global.fc0.weight"), [4, 3]);
    }

    #[test]
    fn plain_mlp_fenda_takes_the_private_columns_in_its_local_extractor() {
        let mlp = |hidden: Vec<usize>| MlpConfig {
            inputs: 3,
            hidden,
            outputs: 0,
            dropout: 0.0,
        };
        let study = ModelSpec::Fenda {
            global: mlp(vec![4]),
            local: mlp(vec![2]),
            outputs: 1,
        };
        let spec = local_spec(&study, 2, &fenda()).unwrap();
        assert_eq!(spec.inputs(), 5);
        let shared = Net::new(&study, 1).unwrap();
        let mut params = shared.parameters().unwrap();
        let net = Net::new(&spec, 1).unwrap();
        // every parameter keeps its name; only the local extractor's first layer is wider
        let names = |n: &Net| {
            n.parameters()
                .unwrap()
                .names()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&net), names(&shared));
        assert_eq!(shape(&net, "global.fc0.weight"), [4, 3]);
        assert_eq!(shape(&net, "local.fc0.weight"), [2, 5]);
        assert_eq!(shape(&net, "head.out.weight"), [1, 6]);

        // with zero weights on the private columns it computes what the study's model does
        let w = params.get("local.fc0.weight").unwrap().values.clone();
        let wide: Vec<f32> = w
            .chunks(3)
            .flat_map(|r| [r[0], r[1], r[2], 0.0, 0.0])
            .collect();
        params.insert("local.fc0.weight", vec![2, 5], wide).unwrap();
        let net = Net::with_parameters(&spec, &params).unwrap();
        let x = [0.3f32, -1.2, 0.8, 0.1, 2.0, -0.4];
        let private = [5.0f32, -3.0, 0.7, 1.1];
        let rows: Vec<f32> = x
            .chunks(3)
            .zip(private.chunks(2))
            .flat_map(|(a, b)| a.iter().chain(b).copied())
            .collect();
        let out = |n: &Net, v: &[f32], w: usize| -> Vec<f32> {
            let d = Dataset::new(w, v.to_vec(), vec![0, 1]).unwrap();
            fl_engine::train::predict_scores(n, &d).unwrap()
        };
        let (a, b) = (out(&shared, &x, 3), out(&net, &rows, 5));
        for (a, b) in a.iter().zip(&b) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn a_method_that_sends_the_local_extractor_gets_the_study_s_model() {
        let study = ModelSpec::BackboneFenda {
            global: mlp(5, vec![4]),
            local: mlp(5, vec![3]),
            outputs: 1,
        };
        // FedAvg on a FENDA model sends everything, `local.*` included
        let err = local_spec(&study, 2, &Selector::All).unwrap_err();
        assert!(err.to_string().contains("local.fc0.weight"), "{err}");
    }

    #[test]
    fn private_values_are_imputed_and_standardised_from_the_training_part() {
        let d = Dataset::new(1, vec![1.0, 2.0], vec![0, 1]).unwrap();
        let w = widened(&d, &[10.0, 20.0, 30.0, 40.0], 2).unwrap();
        assert_eq!(w.n_features(), 3);
        assert_eq!(w.features(), &[1.0, 10.0, 20.0, 2.0, 30.0, 40.0]);
        assert_eq!(w.labels(), &[0, 1]);
        assert!(widened(&d, &[1.0], 2).is_err());
        let s = Dataset::survival(1, vec![1.0], &[3.0], &[true]).unwrap();
        let w = widened(&s, &[5.0], 1).unwrap();
        assert_eq!(w.survival_targets(), Some((vec![3.0], vec![true])));
    }
}
