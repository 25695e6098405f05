//! The data holder's own guardrails (docs/node-policy.md): which tasks its node accepts,
//! whatever the gateway sends. A node outside development mode runs only with a policy, and
//! the policy accepts only what it lists (default deny).
//!
//! The node keeps its own privacy accountant per permit: before it trains, it composes the
//! round's mechanism (as the study's plan states it) with everything it already released under
//! that permit, across studies, and refuses a round that would take the permit past the
//! holder's own ceiling. Each decision, accepted or refused and why, goes to the node's log
//! (`super::node_log`).
//!
//! What a policy can and cannot establish: record-level DP runs on the node itself, so its
//! accounting is the node's own. Under client-level DP with the noise added at the gateway,
//! the node checks the plan it is told. Under secure aggregation with distributed DP the node
//! clips and adds its own share of the noise, checks that the plan it is sent is one the
//! mechanism derives, and counts the mechanism for the plan's minimum number of survivors;
//! that the other holders add theirs is what it trusts (docs/threat-model.md).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use ehds_core::domain::study::{epsilon_of_rounds, DpLevel, DpPlan, RoundMechanism, TaskKind};
use ehds_core::domain::{DataCategory, PermitId, Purpose};
use ehds_core::wire::{NodeTask, StatisticsTask};

/// `*` in a list: anything.
const ANY: &str = "*";

/// The name under which `accept.methods` lists statistics tasks (Art. 69).
pub const STATISTICS_METHOD: &str = "statistics";

/// The policy file (TOML).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePolicy {
    #[serde(default)]
    pub accept: Accept,
    #[serde(default)]
    pub privacy: Privacy,
}

/// What the node works for. Empty lists accept nothing.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accept {
    /// Permit ids, or `*`.
    #[serde(default)]
    pub permits: Vec<String>,
    /// Art. 53 purposes (`scientific_research`, ...), or `*`.
    #[serde(default)]
    pub purposes: Vec<String>,
    /// Art. 51 categories (`ehr_data`, ...), or `*`: a study must read only these.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Methods (`fedavg`, `ditto`, ...), or `*`.
    #[serde(default)]
    pub methods: Vec<String>,
}

/// The holder's privacy floor.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Privacy {
    /// Refuse studies without formal differential privacy.
    #[serde(default = "yes")]
    pub require_formal_dp: bool,
    /// Smallest noise multiplier accepted (client- or record-level).
    #[serde(default)]
    pub min_noise_multiplier: f64,
    /// Most epsilon (at the permit's delta) this holder's releases under one permit may add up
    /// to, over all its studies, by the node's own accounting.
    pub max_epsilon_per_permit: Option<f64>,
    /// Accept only studies run with secure aggregation.
    #[serde(default)]
    pub require_secure_aggregation: bool,
}

fn yes() -> bool {
    true
}

impl Default for Privacy {
    fn default() -> Self {
        Self {
            require_formal_dp: true,
            min_noise_multiplier: 0.0,
            max_epsilon_per_permit: None,
            require_secure_aggregation: false,
        }
    }
}

impl NodePolicy {
    /// Reads and checks a policy file: unknown keys, purposes, categories and methods are
    /// refused here, not when a task arrives.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        use figment::providers::{Format, Toml};
        anyhow::ensure!(path.exists(), "node policy {} not found", path.display());
        let policy: NodePolicy = figment::Figment::from(Toml::file(path))
            .extract()
            .with_context(|| format!("node policy {}", path.display()))?;
        policy
            .check()
            .with_context(|| format!("node policy {}", path.display()))?;
        Ok(policy)
    }

    fn check(&self) -> anyhow::Result<()> {
        let a = &self.accept;
        for p in a.permits.iter().filter(|p| *p != ANY) {
            PermitId::parse(p)
                .map_err(|_| anyhow::anyhow!("accept.permits: `{p}` is not a permit id"))?;
        }
        for p in a.purposes.iter().filter(|p| *p != ANY) {
            Purpose::parse(p)
                .map_err(|_| anyhow::anyhow!("accept.purposes: `{p}` is not an Art. 53 purpose"))?;
        }
        for c in a.categories.iter().filter(|c| *c != ANY) {
            DataCategory::parse(c).map_err(|_| {
                anyhow::anyhow!("accept.categories: `{c}` is not an Art. 51 category")
            })?;
        }
        for m in a.methods.iter().filter(|m| *m != ANY) {
            anyhow::ensure!(
                fl_engine::StrategyConfig::named(m).is_some(),
                "accept.methods: `{m}` is not a method"
            );
        }
        let p = &self.privacy;
        anyhow::ensure!(
            p.min_noise_multiplier.is_finite() && p.min_noise_multiplier >= 0.0,
            "privacy.min_noise_multiplier must be a number >= 0"
        );
        if let Some(e) = p.max_epsilon_per_permit {
            anyhow::ensure!(
                e.is_finite() && e > 0.0,
                "privacy.max_epsilon_per_permit must be a number > 0"
            );
        }
        Ok(())
    }

    /// Development mode without a policy file: every task is accepted (and still logged).
    pub fn accept_everything() -> Self {
        let any = || vec![ANY.to_owned()];
        Self {
            accept: Accept {
                permits: any(),
                purposes: any(),
                categories: any(),
                methods: any(),
            },
            privacy: Privacy {
                require_formal_dp: false,
                ..Privacy::default()
            },
        }
    }
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == ANY || v == value)
}

/// Why a task was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Stable code, as in the node log.
    pub code: &'static str,
    pub reason: String,
}

fn refuse(code: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        code,
        reason: reason.into(),
    }
}

/// The node's decision on a task, with the permit's epsilon by the node's accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// Epsilon of this holder's releases under the permit once this task's round counts.
    pub permit_epsilon: f64,
}

/// What the node has released, per permit: the mechanisms of the rounds it trained, and the
/// tasks already counted (a task worked twice after a restart counts once).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    /// By permit id.
    permits: BTreeMap<String, PermitLedger>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct PermitLedger {
    delta: f64,
    /// Sampled-Gaussian rounds (central or DP-SGD) and distributed discrete Gaussian rounds,
    /// composed together under Rényi DP.
    rounds: Vec<RoundMechanism>,
    tasks: BTreeSet<String>,
}

impl PermitLedger {
    fn epsilon_with(&self, next: Option<&RoundMechanism>, delta: f64) -> anyhow::Result<f64> {
        let mut rounds = self.rounds.clone();
        rounds.extend(next.copied());
        epsilon_of_rounds(&rounds, delta)
    }
}

/// The policy and the ledger, kept in the node's state directory.
pub struct Guard {
    policy: NodePolicy,
    ledger_file: PathBuf,
    ledger: Ledger,
}

impl Guard {
    pub fn new(policy: NodePolicy, state_dir: &Path) -> anyhow::Result<Self> {
        let ledger_file = state_dir.join("privacy-ledger.json");
        let ledger = match std::fs::read(&ledger_file) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("reading {}", ledger_file.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ledger::default(),
            Err(e) => return Err(e).context(format!("reading {}", ledger_file.display())),
        };
        Ok(Self {
            policy,
            ledger_file,
            ledger,
        })
    }

    /// Whether the node works `task`; an accepted training task is counted in the ledger
    /// (before the update is sent, so a crash can only over-count).
    pub fn admit(&mut self, task: &NodeTask) -> anyhow::Result<Result<Admission, Refusal>> {
        let decision = self.decide(task)?;
        if let (Ok(_), TaskKind::Fit) = (&decision, task.kind) {
            if let Some(m) = round_mechanism(task)? {
                let entry = self
                    .ledger
                    .permits
                    .entry(task.permit_id.to_string())
                    .or_default();
                if entry.tasks.insert(task.task_id.to_string()) {
                    entry.delta = task.study.dp.map_or(entry.delta, |p| p.delta);
                    entry.rounds.push(m);
                    self.save()?;
                }
            }
        }
        Ok(decision)
    }

    /// The policy's decision on a statistics task: its permit, purpose and categories listed
    /// in `accept`, and `statistics` among the accepted methods (a holder opts in to answering
    /// statistics as to any method). A statistics task releases only output-checked aggregates,
    /// through the gateway; its differential privacy, when declared, is charged to the permit
    /// there.
    pub fn admit_statistics(&self, task: &StatisticsTask) -> Result<(), Refusal> {
        let a = &self.policy.accept;
        if !listed(&a.permits, &task.permit_id.to_string()) {
            return Err(refuse(
                "permit_not_accepted",
                format!("permit {} is not in accept.permits", task.permit_id),
            ));
        }
        if !listed(&a.purposes, task.purpose.as_str()) {
            return Err(refuse(
                "purpose_not_accepted",
                format!(
                    "purpose {} is not in accept.purposes",
                    task.purpose.as_str()
                ),
            ));
        }
        if let Some(c) = task
            .categories
            .iter()
            .find(|c| !listed(&a.categories, c.as_str()))
        {
            return Err(refuse(
                "category_not_accepted",
                format!("category {} is not in accept.categories", c.as_str()),
            ));
        }
        if !listed(&a.methods, STATISTICS_METHOD) {
            return Err(refuse(
                "method_not_accepted",
                "statistics are not in accept.methods",
            ));
        }
        Ok(())
    }

    fn decide(&self, task: &NodeTask) -> anyhow::Result<Result<Admission, Refusal>> {
        let (a, p, s) = (&self.policy.accept, &self.policy.privacy, &task.study);
        if !listed(&a.permits, &task.permit_id.to_string()) {
            return Ok(Err(refuse(
                "permit_not_accepted",
                format!("permit {} is not in accept.permits", task.permit_id),
            )));
        }
        let purpose = s.purpose.as_str();
        if !listed(&a.purposes, purpose) {
            return Ok(Err(refuse(
                "purpose_not_accepted",
                format!("purpose {purpose} is not in accept.purposes"),
            )));
        }
        for c in &s.categories {
            if !listed(&a.categories, c.as_str()) {
                return Ok(Err(refuse(
                    "category_not_accepted",
                    format!("category {} is not in accept.categories", c.as_str()),
                )));
            }
        }
        let method = s.strategy.request_name();
        if !listed(&a.methods, &method) {
            return Ok(Err(refuse(
                "method_not_accepted",
                format!("method {method} is not in accept.methods"),
            )));
        }
        if p.require_secure_aggregation && s.secure_aggregation.is_none() {
            return Ok(Err(refuse(
                "secure_aggregation_required",
                "the policy requires secure aggregation, which this study does not run",
            )));
        }
        let plan = match (
            &s.dp,
            p.require_formal_dp
                || p.min_noise_multiplier > 0.0
                || p.max_epsilon_per_permit.is_some(),
        ) {
            (Some(plan), _) => *plan,
            (None, false) => {
                return Ok(Ok(Admission {
                    permit_epsilon: self.spent(task)?,
                }))
            }
            (None, true) => {
                return Ok(Err(refuse(
                    "privacy_plan_unknown",
                    "the gateway did not state the study's privacy plan",
                )))
            }
        };
        if plan.level == DpLevel::NoFormalDp {
            if p.require_formal_dp {
                return Ok(Err(refuse(
                    "formal_dp_required",
                    "the study runs without formal differential privacy",
                )));
            }
            return Ok(Ok(Admission {
                permit_epsilon: self.spent(task)?,
            }));
        }
        if let Err(why) = distributed_consistent(&plan, s.secure_aggregation.is_some()) {
            return Ok(Err(refuse("privacy_plan_inconsistent", why)));
        }
        // under distributed DP the noise the shares of the minimum survivors add up to, by the
        // plan this node will itself apply (checked above to derive from it)
        let multiplier = plan.noise_multiplier;
        if multiplier < p.min_noise_multiplier {
            return Ok(Err(refuse(
                "noise_below_minimum",
                format!(
                    "noise multiplier {multiplier} is below privacy.min_noise_multiplier {}",
                    p.min_noise_multiplier
                ),
            )));
        }
        let ledger = self.ledger.permits.get(&task.permit_id.to_string());
        let already = ledger.is_some_and(|l| l.tasks.contains(&task.task_id.to_string()));
        let next = match (task.kind, already) {
            (TaskKind::Fit, false) => round_mechanism(task)?,
            _ => None,
        };
        let empty = PermitLedger::default();
        let permit_epsilon = ledger
            .unwrap_or(&empty)
            .epsilon_with(next.as_ref(), plan.delta)?;
        if let Some(max) = p.max_epsilon_per_permit {
            if permit_epsilon > max {
                return Ok(Err(refuse(
                    "node_budget_exhausted",
                    format!(
                        "this round would take permit {} to epsilon {permit_epsilon:.4} by the node's accounting, over privacy.max_epsilon_per_permit {max}",
                        task.permit_id
                    ),
                )));
            }
        }
        Ok(Ok(Admission { permit_epsilon }))
    }

    /// Epsilon already released under the task's permit.
    fn spent(&self, task: &NodeTask) -> anyhow::Result<f64> {
        match self.ledger.permits.get(&task.permit_id.to_string()) {
            Some(l) => l.epsilon_with(None, l.delta),
            None => Ok(0.0),
        }
    }

    fn save(&self) -> anyhow::Result<()> {
        let tmp = self.ledger_file.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&self.ledger)?)?;
        std::fs::rename(&tmp, &self.ledger_file)?;
        Ok(())
    }
}

/// Whether a formal plan's distributed part is what this node will apply: present exactly
/// for client-level DP under secure aggregation (else the holder would mask an unnoised
/// update, or noise one the gateway sees in clear), derived from its own parameters by the
/// mechanism (so the noise share, granularity and sensitivity are not the gateway's word), and
/// for the plan's clip and noise.
fn distributed_consistent(plan: &DpPlan, secure: bool) -> Result<(), String> {
    let expected = secure && plan.level == DpLevel::Client;
    match (&plan.distributed, expected) {
        (None, false) => Ok(()),
        (None, true) => Err(
            "client-level DP under secure aggregation needs the holders' noise plan, which the \
             gateway did not send"
                .into(),
        ),
        (Some(_), false) => Err(
            "a distributed noise plan comes only with client-level DP under secure aggregation"
                .into(),
        ),
        (Some(d), true) => {
            let derived = secagg::ddg::mechanism::DdgPlan::new(d.params)
                .map_err(|e| format!("the distributed noise plan is invalid: {e}"))?;
            if derived != *d {
                return Err(
                    "the distributed noise plan is not the one its parameters derive".into(),
                );
            }
            let central = plan.noise_multiplier * plan.clip_norm;
            if d.params.clip != plan.clip_norm
                || (d.params.central_stddev - central).abs() > 1e-9 * central
            {
                return Err(
                    "the distributed noise plan's clip or noise differs from the study's".into(),
                );
            }
            Ok(())
        }
    }
}

/// The mechanism one training round of the task releases, by the study's plan.
fn round_mechanism(task: &NodeTask) -> anyhow::Result<Option<RoundMechanism>> {
    Ok(match &task.study.dp {
        Some(plan) => DpPlan::round_mechanism(plan)?,
        None => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ehds_core::domain::study::{DpLevel, TaskKind};
    use ehds_core::domain::{OrgId, StudyId, TaskId};

    /// A fit task of a FedAvg study under client-level DP with noise multiplier 1 (one
    /// Gaussian mechanism per round at sampling rate 1), delta 1e-5.
    fn task(permit: PermitId) -> NodeTask {
        let spec = ehds_core::domain::study_request::fixtures::spec(3);
        NodeTask {
            task_id: TaskId::new(),
            study_id: StudyId::new(),
            permit_id: permit,
            data_holder: OrgId::parse("hosp-1").unwrap(),
            round: 1,
            kind: TaskKind::Fit,
            deadline: chrono::Utc::now(),
            registry_version: 0,
            study: (&spec).into(),
        }
    }

    /// A fit task of a FedAvg study of four holders under secure aggregation with client-level
    /// DP as distributed DP (clip 1, noise multiplier 1, for `min_survivors`).
    fn distributed_task(permit: PermitId, min_survivors: u32) -> NodeTask {
        let spec = ehds_core::domain::study_request::fixtures::distributed_spec(min_survivors);
        NodeTask {
            study: (&spec).into(),
            ..task(permit)
        }
    }

    fn policy(toml: &str) -> anyhow::Result<NodePolicy> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.toml");
        std::fs::write(&file, toml).unwrap();
        NodePolicy::load(&file)
    }

    const OPEN: &str = r#"[accept]
permits = ["*"]
purposes = ["scientific_research"]
categories = ["ehr_data"]
methods = ["fedavg"]
"#;

    fn code(d: Result<Admission, Refusal>) -> &'static str {
        d.err().map_or("accepted", |r| r.code)
    }

    #[test]
    fn the_example_policy_is_valid() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/node-policy.toml");
        let p = NodePolicy::load(&example).unwrap();
        assert!(p.privacy.require_formal_dp);
        assert_eq!(p.privacy.max_epsilon_per_permit, Some(10.0));
    }

    #[test]
    fn a_policy_names_what_it_cannot_read() {
        for (toml, why) in [
            ("[accept]\npurposes = [\"marketing\"]", "accept.purposes"),
            ("[accept]\ncategories = [\"genomes\"]", "accept.categories"),
            ("[accept]\nmethods = [\"fedfoo\"]", "accept.methods"),
            ("[accept]\npermits = [\"p-1\"]", "accept.permits"),
            (
                "[privacy]\nmax_epsilon_per_permit = -1",
                "max_epsilon_per_permit",
            ),
            ("[accept]\nmethod = [\"fedavg\"]", "method"),
        ] {
            let err = format!("{:#}", policy(toml).unwrap_err());
            assert!(err.contains(why), "{toml}: {err}");
        }
    }

    #[test]
    fn default_deny_and_each_privacy_rule() {
        let dir = tempfile::tempdir().unwrap();
        let permit = PermitId::new();
        let t = task(permit);
        let plan = t.study.dp.expect("the gateway sends the plan");
        assert_eq!((plan.level, plan.noise_multiplier), (DpLevel::Client, 1.0));

        // an empty policy accepts nothing
        let g = Guard::new(NodePolicy::default(), dir.path()).unwrap();
        assert_eq!(code(g.decide(&t).unwrap()), "permit_not_accepted");
        let only_other =
            policy(&OPEN.replace("\"*\"", &format!("\"{}\"", PermitId::new()))).unwrap();
        let g = Guard::new(only_other, dir.path()).unwrap();
        assert_eq!(code(g.decide(&t).unwrap()), "permit_not_accepted");

        let strict = |extra: &str| {
            Guard::new(
                policy(&format!("{OPEN}[privacy]\n{extra}")).unwrap(),
                dir.path(),
            )
            .unwrap()
        };
        assert_eq!(
            code(strict("min_noise_multiplier = 1.5").decide(&t).unwrap()),
            "noise_below_minimum"
        );
        assert_eq!(
            code(
                strict("require_secure_aggregation = true")
                    .decide(&t)
                    .unwrap()
            ),
            "secure_aggregation_required"
        );
        let secure = distributed_task(permit, 3);
        assert_eq!(
            code(
                strict("require_secure_aggregation = true")
                    .decide(&secure)
                    .unwrap()
            ),
            "accepted"
        );
        let mut no_dp = t.clone();
        no_dp.study.dp = Some(DpPlan::no_formal_dp(1e-5));
        assert_eq!(
            code(strict("").decide(&no_dp).unwrap()),
            "formal_dp_required"
        );
        assert_eq!(
            code(strict("require_formal_dp = false").decide(&no_dp).unwrap()),
            "accepted"
        );
        let mut unknown = t.clone();
        unknown.study.dp = None;
        assert_eq!(
            code(strict("").decide(&unknown).unwrap()),
            "privacy_plan_unknown"
        );
    }

    /// The ledger composes rounds across studies under one permit with the engine's accountant,
    /// counts a task once, and refuses the round that would pass the ceiling.
    #[test]
    fn the_ledger_refuses_the_round_past_the_ceiling() {
        let dir = tempfile::tempdir().unwrap();
        let permit = PermitId::new();
        let plan = task(permit).study.dp.unwrap();
        let per_round = |n: u64| plan.epsilon_for_rounds(n).unwrap();
        // room for exactly two rounds
        let ceiling = (per_round(2) + per_round(3)) / 2.0;
        let toml = format!("{OPEN}[privacy]\nmax_epsilon_per_permit = {ceiling}\n");
        let mut g = Guard::new(policy(&toml).unwrap(), dir.path()).unwrap();
        let first = task(permit);
        let a = g.admit(&first).unwrap().unwrap();
        assert!((a.permit_epsilon - per_round(1)).abs() < 1e-9, "{a:?}");
        // the same task again (a restart) counts once
        let again = g.admit(&first).unwrap().unwrap();
        assert!((again.permit_epsilon - per_round(1)).abs() < 1e-9);
        // another study under the same permit composes with it
        let b = g.admit(&task(permit)).unwrap().unwrap();
        assert!((b.permit_epsilon - per_round(2)).abs() < 1e-9, "{b:?}");
        assert_eq!(
            code(g.admit(&task(permit)).unwrap()),
            "node_budget_exhausted"
        );
        // another permit has its own ceiling; evaluation tasks release no update
        assert_eq!(code(g.admit(&task(PermitId::new())).unwrap()), "accepted");
        let mut evaluate = task(permit);
        evaluate.kind = TaskKind::Evaluate;
        assert_eq!(code(g.admit(&evaluate).unwrap()), "accepted");
        // the ledger survives a restart
        let mut reopened = Guard::new(policy(&toml).unwrap(), dir.path()).unwrap();
        assert_eq!(
            code(reopened.admit(&task(permit)).unwrap()),
            "node_budget_exhausted"
        );
    }

    /// What the gateway says about distributed DP is checked against what the node will apply:
    /// the plan must derive from its own parameters, match the study's clip and noise, and
    /// come exactly with client-level DP under secure aggregation.
    #[test]
    fn a_distributed_plan_is_checked_before_it_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let permit = PermitId::new();
        let g = Guard::new(
            policy(&format!("{OPEN}[privacy]\nmin_noise_multiplier = 1.0\n")).unwrap(),
            dir.path(),
        )
        .unwrap();
        let good = distributed_task(permit, 3);
        assert_eq!(code(g.decide(&good).unwrap()), "accepted");
        let tamper = |f: &dyn Fn(&mut DpPlan)| {
            let mut t = good.clone();
            f(t.study.dp.as_mut().unwrap());
            code(g.decide(&t).unwrap())
        };
        // a smaller noise share than the parameters give
        assert_eq!(
            tamper(&|p| p.distributed.as_mut().unwrap().node_variance.num /= 2),
            "privacy_plan_inconsistent"
        );
        // parameters and derived values consistent, but less noise than the study states
        assert_eq!(
            tamper(&|p| {
                let mut params = p.distributed.unwrap().params;
                params.central_stddev /= 2.0;
                p.distributed = Some(secagg::ddg::mechanism::DdgPlan::new(params).unwrap());
            }),
            "privacy_plan_inconsistent"
        );
        // and the noise the node applies is what its floor is checked against
        assert_eq!(
            tamper(&|p| {
                let mut params = p.distributed.unwrap().params;
                params.central_stddev /= 2.0;
                p.distributed = Some(secagg::ddg::mechanism::DdgPlan::new(params).unwrap());
                p.noise_multiplier /= 2.0;
            }),
            "noise_below_minimum"
        );
        // no noise plan for the holders of a client-level study under secure aggregation, or
        // one for a study whose updates travel in clear
        assert_eq!(
            tamper(&|p| p.distributed = None),
            "privacy_plan_inconsistent"
        );
        let mut clear = good.clone();
        clear.study.secure_aggregation = None;
        assert_eq!(code(g.decide(&clear).unwrap()), "privacy_plan_inconsistent");
        let mut central = task(permit);
        central.study.secure_aggregation = good.study.secure_aggregation;
        assert_eq!(
            code(g.decide(&central).unwrap()),
            "privacy_plan_inconsistent"
        );
    }

    /// The ledger counts the distributed discrete Gaussian for the plan's minimum survivors:
    /// one study's rounds give exactly `secagg`'s accounting, and they compose with a central
    /// study's rounds under the same permit.
    #[test]
    fn the_ledger_accounts_the_distributed_mechanism() {
        let dir = tempfile::tempdir().unwrap();
        let permit = PermitId::new();
        let t = distributed_task(permit, 3);
        let plan = t.study.dp.unwrap().distributed.unwrap();
        let direct = |rounds: u32| {
            secagg::ddg::accounting::epsilon(&plan, rounds, 1e-5)
                .unwrap()
                .epsilon
        };
        let ceiling = (direct(2) + direct(3)) / 2.0;
        let toml = format!("{OPEN}[privacy]\nmax_epsilon_per_permit = {ceiling}\n");
        let mut g = Guard::new(policy(&toml).unwrap(), dir.path()).unwrap();
        let first = g.admit(&t).unwrap().unwrap();
        assert_eq!(first.permit_epsilon, direct(1));
        let second = g.admit(&distributed_task(permit, 3)).unwrap().unwrap();
        assert_eq!(second.permit_epsilon, direct(2));
        assert_eq!(
            code(g.admit(&distributed_task(permit, 3)).unwrap()),
            "node_budget_exhausted"
        );
        let mut open = Guard::new(policy(OPEN).unwrap(), dir.path()).unwrap();
        // a central round and a distributed one under one permit compose in RDP: more than
        // either alone, no more than their sum
        let mixed = PermitId::new();
        let central = open.admit(&task(mixed)).unwrap().unwrap().permit_epsilon;
        let both = open
            .admit(&distributed_task(mixed, 3))
            .unwrap()
            .unwrap()
            .permit_epsilon;
        assert!(both > central && both > direct(1), "{both} {central}");
        assert!(both < central + direct(1), "{both} {central}");
        // and the ledger, mixed as it is, reads back after a restart
        let reopened = Guard::new(policy(OPEN).unwrap(), dir.path()).unwrap();
        assert_eq!(reopened.spent(&task(mixed)).unwrap(), both);
    }
}
