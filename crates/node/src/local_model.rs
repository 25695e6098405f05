//! A study's models on the holder's own data after the study, on its own node and without the
//! gateway: `ehds-node evaluate-model` scores a model (by default the last global model
//! the node received; FedMAP's tier 3, mu) on the holder's validation and test parts, and
//! `ehds-node fedmap-finetune` builds FedMAP's tier-2 model, mu fine-tuned on the
//! holder's training part with the learnt prior (Zhang et al., "FedMAP: Personalised federated
//! learning for real large-scale healthcare systems", arXiv:2405.19000).
//!
//! While it works a study's tasks the node keeps, in the study's private state directory,
//! what these commands need: the study as the gateway sent it, the subjects the permit
//! excluded at the last task's pinned registry version (so an offline run leaves out exactly
//! whom the study left out), and the last global model it received with the method's extras
//! (FedMAP's prior psi). The split, imputation and standardisation are the ones the node
//! trained with, so "validation" means the same rows it reported during the study.
use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use anyhow::Context;
use fl_engine::{
    data::SiteData,
    seeds::stream_seed,
    strategy::{FedMapClient, Site},
    train::{evaluate_with, steps_in, EvalOptions},
    FitIns, LossKind, MetricSummary, ModelSpec, Net, ParameterSet, StrategyConfig,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{agent::holder_stream, FeatureSpec, SiteRows, SplitPlan};
use ehds_core::{
    domain::{study::DecisionThreshold, OrgId, StudyId},
    wire::{split_extras, NodeStudy, EXTRAS_PREFIX},
};

const RECORD: &str = "study.json";
const GLOBAL: &str = "global.safetensors";

/// What the node keeps of a study to use its models offline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StudyRecord {
    pub data_holder: OrgId,
    pub study: NodeStudy,
    /// The opt-out registry version of the last task the node worked.
    pub registry_version: i64,
    /// Subjects the permit excluded at that version (never sent anywhere).
    pub excluded: BTreeSet<String>,
}

fn study_dir(state_dir: &Path, study: StudyId) -> PathBuf {
    state_dir.join(study.to_string())
}

fn write_atomically(file: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = file.parent().expect("a study directory");
    ehds_core::key_file::create_private_dir(dir)?;
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file)?;
    Ok(())
}

/// Keeps `record` and `ins` (the global model after round `model_round` with the method's
/// extras) unless a later round's model is already kept: a repeated older task changes
/// nothing.
pub fn remember(
    state_dir: &Path,
    study: StudyId,
    record: &StudyRecord,
    ins: &FitIns,
    model_round: u64,
) -> anyhow::Result<()> {
    if let Some((_, kept_round)) = kept_global(state_dir, study)? {
        if kept_round > model_round {
            return Ok(());
        }
    }
    let dir = study_dir(state_dir, study);
    write_atomically(&dir.join(RECORD), &serde_json::to_vec(record)?)?;
    let mut all = ins.params.clone();
    for (name, t) in ins.extras.iter() {
        all.insert(
            format!("{EXTRAS_PREFIX}{name}"),
            t.shape.clone(),
            t.values.clone(),
        )?;
    }
    let (bytes, _) = fl_engine::save_safetensors(&all, &study.to_string(), model_round, None)?;
    write_atomically(&dir.join(GLOBAL), &bytes)
}

/// The kept global model with its extras, and the round it is the aggregate of.
fn kept_global(state_dir: &Path, study: StudyId) -> anyhow::Result<Option<(FitIns, u64)>> {
    let file = study_dir(state_dir, study).join(GLOBAL);
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let (all, meta) = fl_engine::load_safetensors(&bytes)
        .with_context(|| format!("{} is unreadable", file.display()))?;
    let (params, extras) = split_extras(&all)?;
    Ok(Some((
        FitIns {
            round: meta.round,
            params,
            extras,
        },
        meta.round,
    )))
}

fn record(state_dir: &Path, study: StudyId) -> anyhow::Result<StudyRecord> {
    let file = study_dir(state_dir, study).join(RECORD);
    match std::fs::read(&file) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is unreadable", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "{} holds nothing of study {study}: this node has not worked a task of it",
            state_dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}

/// How `holder` splits its rows for `study`: the study's fractions, the seed of the study
/// and the holder (the tasks and every offline command pick the same rows).
pub fn split_plan(study: &NodeStudy, holder: &OrgId) -> SplitPlan {
    SplitPlan::new(
        study.validation_fraction,
        study.test_fraction,
        stream_seed(study.seed, holder_stream(holder), u64::MAX),
    )
}

/// The holder's data set of `study` as the node trains on it, and the model it trains: the
/// split, imputation and standardisation are seeded by the study and the holder, so every
/// task and every offline command sees the same rows in the same part; a FENDA-FL study's
/// local extractor also reads the holder's site-private columns ([`super::private`]).
pub fn site_data(
    study: &NodeStudy,
    holder: &OrgId,
    rows: &SiteRows,
) -> anyhow::Result<(SiteData, ModelSpec)> {
    let plan = split_plan(study, holder);
    let data = rows
        .tensors(&plan)?
        .site_data(holder.as_str(), rows.task, study.task)?;
    let shared = study.strategy.shared();
    let spec = match super::private::local_spec(&study.model, rows.private_columns.len(), &shared) {
        Ok(spec) => spec,
        Err(e) => {
            // the private features are an addition to the study's model: it trains without
            tracing::warn!("site-private features left out of this study: {e}");
            study.model.clone()
        }
    };
    if spec == study.model {
        return Ok((data, spec));
    }
    let data = super::private::with_private_columns(rows, data, &plan)?;
    Ok((data, spec))
}

/// The site of `study` for `holder` with its model `spec` before any training (the seed the
/// node's tasks use).
pub fn fresh_site(
    study: &NodeStudy,
    holder: &OrgId,
    data: SiteData,
    spec: &ModelSpec,
) -> anyhow::Result<Site> {
    Ok(Site::new(
        data,
        spec,
        study.train.clone(),
        stream_seed(study.seed, holder_stream(holder), 0),
    )?)
}

/// Where the holder's records are, as `node run` takes it.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordsArgs {
    /// The holder's records as FHIR R4: a Bulk Data export directory (NDJSON, optionally
    /// gzipped), an NDJSON file or a Bundle.
    #[arg(long, conflicts_with = "csv", required_unless_present = "csv")]
    pub fhir: Option<PathBuf>,
    /// The holder's records as a CSV extract.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// The holder's code map (as given to `node run`).
    #[arg(long, requires = "fhir")]
    pub code_map: Option<PathBuf>,
}

/// The study's record and the holder's data set: read through the study's feature
/// specification (the categories it declared, site-private features included), the subjects
/// the study excluded left out.
fn local_data(
    state_dir: &Path,
    study: StudyId,
    records: RecordsArgs,
) -> anyhow::Result<(StudyRecord, SiteData, ModelSpec)> {
    let record = record(state_dir, study)?;
    let source = super::check_cli::data_source(records.fhir, records.csv, records.code_map)?;
    let spec = FeatureSpec::from_json(&record.study.feature_spec.to_string())?;
    let mut rows = source.read_for_study(&spec, &record.study.categories)?;
    rows.exclude(&record.excluded);
    let (data, spec) = site_data(&record.study, &record.data_holder, &rows)?;
    Ok((record, data, spec))
}

/// A model's metrics on the holder's validation and test parts.
#[derive(Debug, Serialize)]
pub struct LocalScores {
    pub validation: MetricSummary,
    pub test: MetricSummary,
}

/// `net`'s metrics on the holder's validation and test parts, as the node reports them in its
/// tasks and `node evaluate-model` prints them: read at the study's decision threshold (fixed,
/// or chosen by the study's rule on this validation part, for this model), survival metrics
/// with the baseline hazard and censoring fitted on the training part.
pub fn evaluate_site(
    net: &Net,
    data: &SiteData,
    loss: &LossKind,
    threshold: Option<DecisionThreshold>,
) -> anyhow::Result<LocalScores> {
    let opts = EvalOptions {
        threshold: threshold.unwrap_or_default().at(net, &data.val)?,
        reference: Some(&data.train),
    };
    Ok(LocalScores {
        validation: evaluate_with(net, &data.val, loss, &opts)?,
        test: evaluate_with(net, &data.test, loss, &opts)?,
    })
}

fn scores(net: &Net, site: &Site, study: &NodeStudy) -> anyhow::Result<LocalScores> {
    evaluate_site(net, &site.data, &site.train.loss, study.threshold)
}

fn parse_study(text: &str) -> anyhow::Result<StudyId> {
    StudyId::parse(text).map_err(|e| anyhow::anyhow!(e.1))
}

fn refuse_existing(out: &Path, force: bool) -> anyhow::Result<()> {
    if out.exists() && !force {
        anyhow::bail!("{} exists; pass --force to replace it", out.display());
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct EvaluateModelArgs {
    /// The node's state directory (`node run --state-dir`).
    #[arg(long, env = "EHDS_NODE_STATE_DIR")]
    pub state_dir: PathBuf,
    /// The study whose model to evaluate.
    #[arg(long)]
    pub study: String,
    #[command(flatten)]
    pub records: RecordsArgs,
    /// A safetensors model of the study (the released model, `node export-model`'s or
    /// `node fedmap-finetune`'s file); without it, the last global model this node received.
    #[arg(long)]
    pub model: Option<PathBuf>,
}

/// What `node evaluate-model` prints.
#[derive(Debug, Serialize)]
pub struct EvaluationReport {
    pub study: String,
    pub site: String,
    /// `global` (the last global model the node received) or the file's path.
    pub model: String,
    /// The round the model is of, as its file says.
    pub round: u64,
    pub digest: String,
    #[serde(flatten)]
    pub scores: LocalScores,
}

/// `ehds-node evaluate-model`: scores a model of the study on the holder's own
/// validation and test parts and prints the metrics as JSON. Contacts no gateway.
pub fn evaluate_model(args: EvaluateModelArgs) -> anyhow::Result<i32> {
    let study = parse_study(&args.study)?;
    let (record, data, spec) = local_data(&args.state_dir, study, args.records)?;
    let (params, round, digest, model) = match &args.model {
        Some(file) => {
            let bytes =
                std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            let (params, meta) = fl_engine::load_safetensors(&bytes)
                .with_context(|| format!("{} is not a parameter file", file.display()))?;
            if meta.study != study.to_string() {
                anyhow::bail!(
                    "{} is a model of study {}, not of {study}",
                    file.display(),
                    meta.study
                );
            }
            (params, meta.round, meta.digest, file.display().to_string())
        }
        None => {
            let (ins, round) = kept_global(&args.state_dir, study)?
                .context("this node kept no global model of the study")?;
            let (_, digest) =
                fl_engine::save_safetensors(&ins.params, &study.to_string(), round, None)?;
            (ins.params, round, digest, "global".to_owned())
        }
    };
    let net = Net::with_parameters(&spec, &params).context(
        "the parameters do not make up this holder's model of the study (a personalised \
         method's shared part alone cannot be scored: export the node's own model with \
         `node export-model`)",
    )?;
    let site = fresh_site(&record.study, &record.data_holder, data, &spec)?;
    let report = EvaluationReport {
        study: study.to_string(),
        site: record.data_holder.to_string(),
        model,
        round,
        digest,
        scores: scores(&net, &site, &record.study)?,
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(0)
}

#[derive(clap::Args)]
pub struct FedMapFinetuneArgs {
    /// The node's state directory (`node run --state-dir`).
    #[arg(long, env = "EHDS_NODE_STATE_DIR")]
    pub state_dir: PathBuf,
    /// The FedMAP study whose global model to fine-tune.
    #[arg(long)]
    pub study: String,
    #[command(flatten)]
    pub records: RecordsArgs,
    /// Where to write the fine-tuned model (safetensors).
    #[arg(long)]
    pub out: PathBuf,
    /// Optimiser steps; default: the study's `fine_tune_steps`, else its local budget.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub steps: Option<u64>,
    /// Replace `--out` if it exists.
    #[arg(long)]
    pub force: bool,
}

/// What `node fedmap-finetune` prints.
#[derive(Debug, Serialize)]
pub struct FineTuneReport {
    pub study: String,
    pub site: String,
    /// The round whose global model mu was fine-tuned.
    pub from_round: u64,
    pub steps: usize,
    /// Mean task loss over the fine-tuning steps (training part).
    pub train_loss: f64,
    pub digest: String,
    pub out: String,
    #[serde(flatten)]
    pub scores: LocalScores,
}

/// `ehds-node fedmap-finetune`: FedMAP's tier 2 on the holder's node. Loads the last
/// global model mu and prior psi the node received, takes `--steps` steps of the study's
/// optimiser on the holder's training part (mean NLL + R(.; mu, psi), fresh moments), writes
/// the model with its validation and test metrics and prints them as JSON. Contacts no
/// gateway.
pub fn fedmap_finetune(args: FedMapFinetuneArgs) -> anyhow::Result<i32> {
    let study = parse_study(&args.study)?;
    refuse_existing(&args.out, args.force)?;
    let (record, data, spec) = local_data(&args.state_dir, study, args.records)?;
    let StrategyConfig::FedMap(config) = &record.study.strategy else {
        anyhow::bail!(
            "study {study} trains with {}, not FedMAP: only FedMAP learns a prior to fine-tune \
             with (use `node evaluate-model` or `node export-model`)",
            record.study.strategy.name()
        );
    };
    let (ins, from_round) = kept_global(&args.state_dir, study)?
        .context("this node kept no global model of the study")?;
    let mut site = fresh_site(&record.study, &record.data_holder, data, &spec)?;
    let steps = match (args.steps, config.fine_tune_steps) {
        (Some(s), _) => s as usize,
        (None, Some(s)) => s,
        (None, None) => steps_in(
            site.train.budget,
            site.data.train.len(),
            site.train.batch_size,
        ),
    };
    let client = FedMapClient::new(config.clone())?;
    // reproducible for this holder and round, apart from the node's tasks' streams
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(
        record.study.seed ^ 0xF1A7_2000,
        holder_stream(&record.data_holder),
        from_round,
    ));
    let report =
        client.fine_tune_from_prior(&mut site, &ins.params, &ins.extras, steps, &mut rng)?;
    let scores = scores(&site.net, &site, &record.study)?;
    let extra = BTreeMap::from([
        ("checkpoint".to_owned(), "fedmap_fine_tuned".to_owned()),
        ("steps".to_owned(), steps.to_string()),
        (
            "validation_loss".to_owned(),
            scores.validation.loss.to_string(),
        ),
        (
            "validation_examples".to_owned(),
            scores.validation.n.to_string(),
        ),
        (
            "model_spec".to_owned(),
            serde_json::to_string(site.net.spec()).context("model specification")?,
        ),
    ]);
    let params: ParameterSet = site.net.parameters()?;
    let (bytes, digest) = fl_engine::save_safetensors_with(
        &params,
        &study.to_string(),
        from_round,
        Some(record.data_holder.as_str()),
        &extra,
    )?;
    std::fs::write(&args.out, &bytes).with_context(|| format!("writing {}", args.out.display()))?;
    let out = FineTuneReport {
        study: study.to_string(),
        site: record.data_holder.to_string(),
        from_round,
        steps,
        train_loss: report.mean_loss,
        digest,
        out: args.out.display().to_string(),
        scores,
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(0)
}
