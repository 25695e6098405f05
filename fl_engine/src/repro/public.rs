//! Reproductions on real data sets that ship with public Python packages: the survival
//! studies GBSG2 and WHAS500 (scikit-survival) and the 8x8 handwritten digits
//! (scikit-learn). `scripts/convert-public-datasets.py` converted them once into the files
//! under `fl_engine/data/{gbsg2,whas500,digits}` (see each folder's README for source and
//! licence); they are compiled in, so no run reads a path outside the binary.
//!
//! Every file fixes a 60/20/20 train/validation/test assignment of its rows, so the pooled
//! reference fits (lifelines, in `cox_reference.json`) and every federated run see exactly the
//! same training and test rows, however the rows are dealt to sites.
//!
//! Federated Cox regression: each site optimises the Cox partial likelihood (Cox 1972,
//! Breslow ties; [`LossKind::Cox`]) over its own risk sets and the strategy combines the
//! coefficients, so risk sets never span sites.
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use super::{config_with, Method, Protocol, Setting};
use crate::data::{dirichlet_label_skew, Dataset, SiteData, Standardizer};
use crate::error::{EngineError, Result};
use crate::metrics::concordance_index;
use crate::model::{Backbone, CnnConfig, ModelSpec};
use crate::seeds::stream_seed;
use crate::sim::Simulation;
use crate::train::{Budget, LossKind, OptimizerConfig};

/// A bundled data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicData {
    /// German Breast Cancer Study Group 2: 686 patients, recurrence-free survival, 9 features.
    Gbsg2,
    /// Worcester Heart Attack Study: 500 patients, all-cause death, 14 features.
    Whas500,
    /// scikit-learn's digits: 1,797 8x8 images of the digits 0-9.
    Digits,
}

const GBSG2_CSV: &str = include_str!("../../data/gbsg2/gbsg2.csv");
const GBSG2_REF: &str = include_str!("../../data/gbsg2/cox_reference.json");
const WHAS500_CSV: &str = include_str!("../../data/whas500/whas500.csv");
const WHAS500_REF: &str = include_str!("../../data/whas500/cox_reference.json");
const DIGITS_CSV: &str = include_str!("../../data/digits/digits.csv");

/// Side of the digit images and the number of classes.
pub const DIGIT_SIDE: usize = 8;
pub const DIGIT_CLASSES: usize = 10;
/// Largest pixel intensity of the digits (images are scaled to [0, 1] by it).
const DIGIT_MAX: f32 = 16.0;

impl PublicData {
    pub fn name(&self) -> &'static str {
        match self {
            PublicData::Gbsg2 => "GBSG2",
            PublicData::Whas500 => "WHAS500",
            PublicData::Digits => "digits",
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gbsg2" => Ok(PublicData::Gbsg2),
            "whas500" => Ok(PublicData::Whas500),
            "digits" => Ok(PublicData::Digits),
            _ => Err(EngineError::InvalidConfig(format!(
                "unknown data set `{s}` (expected gbsg2, whas500 or digits)"
            ))),
        }
    }

    /// Every row with its fixed set and group.
    pub fn load(&self) -> Result<Rows> {
        match self {
            PublicData::Gbsg2 => parse_survival(GBSG2_CSV),
            PublicData::Whas500 => parse_survival(WHAS500_CSV),
            PublicData::Digits => parse_digits(DIGITS_CSV),
        }
    }

    /// The pooled Cox reference of a survival data set.
    pub fn cox_reference(&self) -> Result<CoxReference> {
        let text = match self {
            PublicData::Gbsg2 => GBSG2_REF,
            PublicData::Whas500 => WHAS500_REF,
            PublicData::Digits => {
                return Err(EngineError::InvalidConfig(
                    "digits is not a survival data set".into(),
                ))
            }
        };
        serde_json::from_str(text)
            .map_err(|e| EngineError::Data(format!("{} cox_reference.json: {e}", self.name())))
    }
}

/// One fit of the pooled reference (`cox_reference.json`).
#[derive(Clone, Debug, Deserialize)]
pub struct CoxFit {
    pub coefficients: std::collections::BTreeMap<String, f64>,
    pub train_c_index: f64,
    pub test_c_index: f64,
}

/// The pooled Cox models the conversion script fitted on the `train` rows.
#[derive(Clone, Debug, Deserialize)]
pub struct CoxReference {
    pub versions: std::collections::BTreeMap<String, String>,
    pub features: Vec<String>,
    /// lifelines' CoxPHFitter (Efron ties, the only rule lifelines implements).
    pub lifelines_efron: CoxFit,
    /// scikit-survival's CoxPHSurvivalAnalysis with Breslow ties (the engine's rule).
    pub sksurv_breslow: CoxFit,
}

/// Which of the fixed splits a row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Train,
    Val,
    Test,
}

/// All rows of a data set, not yet dealt to sites.
#[derive(Clone, Debug)]
pub struct Rows {
    pub data: Dataset,
    pub part: Vec<Part>,
    /// The grouping column: GBSG2's tumour grade, WHAS500's age quartile, the digit.
    pub group: Vec<String>,
}

fn parse_part(s: &str) -> Result<Part> {
    match s {
        "train" => Ok(Part::Train),
        "val" => Ok(Part::Val),
        "test" => Ok(Part::Test),
        _ => Err(EngineError::Data(format!("unknown set `{s}`"))),
    }
}

fn number(s: &str, line: usize) -> Result<f32> {
    s.trim()
        .parse::<f32>()
        .map_err(|e| EngineError::Data(format!("line {line}: `{s}`: {e}")))
}

/// `group,set,<features...>,time,event`.
fn parse_survival(text: &str) -> Result<Rows> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| EngineError::Data("empty file".into()))?
        .split(',')
        .collect();
    let d = header.len().saturating_sub(4);
    if d == 0 || header[..2] != ["group", "set"] || header[header.len() - 2..] != ["time", "event"]
    {
        return Err(EngineError::Data(format!("unexpected header {header:?}")));
    }
    let (mut x, mut time, mut event, mut part, mut group) =
        (vec![], vec![], vec![], vec![], vec![]);
    for (i, line) in lines.enumerate() {
        let cols: Vec<&str> = line.split(',').collect();
        if cols.len() != header.len() {
            return Err(EngineError::Data(format!("line {}: {line}", i + 2)));
        }
        group.push(cols[0].to_string());
        part.push(parse_part(cols[1])?);
        for c in &cols[2..2 + d] {
            x.push(number(c, i + 2)?);
        }
        time.push(number(cols[2 + d], i + 2)?);
        event.push(number(cols[3 + d], i + 2)? == 1.0);
    }
    Ok(Rows {
        data: Dataset::survival(d, x, &time, &event)?,
        part,
        group,
    })
}

/// `set,label,p0..p63`; intensities scaled to [0, 1].
fn parse_digits(text: &str) -> Result<Rows> {
    let d = DIGIT_SIDE * DIGIT_SIDE;
    let (mut x, mut y, mut part, mut group) = (vec![], vec![], vec![], vec![]);
    for (i, line) in text.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        if cols.len() != d + 2 {
            return Err(EngineError::Data(format!("line {}: {line}", i + 1)));
        }
        part.push(parse_part(cols[0])?);
        let label = number(cols[1], i + 1)? as u32;
        if label as usize >= DIGIT_CLASSES {
            return Err(EngineError::Data(format!("line {}: label {label}", i + 1)));
        }
        y.push(label);
        group.push(label.to_string());
        for c in &cols[2..] {
            x.push(number(c, i + 1)? / DIGIT_MAX);
        }
    }
    Ok(Rows {
        data: Dataset::new(d, x, y)?,
        part,
        group,
    })
}

/// How rows are dealt to sites.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Split {
    /// Every site gets a uniformly random share (redrawn per seed).
    Iid { sites: usize },
    /// One site per distinct value of the group column (GBSG2: tumour grade).
    Groups,
    /// Dirichlet(alpha) skew over the group column (Hsu et al. 2019, arXiv:1909.06335), the
    /// group taken as the class (WHAS500: age quartile); redrawn per seed.
    Dirichlet { sites: usize, alpha: f64 },
    /// The classes in two halves (digits 0-4 and 5-9), each half dealt at random to
    /// `sites_per_half` sites: no site ever sees a class of the other half.
    DisjointLabels { sites_per_half: usize },
    /// Everything in one site (the Central baseline).
    Pooled,
}

impl Split {
    pub fn label(&self) -> String {
        match self {
            Split::Iid { sites } => format!("IID, {sites} sites"),
            Split::Groups => "one site per group".into(),
            Split::Dirichlet { sites, alpha } => format!("Dirichlet({alpha}), {sites} sites"),
            Split::DisjointLabels { sites_per_half } => {
                format!("labels 0-4 / 5-9, {} sites", 2 * sites_per_half)
            }
            Split::Pooled => "pooled".into(),
        }
    }
}

/// Fewest rows a Dirichlet site keeps (so each of its sets has a few rows).
const MIN_ROWS_PER_SITE: usize = 40;

impl Rows {
    /// Row indices of every site with its name.
    fn deal(&self, split: Split, seed: u64) -> Result<Vec<(String, Vec<usize>)>> {
        let n = self.data.len();
        let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(seed, 0x5917, 0));
        let chunks = |rows: &mut Vec<usize>, k: usize, rng: &mut ChaCha8Rng| {
            rows.shuffle(rng);
            (0..k)
                .map(|j| rows[j * rows.len() / k..(j + 1) * rows.len() / k].to_vec())
                .collect::<Vec<_>>()
        };
        Ok(match split {
            Split::Pooled => vec![("central".into(), (0..n).collect())],
            Split::Iid { sites } if sites > 0 => {
                // each fixed set dealt on its own so every site has train, val and test rows
                let mut out = vec![Vec::new(); sites];
                for part in [Part::Train, Part::Val, Part::Test] {
                    let mut rows: Vec<usize> = (0..n).filter(|&i| self.part[i] == part).collect();
                    for (k, c) in chunks(&mut rows, sites, &mut rng).into_iter().enumerate() {
                        out[k].extend(c);
                    }
                }
                out.into_iter()
                    .enumerate()
                    .map(|(k, r)| (format!("site-{k}"), r))
                    .collect()
            }
            Split::Groups => {
                let mut names: Vec<&String> = self.group.iter().collect();
                names.sort();
                names.dedup();
                names
                    .into_iter()
                    .map(|g| (g.clone(), (0..n).filter(|&i| &self.group[i] == g).collect()))
                    .collect()
            }
            Split::Dirichlet { sites, alpha } => {
                let mut names: Vec<&String> = self.group.iter().collect();
                names.sort();
                names.dedup();
                let class: Vec<u32> = self
                    .group
                    .iter()
                    .map(|g| names.iter().position(|n| *n == g).unwrap_or(0) as u32)
                    .collect();
                let seed = stream_seed(seed, sites as u64, alpha.to_bits());
                dirichlet_label_skew(&class, sites, alpha, MIN_ROWS_PER_SITE, seed)?
                    .into_iter()
                    .enumerate()
                    .map(|(k, r)| (format!("site-{k}"), r))
                    .collect()
            }
            Split::DisjointLabels { sites_per_half } if sites_per_half > 0 => {
                let labels = self.data.labels();
                let mut out = Vec::new();
                for (h, classes) in [0u32..5, 5u32..10].into_iter().enumerate() {
                    let mut per_site = vec![Vec::new(); sites_per_half];
                    for part in [Part::Train, Part::Val, Part::Test] {
                        let mut rows: Vec<usize> = (0..n)
                            .filter(|&i| self.part[i] == part && classes.contains(&labels[i]))
                            .collect();
                        for (k, c) in chunks(&mut rows, sites_per_half, &mut rng)
                            .into_iter()
                            .enumerate()
                        {
                            per_site[k].extend(c);
                        }
                    }
                    for (k, r) in per_site.into_iter().enumerate() {
                        out.push((format!("{}-{k}", ["0-4", "5-9"][h]), r));
                    }
                }
                out
            }
            _ => {
                return Err(EngineError::InvalidConfig(format!(
                    "split {split:?} needs at least one site"
                )))
            }
        })
    }

    /// The sites of `split` for run `seed`, each with its rows of the fixed train, validation
    /// and test sets; `standardise` z-scores every site with its own training rows' statistics.
    pub fn sites(&self, split: Split, seed: u64, standardise: bool) -> Result<Vec<SiteData>> {
        self.deal(split, seed)?
            .into_iter()
            .map(|(name, rows)| {
                let pick = |p: Part| {
                    let idx: Vec<usize> = rows
                        .iter()
                        .copied()
                        .filter(|&i| self.part[i] == p)
                        .collect();
                    self.data.subset(&idx)
                };
                let (train, val, test) = (pick(Part::Train), pick(Part::Val), pick(Part::Test));
                if train.is_empty() || val.is_empty() || test.is_empty() {
                    return Err(EngineError::Data(format!(
                        "site `{name}` lacks training, validation or test rows"
                    )));
                }
                if !standardise {
                    return Ok(SiteData {
                        name,
                        train,
                        val,
                        test,
                    });
                }
                let s = Standardizer::fit(&train)?;
                Ok(SiteData {
                    name,
                    train: s.apply(&train)?,
                    val: s.apply(&val)?,
                    test: s.apply(&test)?,
                })
            })
            .collect()
    }
}

/// The local work of a reproduction: rounds, local steps, batch size and learning rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    pub rounds: u64,
    pub steps: usize,
    pub batch_size: usize,
    pub lr: f64,
    /// Filters of the digit CNN's first stage (the second has twice as many); ignored by the
    /// survival studies.
    pub cnn_width: usize,
}

/// The CNN of the digit studies: a stem and two residual stages of `width` and `2 width`
/// filters, GroupNorm with groups of 4 channels (`width` a multiple of 4).
pub fn digits_cnn(width: usize) -> Backbone {
    Backbone::Cnn(CnnConfig {
        channels: 1,
        height: DIGIT_SIDE,
        width: DIGIT_SIDE,
        stages: vec![width, 2 * width],
        groups: (width / 4).max(1),
    })
}

/// The model `method` trains on `data`: a linear Cox model (one risk score) for the survival
/// sets; for digits the CNN, split the way the method needs (FedPer: shared body, local head;
/// FENDA-FL: a global and a local CNN; APFL: twins).
pub fn model_for(method: Method, data: PublicData, inputs: usize, cnn_width: usize) -> ModelSpec {
    if data != PublicData::Digits {
        return ModelSpec::logistic(inputs, 1);
    }
    let body = digits_cnn(cnn_width);
    let outputs = DIGIT_CLASSES;
    match method {
        Method::FedPer | Method::Hpfl => ModelSpec::BackboneHeadNet { body, outputs },
        Method::FendaFl | Method::PerFcl => ModelSpec::BackboneFenda {
            global: body.clone(),
            local: body,
            outputs,
        },
        Method::Apfl => ModelSpec::BackboneApfl {
            twin: body,
            outputs,
            alpha: 0.5,
        },
        _ => ModelSpec::BackboneNet { body, outputs },
    }
}

/// What one run scores: over the whole test set, each row scored by its own site's model at
/// the method's checkpoint ([`Method::checkpoint`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    /// Survival: Harrell's C-index over all test rows pooled. Digits: test accuracy.
    pub pooled: f64,
    /// Uniform mean over sites of each site's own test metric (C-index or accuracy).
    pub site_mean: f64,
}

/// One run of `method` on `data` dealt by `split`. Central trains one model on the pooled
/// sites doing the federation's total work per round (`sites_for_work` sites x `work.steps`).
pub fn run(
    method: Method,
    data: PublicData,
    rows: &Rows,
    split: Split,
    work: Work,
    sites_for_work: usize,
    seed: u64,
) -> Result<Score> {
    let survival = data != PublicData::Digits;
    let split = if method == Method::Central {
        Split::Pooled
    } else {
        split
    };
    let sites = rows.sites(split, seed, survival)?;
    let protocol = Protocol {
        rounds: work.rounds,
        local_steps: work.steps,
        batch_size: work.batch_size,
        ..Protocol::default()
    };
    let setting = Setting {
        lr: work.lr,
        knob: method.default_knob(),
    };
    // the method's strategy and its defaults as in the Heart-Disease study; model, loss and
    // optimiser for this task
    let mut cfg = config_with(method, &protocol, seed, setting);
    cfg.study = format!("{}/{}", data.name(), method.name());
    cfg.model = model_for(method, data, rows.data.n_features(), work.cnn_width);
    cfg.train.loss = if survival {
        LossKind::Cox
    } else {
        LossKind::CrossEntropy {
            class_weights: None,
        }
    };
    cfg.train.budget = Budget::Steps(match method {
        Method::Central => work.steps * sites_for_work,
        _ => work.steps,
    });
    // Adam without weight decay, so the Cox fit targets the unpenalised partial likelihood
    // the reference maximises; plain SGD where the method needs it (SCAFFOLD)
    if matches!(cfg.train.optimizer, OptimizerConfig::AdamW { .. }) {
        cfg.train.optimizer = OptimizerConfig::adam(work.lr);
    }
    let kind = method.checkpoint();
    let tests: Vec<Dataset> = sites.iter().map(|s| s.test.clone()).collect();
    let mut sim = Simulation::new(cfg, sites)?;
    sim.run()?;
    let per_site = sim.test(kind)?;
    let site_metric: Vec<f64> = per_site
        .iter()
        .filter_map(|m| {
            if survival {
                m.c_index
            } else {
                Some(m.accuracy)
            }
        })
        .collect();
    let site_mean = site_metric.iter().sum::<f64>() / site_metric.len().max(1) as f64;
    let pooled = if survival {
        let (mut risk, mut time, mut event) = (vec![], vec![], vec![]);
        for (k, test) in tests.iter().enumerate() {
            let net = sim.checkpoint_net(kind, k)?;
            let x = net.input(test.features(), test.len(), test.n_features())?;
            let r = net.forward(&x, None)?.flatten_all()?.to_vec1::<f32>()?;
            risk.extend(r.into_iter().map(f64::from));
            let (t, e) = test.survival_targets().unwrap_or_default();
            time.extend(t);
            event.extend(e);
        }
        concordance_index(&risk, &time, &event).unwrap_or(f64::NAN)
    } else {
        let n: usize = per_site.iter().map(|m| m.n).sum();
        per_site
            .iter()
            .map(|m| m.accuracy * m.n as f64)
            .sum::<f64>()
            / n.max(1) as f64
    };
    Ok(Score { pooled, site_mean })
}
