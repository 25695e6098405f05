//! Record-level DP-SGD in local training: the noiseless limit equals plain full-batch SGD,
//! clipping bounds a step, runs are reproducible from their two seeds, bad settings are
//! refused, and a FedAvg study with record DP still learns and resumes bit for bit.
use fl_engine::data::{Dataset, SiteData};
use fl_engine::dp::{NoiseRng, SampledGaussian};
use fl_engine::model::{MlpConfig, ModelSpec, Net};
use fl_engine::sim::{CheckpointKind, Simulation, SimulationConfig, SimulationState};
use fl_engine::strategy::{
    dp_round_cost, dp_steps_per_round, DittoConfig, FedAvgConfig, ScaffoldConfig, Site,
    StrategyConfig,
};
use fl_engine::train::{
    dp_train_step, train_local, Budget, LossKind, Optimizer, OptimizerConfig, PoissonBatch,
    RecordDp, TrainConfig,
};
use fl_engine::{EngineError, FitIns, ParameterSet};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Eight rows, two features in [-1, 1]: every per-example gradient of a logistic regression
/// has norm at most ‖(x, 1)‖ ≤ √3.
fn toy() -> Dataset {
    let x = vec![
        0.5, -0.25, -1.0, 0.75, 0.25, 0.5, -0.5, -0.5, 1.0, 0.0, 0.0, 1.0, -0.75, 0.25, 0.125, -1.0,
    ];
    Dataset::new(2, x, vec![1, 0, 1, 0, 1, 1, 0, 0]).unwrap()
}

fn config(opt: OptimizerConfig, steps: usize, batch: usize, dp: Option<RecordDp>) -> TrainConfig {
    TrainConfig {
        optimizer: opt,
        budget: Budget::Steps(steps),
        batch_size: batch,
        loss: LossKind::bce(),
        record_dp: dp,
    }
}

fn dp(clip_norm: f64, noise_multiplier: f64, sampling_rate: f64) -> RecordDp {
    RecordDp {
        clip_norm,
        noise_multiplier,
        sampling_rate,
    }
}

fn noise(byte: u8) -> NoiseRng {
    NoiseRng::from_seed_for_reproducible_runs([byte; 32])
}

fn flat(net: &Net) -> Vec<f32> {
    net.parameters().unwrap().to_flat()
}

#[test]
fn noiseless_full_batch_dp_step_is_the_mean_gradient_step() {
    let data = toy();
    let spec = ModelSpec::logistic(2, 1);
    let plain_net = Net::new(&spec, 3).unwrap();
    let dp_net = Net::new(&spec, 3).unwrap();
    let start = flat(&plain_net);

    // Plain SGD, lr 1, one step on the whole data set as one batch.
    let plain = config(OptimizerConfig::sgd(1.0), 1, data.len(), None);
    let mut opt = Optimizer::new(plain.optimizer.clone()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    train_local(&plain_net, &mut opt, &data, &plain, &[], &mut rng, None).unwrap();

    // DP-SGD with q = 1 (every row), σ ≈ 0 and a clip norm no gradient reaches. C is kept
    // just above √3 rather than huge: the noise grid (and its rounding) scales with C.
    let private = dp(2.0, 1e-9, 1.0);
    let mut opt = Optimizer::new(OptimizerConfig::sgd(1.0)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut gen = noise(5);
    let batch = PoissonBatch::draw(&data, &private, &mut gen).unwrap();
    assert_eq!(batch.rows(), (0..data.len()).collect::<Vec<_>>());
    assert_eq!(batch.expected_size(), data.len() as f64);
    let report = dp_train_step(
        &dp_net,
        &mut opt,
        &LossKind::bce(),
        &batch,
        &[],
        &mut rng,
        &mut gen,
    )
    .unwrap();
    assert_eq!(report.privacy.clipped, 0);
    assert_eq!(report.privacy.norms.len(), data.len());
    // Each clipped gradient is rounded to the grid γ, so the mean is off by at most γ/2.
    let tol = report.privacy.grid / 2.0 + 1e-6;
    assert!(
        report.privacy.grid <= 2f64.powi(-8),
        "{}",
        report.privacy.grid
    );
    let (a, b) = (flat(&plain_net), flat(&dp_net));
    assert_ne!(a, start);
    for (x, y) in a.iter().zip(&b) {
        assert!(((x - y) as f64).abs() <= tol, "plain {a:?} vs dp {b:?}");
    }
}

#[test]
fn a_clipped_step_moves_at_most_the_clip_norm() {
    let data = toy();
    let net = Net::new(&ModelSpec::logistic(2, 1), 4).unwrap();
    let start = flat(&net);
    let clip = 0.05;
    let private = dp(clip, 1e-9, 1.0);
    let mut opt = Optimizer::new(OptimizerConfig::sgd(1.0)).unwrap();
    let mut gen = noise(6);
    let batch = PoissonBatch::draw(&data, &private, &mut gen).unwrap();
    let report = dp_train_step(
        &net,
        &mut opt,
        &LossKind::bce(),
        &batch,
        &[],
        &mut ChaCha8Rng::seed_from_u64(0),
        &mut gen,
    )
    .unwrap();
    assert_eq!(report.privacy.clipped, data.len());
    // lr 1, q = 1: the step is the mean of N vectors of norm ≤ C (plus grid rounding).
    let step: f64 = start
        .iter()
        .zip(flat(&net))
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    let rounding = 3f64.sqrt() * report.privacy.grid / 2.0;
    assert!(step > 0.0 && step <= clip + rounding + 1e-6, "step {step}");
}

fn run_private(noise_byte: u8, rng_seed: u64) -> Vec<u32> {
    let spec = ModelSpec::Mlp(MlpConfig {
        inputs: 2,
        hidden: vec![4],
        outputs: 1,
        dropout: 0.25,
    });
    let net = Net::new(&spec, 0).unwrap();
    let cfg = config(OptimizerConfig::adam(0.05), 5, 1, Some(dp(1.0, 1.0, 0.5)));
    let mut opt = Optimizer::new(cfg.optimizer.clone()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let mut gen = noise(noise_byte);
    let report = train_local(&net, &mut opt, &toy(), &cfg, &[], &mut rng, Some(&mut gen)).unwrap();
    assert_eq!((report.steps, report.mean_loss), (5, 0.0));
    flat(&net).iter().map(|v| v.to_bits()).collect()
}

#[test]
fn private_training_is_a_function_of_its_two_seeds() {
    let a = run_private(1, 7);
    assert_eq!(a, run_private(1, 7));
    assert_ne!(
        a,
        run_private(2, 7),
        "another noise seed must change the model"
    );
    assert_ne!(
        a,
        run_private(1, 8),
        "another dropout stream must change the model"
    );
}

#[test]
fn invalid_record_dp_settings_are_refused() {
    let sgd = OptimizerConfig::sgd(0.1);
    let ok = config(sgd.clone(), 3, 0, Some(dp(1.0, 1.0, 0.1)));
    ok.validate().unwrap(); // batch_size is not used under record DP
    let mut epochs = ok.clone();
    epochs.budget = Budget::Epochs(1);
    assert!(matches!(
        epochs.validate(),
        Err(EngineError::InvalidConfig(_))
    ));
    for bad in [
        dp(1.0, 1.0, 0.0),
        dp(1.0, 1.0, 1.5),
        dp(1.0, 1.0, f64::NAN),
        dp(0.0, 1.0, 0.1),
        dp(f64::INFINITY, 1.0, 0.1),
        dp(1.0, -1.0, 0.1),
    ] {
        let cfg = config(sgd.clone(), 3, 4, Some(bad));
        assert!(
            matches!(cfg.validate(), Err(EngineError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
    // A site refuses such a configuration up front.
    let site_data = SiteData {
        name: "a".into(),
        train: toy(),
        val: toy(),
        test: toy(),
    };
    assert!(Site::new(site_data, &ModelSpec::logistic(2, 1), epochs, 0).is_err());

    // Record DP without a noise generator is a configuration error, not silent plain SGD.
    let net = Net::new(&ModelSpec::logistic(2, 1), 0).unwrap();
    let mut opt = Optimizer::new(sgd).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    assert!(matches!(
        train_local(&net, &mut opt, &toy(), &ok, &[], &mut rng, None),
        Err(EngineError::InvalidConfig(_))
    ));
}

#[test]
fn configs_without_record_dp_serialise_as_before() {
    let old = r#"{"optimizer":{"Sgd":{"lr":0.1,"momentum":0.0,"weight_decay":0.0}},
        "budget":{"Steps":3},"batch_size":4,"loss":{"BceWithLogits":{"pos_weight":null}}}"#;
    let cfg: TrainConfig = serde_json::from_str(old).unwrap();
    assert_eq!(cfg.record_dp, None);
    assert!(!serde_json::to_string(&cfg).unwrap().contains("record_dp"));
    let with = TrainConfig {
        record_dp: Some(dp(1.0, 0.8, 0.05)),
        ..cfg
    };
    let back: TrainConfig = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back, with);
}

#[test]
fn steps_per_round_count_both_ditto_models() {
    let cfg = config(OptimizerConfig::sgd(0.1), 7, 4, Some(dp(1.0, 0.9, 0.02)));
    assert_eq!(
        dp_steps_per_round(&StrategyConfig::FedAvg(FedAvgConfig {}), &cfg),
        Some(7)
    );
    let scaffold = StrategyConfig::Scaffold(ScaffoldConfig::default());
    assert_eq!(dp_steps_per_round(&scaffold, &cfg), Some(7));
    let ditto = StrategyConfig::Ditto(DittoConfig::default());
    assert_eq!(dp_steps_per_round(&ditto, &cfg), Some(14));
    assert_eq!(
        dp_round_cost(&ditto, &cfg).unwrap(),
        Some(SampledGaussian::new(0.02, 0.9, 14).unwrap())
    );
    let plain = TrainConfig {
        record_dp: None,
        ..cfg
    };
    assert_eq!(dp_steps_per_round(&ditto, &plain), None);
    assert_eq!(dp_round_cost(&ditto, &plain).unwrap(), None);
}

/// Three sites with a linearly separable rule `x0 + 0.5 x1 > 0` on uniform features.
fn separable_sites() -> Vec<SiteData> {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut rows = |n: usize| {
        let x: Vec<f32> = (0..2 * n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let y = x
            .chunks_exact(2)
            .map(|r| u32::from(r[0] + 0.5 * r[1] > 0.0))
            .collect();
        Dataset::new(2, x, y).unwrap()
    };
    (0..3)
        .map(|k| SiteData {
            name: format!("site-{k}"),
            train: rows(160),
            val: rows(40),
            test: rows(100),
        })
        .collect()
}

fn private_study(strategy: StrategyConfig, rounds: u64) -> SimulationConfig {
    SimulationConfig {
        study: "separable/record-dp".into(),
        model: ModelSpec::logistic(2, 1),
        strategy,
        train: config(OptimizerConfig::sgd(0.5), 10, 16, Some(dp(1.0, 0.5, 0.1))),
        rounds,
        seed: 3,
        reset_optimizer_each_round: false,
    }
}

#[test]
fn fedavg_with_record_dp_still_learns() {
    let mut sim = Simulation::new(
        private_study(StrategyConfig::FedAvg(FedAvgConfig {}), 10),
        separable_sites(),
    )
    .unwrap();
    sim.run().unwrap();
    // Batch losses are not privatised, so none is reported.
    assert!(sim
        .history()
        .iter()
        .all(|r| r.train_loss.iter().all(|&l| l == 0.0)));
    let test = sim.test(CheckpointKind::Latest).unwrap();
    let acc = test.iter().map(|m| m.accuracy).sum::<f64>() / test.len() as f64;
    assert!(acc > 0.85, "test accuracy {acc}");
}

fn check_private_resume(strategy: StrategyConfig) {
    let cfg = private_study(strategy, 3);
    let mut straight = Simulation::new(cfg.clone(), separable_sites()).unwrap();
    straight.run().unwrap();
    let mut first = Simulation::new(cfg.clone(), separable_sites()).unwrap();
    first.run_round().unwrap();
    let json = serde_json::to_string(&first.snapshot().unwrap()).unwrap();
    let state: SimulationState = serde_json::from_str(&json).unwrap();
    let mut resumed = Simulation::restore(cfg, separable_sites(), state).unwrap();
    resumed.run().unwrap();
    assert_eq!(straight.snapshot().unwrap(), resumed.snapshot().unwrap());
}

#[test]
fn private_studies_resume_bit_identically() {
    check_private_resume(StrategyConfig::FedAvg(FedAvgConfig {}));
    check_private_resume(StrategyConfig::Ditto(DittoConfig { lambda: 0.1 }));
    check_private_resume(StrategyConfig::Scaffold(ScaffoldConfig::default()));
}

#[test]
fn ditto_trains_both_models_privately() {
    let ditto = StrategyConfig::Ditto(DittoConfig { lambda: 0.1 });
    let mut sim = Simulation::new(private_study(ditto, 2), separable_sites()).unwrap();
    sim.run().unwrap();
    let personal = sim
        .checkpoint_net(CheckpointKind::Latest, 0)
        .unwrap()
        .parameters()
        .unwrap();
    assert_ne!(personal, *sim.global());

    // The client needs the site's noise generator and reports no loss under record DP.
    let data = separable_sites().remove(0);
    let cfg = private_study(StrategyConfig::FedAvg(FedAvgConfig {}), 1).train;
    let mut site = Site::new(data, &ModelSpec::logistic(2, 1), cfg, 0).unwrap();
    let mut client = StrategyConfig::Ditto(DittoConfig::default())
        .client()
        .unwrap();
    let ins = FitIns {
        round: 1,
        params: site.net.parameters().unwrap(),
        extras: ParameterSet::new(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    assert!(matches!(
        client.fit(&mut site, &ins, &mut rng),
        Err(EngineError::InvalidConfig(_))
    ));
    site.noise = Some(noise(9));
    let res = client.fit(&mut site, &ins, &mut rng).unwrap();
    assert_eq!((res.report.steps, res.report.mean_loss), (10, 0.0));
    assert_ne!(res.params, ins.params);
}

/// `record_dp` is what `fit` does: methods that claim support train a private round,
/// the others refuse it with `InvalidConfig`. `client_dp` is `No` for every method
/// whose upload carries side values beside the model.
#[test]
fn declared_dp_capabilities_match_what_each_method_does() {
    use fl_engine::repro::{self, Method, Protocol};
    for method in Method::ALL {
        if matches!(method, Method::Central | Method::Silo) {
            continue;
        }
        let cfg = repro::config(method, &Protocol::default(), 0, 0.01);
        let spec = cfg.strategy.spec();
        let data = repro::site_data(0, 0.2).unwrap().remove(0);
        let mut train = cfg.train.clone();
        train.budget = Budget::Steps(2);
        train.record_dp = Some(dp(1.0, 1.0, 0.1));
        let mut site = Site::new(data, &cfg.model, train, 0).unwrap();
        site.noise = Some(noise(3));
        let global = Net::new(&cfg.model, 1)
            .unwrap()
            .parameters()
            .unwrap()
            .select(&cfg.strategy.shared());
        let server = cfg
            .strategy
            .server(4, Box::new(fl_engine::strategy::WeightedMean))
            .unwrap();
        let ins = server.configure_fit(1, &global).unwrap();
        let mut client = cfg.strategy.client().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let outcome = client.fit(&mut site, &ins, &mut rng);
        match (spec.record_dp().is_yes(), outcome) {
            (true, Ok(res)) => assert!(
                res.extras.is_empty() || !spec.client_dp().is_yes() || method == Method::FedNova,
                "{}: uploads side values but claims client-level DP",
                method.name()
            ),
            (false, Err(EngineError::InvalidConfig(_))) => {}
            (claim, other) => panic!(
                "{}: claims record DP {claim}, fit gave {:?}",
                method.name(),
                other.map(|_| ())
            ),
        }
    }
}
