//! The node's best personalised model of each study (FL4Health's local checkpointing): the
//! model this holder evaluated with the lowest validation loss on its own data, kept under
//! the state directory and exported to the hospital with `ehds-node export-model`.
//! It never goes to the gateway: for personalised methods it holds the site's private parts.
//!
//! The file is the engine's safetensors parameter file (study, round, site, digest) with
//! `checkpoint = best_local`, `validation_loss`, `validation_examples` and `model_spec` (the
//! architecture, so that `fl_engine::Net::with_parameters` rebuilds the model) in its
//! metadata. Ties keep the earlier round, so a repeated task changes nothing.
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::Context;
use fl_engine::{MetricSummary, Net};

use ehds_core::domain::{OrgId, StudyId};

const FILE: &str = "best-model.safetensors";

/// Where the node keeps `study`'s best model under `state_dir`.
pub fn path(state_dir: &Path, study: StudyId) -> PathBuf {
    state_dir.join(study.to_string()).join(FILE)
}

/// What a kept best model says about itself.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BestModel {
    pub study: String,
    pub site: Option<String>,
    /// The round whose model (global part, with the site's own parts) this is (0: the initial).
    pub round: u64,
    pub validation_loss: f64,
    pub validation_examples: usize,
    pub digest: String,
    pub parameters: usize,
}

fn describe(bytes: &[u8]) -> anyhow::Result<BestModel> {
    let (params, meta) = fl_engine::load_safetensors(bytes)?;
    let number = |k: &str| {
        meta.extra
            .get(k)
            .with_context(|| format!("the file's metadata lacks `{k}`"))
    };
    Ok(BestModel {
        validation_loss: number("validation_loss")?.parse()?,
        validation_examples: number("validation_examples")?.parse()?,
        parameters: params.iter().map(|(_, t)| t.values.len()).sum(),
        study: meta.study,
        site: meta.site,
        round: meta.round,
        digest: meta.digest,
    })
}

/// The best model kept for `study`, if any.
pub fn kept(state_dir: &Path, study: StudyId) -> anyhow::Result<Option<(BestModel, Vec<u8>)>> {
    let file = path(state_dir, study);
    match std::fs::read(&file) {
        Ok(bytes) => {
            let best =
                describe(&bytes).with_context(|| format!("{} is unreadable", file.display()))?;
            Ok(Some((best, bytes)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}

/// Keeps `net`, the model of `round` as this holder evaluated it, if its validation loss is
/// strictly lower than the kept one's. Returns whether it was kept.
pub fn offer(
    state_dir: &Path,
    study: StudyId,
    holder: &OrgId,
    round: u64,
    validation: &MetricSummary,
    net: &Net,
) -> anyhow::Result<bool> {
    if validation.n == 0 || !validation.loss.is_finite() {
        return Ok(false);
    }
    if let Some((best, _)) = kept(state_dir, study)? {
        if best.validation_loss <= validation.loss {
            return Ok(false);
        }
    }
    let extra = BTreeMap::from([
        ("checkpoint".to_owned(), "best_local".to_owned()),
        ("validation_loss".to_owned(), validation.loss.to_string()),
        ("validation_examples".to_owned(), validation.n.to_string()),
        (
            "model_spec".to_owned(),
            serde_json::to_string(net.spec()).context("model specification")?,
        ),
    ]);
    let (bytes, _) = fl_engine::save_safetensors_with(
        &net.parameters()?,
        &study.to_string(),
        round,
        Some(holder.as_str()),
        &extra,
    )?;
    let file = path(state_dir, study);
    let dir = file.parent().expect("a study directory");
    ehds_core::key_file::create_private_dir(dir)?;
    let tmp = file.with_extension("safetensors.tmp");
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, &file)?;
    Ok(true)
}

#[derive(clap::Args)]
pub struct ExportModelArgs {
    /// The node's state directory (`node run --state-dir`).
    #[arg(long, env = "EHDS_NODE_STATE_DIR")]
    pub state_dir: PathBuf,
    /// The study whose best local model to export.
    #[arg(long)]
    pub study: String,
    /// Where to write the safetensors file.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace `--out` if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `ehds-node export-model`: copies the kept best model out of the state directory
/// and prints what it is as JSON. Contacts no gateway.
pub fn export(args: ExportModelArgs) -> anyhow::Result<i32> {
    let study = StudyId::parse(&args.study).map_err(|e| anyhow::anyhow!(e.1))?;
    let Some((best, bytes)) = kept(&args.state_dir, study)? else {
        anyhow::bail!(
            "{} holds no best model of study {study}: this node has not evaluated a model of it",
            args.state_dir.display()
        );
    };
    if args.out.exists() && !args.force {
        anyhow::bail!("{} exists; pass --force to replace it", args.out.display());
    }
    std::fs::write(&args.out, &bytes).with_context(|| format!("writing {}", args.out.display()))?;
    println!("{}", serde_json::to_string_pretty(&best)?);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(n: usize, loss: f64) -> MetricSummary {
        let mut m: MetricSummary = serde_json::from_value(serde_json::json!({
            "n": n, "loss": 0.0, "accuracy": 0.0, "balanced_accuracy": 0.0,
            "auroc": null, "auprc": null, "f1": null
        }))
        .unwrap();
        m.loss = loss;
        m
    }

    #[test]
    fn keeps_only_strict_improvements_and_exports_a_rebuildable_model() {
        let dir = tempfile::tempdir().unwrap();
        let study = StudyId::new();
        let holder = OrgId::parse("hosp-a").unwrap();
        let spec = fl_engine::ModelSpec::logistic(3, 1);
        let net = Net::new(&spec, 1).unwrap();
        assert!(kept(dir.path(), study).unwrap().is_none());
        assert!(offer(dir.path(), study, &holder, 0, &summary(10, 0.7), &net).unwrap());
        // equal or worse: kept as it was (a repeated task changes nothing)
        let other = Net::new(&spec, 2).unwrap();
        assert!(!offer(dir.path(), study, &holder, 1, &summary(10, 0.7), &other).unwrap());
        assert!(!offer(dir.path(), study, &holder, 2, &summary(10, 0.9), &other).unwrap());
        // nothing to judge by
        assert!(!offer(dir.path(), study, &holder, 3, &summary(0, 0.1), &other).unwrap());
        assert!(!offer(dir.path(), study, &holder, 3, &summary(5, f64::NAN), &other).unwrap());
        assert!(offer(dir.path(), study, &holder, 4, &summary(10, 0.5), &other).unwrap());

        let out = dir.path().join("export.safetensors");
        let args = |force| ExportModelArgs {
            state_dir: dir.path().to_path_buf(),
            study: study.to_string(),
            out: out.clone(),
            force,
        };
        assert_eq!(export(args(false)).unwrap(), 0);
        let bytes = std::fs::read(&out).unwrap();
        let best = describe(&bytes).unwrap();
        assert_eq!(
            (best.round, best.validation_loss, best.site.as_deref()),
            (4, 0.5, Some("hosp-a"))
        );
        assert_eq!(best.parameters, 4);
        let (params, meta) = fl_engine::load_safetensors(&bytes).unwrap();
        assert_eq!(params, other.parameters().unwrap());
        let rebuilt: fl_engine::ModelSpec =
            serde_json::from_str(&meta.extra["model_spec"]).unwrap();
        let net = Net::with_parameters(&rebuilt, &params).unwrap();
        assert_eq!(net.parameters().unwrap(), params);
        // an existing file is replaced only with --force
        assert!(export(args(false)).is_err());
        assert_eq!(export(args(true)).unwrap(), 0);
        // another study has none
        let none = ExportModelArgs {
            study: StudyId::new().to_string(),
            ..args(true)
        };
        let err = export(none).unwrap_err().to_string();
        assert!(err.contains("holds no best model"), "{err}");
    }
}
