//! The fuzz targets as a plain test: every input of the committed corpus (`fuzz/corpus/<target>`)
//! once, so that what a fuzzer once found stays fixed; then, for `EHDS_FUZZ_SECONDS` per target
//! (0 unless set), inputs mutated from the corpus at random. The mutations are blind (no
//! coverage feedback, unlike the libFuzzer binaries), but they need no other build than the
//! workspace's own tests. A failing input is written under the test's scratch directory and
//! named in the failure; add it to the corpus once the parser is fixed.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rand::{rngs::StdRng, RngExt, SeedableRng};

/// Longest one input may take (a debug build, one core) before it counts as a hang.
const HANG: Duration = Duration::from_secs(20);
/// Largest input the mutations grow; libFuzzer's default `-max_len` is of this order.
const MAX_LEN: usize = 64 * 1024;

/// Tokens that structured input is made of, spliced in at random.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"true",
    b"false",
    b"0",
    b"-1",
    b"1e999",
    b"-0.0",
    b"18446744073709551616",
    b"\"\"",
    b"{}",
    b"[]",
    b"\\u0000",
    b"\n",
    b"\"resourceType\"",
    b"\"Bundle\"",
    b"\"entry\"",
    b"\"resource\"",
    b"\"Patient\"",
    b"\"Observation\"",
    b"\"Condition\"",
    b"\"Consent\"",
    b"\"valueQuantity\"",
    b"\"unit\"",
    b"\"effectiveDateTime\"",
    b"\"2024-02-30\"",
    b"\"T\"",
    b"\"subject\"",
    b"\"reference\"",
    b"\"coding\"",
    b"\"system\"",
    b"\"code\"",
    b"\"features\"",
    b"\"source\"",
    b"\"transform\"",
    b"\"label\"",
    b"\"cohort\"",
    b"\"window\"",
    b"\"alg\"",
    b"\"kid\"",
    b"\"exp\"",
    b"\"sub\"",
    b"\"aud\"",
    b"\"dtype\"",
    b"\"shape\"",
    b"\"data_offsets\"",
    b"\"F32\"",
    b"\"__metadata__\"",
    b"\"subject_pseudonym\"",
    b"\"withdrawn\"",
];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("a corpus file");
            (p, bytes)
        })
        .collect()
}

fn mutate(rng: &mut StdRng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seeds[rng.random_range(0..seeds.len())].clone();
    for _ in 0..rng.random_range(1..=8) {
        let at = rng.random_range(0..=d.len());
        match rng.random_range(0..8) {
            0 if !d.is_empty() => {
                let i = rng.random_range(0..d.len());
                d[i] ^= 1 << rng.random_range(0..8);
            }
            1 => d.insert(at, rng.random()),
            2 if !d.is_empty() => {
                let end = (at + rng.random_range(1..=16)).min(d.len());
                d.drain(at.min(end)..end);
            }
            3 => {
                let t = TOKENS[rng.random_range(0..TOKENS.len())];
                d.splice(at..at, t.iter().copied());
            }
            4 if !d.is_empty() => {
                // a run of the input repeated (deep nesting, long arrays)
                let start = rng.random_range(0..d.len());
                let end = (start + rng.random_range(1..=32)).min(d.len());
                let run = d[start..end].to_vec();
                for _ in 0..rng.random_range(1..=16) {
                    d.splice(at..at, run.iter().copied());
                }
            }
            5 => {
                // the head of one input, the tail of another
                let other = &seeds[rng.random_range(0..seeds.len())];
                let from = rng.random_range(0..=other.len());
                d.truncate(at);
                d.extend_from_slice(&other[from..]);
            }
            6 if !d.is_empty() => {
                let i = rng.random_range(0..d.len());
                d[i] = *b"0123456789-.:eE\"{}[]"
                    .get(rng.random_range(0..20))
                    .expect("in range");
            }
            _ => d.truncate(at),
        }
    }
    d.truncate(MAX_LEN);
    d
}

/// Runs `f` on `input`, turning a panic into an error naming the file the input was saved to.
fn check(target: &str, f: fn(&[u8]), input: &[u8], current: &Mutex<Vec<u8>>) -> Result<(), String> {
    current
        .lock()
        .expect("not poisoned")
        .clone_from(&input.to_vec());
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| f(input)));
    let slow = started.elapsed() > HANG;
    if outcome.is_ok() && !slow {
        return Ok(());
    }
    let saved = save(target, input);
    Err(format!(
        "{target}: {} on the input saved as {}",
        if slow { "a hang" } else { "a panic" },
        saved.display()
    ))
}

fn save(target: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz-failures")
        .join(target);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let name = format!("crash-{:016x}", fnv(input));
    let path = dir.join(name);
    std::fs::write(&path, input).expect("the failing input saved");
    path
}

fn fnv(d: &[u8]) -> u64 {
    d.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Aborts the process when one input runs past [`HANG`] without returning: a test that
/// never ends would only be stopped by CI's own timeout, with the input lost.
/// It stops once the target's run has ended (`beat` set to `None`).
fn watchdog(target: &'static str, current: Arc<Mutex<Vec<u8>>>, beat: Beat) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_secs(1));
        let Some(last) = *beat.lock().expect("not poisoned") else {
            return;
        };
        if last.elapsed() > HANG * 2 {
            let input = current.lock().expect("not poisoned").clone();
            let saved = save(target, &input);
            eprintln!("{target}: a hang on the input saved as {}", saved.display());
            std::process::abort();
        }
    });
}

/// When the current input was handed to the target; `None` once the run is over.
type Beat = Arc<Mutex<Option<Instant>>>;

fn seconds() -> f64 {
    std::env::var("EHDS_FUZZ_SECONDS")
        .ok()
        .map(|s| s.parse().expect("EHDS_FUZZ_SECONDS is a number of seconds"))
        .unwrap_or(0.0)
}

fn run(target: &'static str) {
    let f = ehds_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a known target")
        .1;
    let current = Arc::new(Mutex::new(Vec::new()));
    let beat: Beat = Arc::new(Mutex::new(Some(Instant::now())));
    watchdog(target, current.clone(), beat.clone());
    let mut failures = Vec::new();
    let corpus = corpus(target);
    assert!(!corpus.is_empty(), "{target}: the corpus is empty");
    for (path, input) in &corpus {
        *beat.lock().expect("not poisoned") = Some(Instant::now());
        if let Err(e) = check(target, f, input, &current) {
            failures.push(format!("{e} (corpus file {})", path.display()));
        }
    }
    let seeds: Vec<Vec<u8>> = corpus.into_iter().map(|(_, d)| d).collect();
    let budget = Duration::from_secs_f64(seconds());
    let seed = std::env::var("EHDS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let started = Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < budget && failures.len() < 5 {
        let input = mutate(&mut rng, &seeds);
        *beat.lock().expect("not poisoned") = Some(Instant::now());
        if let Err(e) = check(target, f, &input, &current) {
            failures.push(e);
        }
        runs += 1;
    }
    *beat.lock().expect("not poisoned") = None;
    if !budget.is_zero() {
        eprintln!("{target}: {runs} mutated inputs in {budget:?} (EHDS_FUZZ_SEED={seed})");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fhir_bundle() {
    run("fhir_bundle");
}

#[test]
fn fhir_ndjson() {
    run("fhir_ndjson");
}

#[test]
fn feature_spec() {
    run("feature_spec");
}

#[test]
fn safetensors() {
    run("safetensors");
}

#[test]
fn optout_ndjson() {
    run("optout_ndjson");
}

#[test]
fn fhir_consent() {
    run("fhir_consent");
}

#[test]
fn jwt() {
    run("jwt");
}

/// Every target has its test above and its corpus directory.
#[test]
fn every_target_is_run() {
    let here = include_str!("fuzz_corpus.rs");
    for (name, _) in ehds_fuzz::TARGETS {
        assert!(
            here.contains(&format!("run(\"{name}\")")),
            "{name} has no test"
        );
        assert!(corpus_dir(name).is_dir(), "{name} has no corpus directory");
    }
}

/// Writes the generated seeds of the safetensors corpus: parameter files as the engine writes
/// them, for the study and round the target decodes against. Run by hand when the format
/// changes: `cargo test -p ehds-fuzz --test fuzz_corpus -- --ignored`.
#[test]
#[ignore]
fn write_safetensors_seeds() {
    let mut params = fl_engine::ParameterSet::new();
    params
        .insert(
            "global.fc.weight",
            vec![2, 3],
            vec![0.1, -2.0, 3.5, 0.0, 1.0, -1.0],
        )
        .unwrap();
    params
        .insert("global.fc.bias", vec![2], vec![0.25, 0.5])
        .unwrap();
    params
        .insert("extras/bn.running_mean", vec![1], vec![0.0])
        .unwrap();
    let dir = corpus_dir("safetensors");
    std::fs::create_dir_all(&dir).unwrap();
    let (global, _) =
        fl_engine::save_safetensors(&params, ehds_fuzz::STUDY, ehds_fuzz::ROUND, None).unwrap();
    std::fs::write(dir.join("global-model.safetensors"), global).unwrap();
    let (update, _) =
        fl_engine::save_safetensors(&params, ehds_fuzz::STUDY, ehds_fuzz::ROUND, Some("org-a"))
            .unwrap();
    std::fs::write(dir.join("update.safetensors"), update).unwrap();
}

/// The JWT target reaches past the signature: a token it signs with valid claims is accepted,
/// so the claims the fuzzer writes are checked by the code that reads callers' tokens.
#[test]
fn the_jwt_target_signs_tokens_the_authenticator_accepts() {
    let s = ehds_fuzz::signer();
    let claims = format!(
        r#"{{"iss":"{}","aud":"{}","sub":"alice","exp":{}}}"#,
        ehds_fuzz::ISSUER,
        ehds_fuzz::AUDIENCE,
        chrono::Utc::now().timestamp() + 600
    );
    let token = s.sign(s.header().as_bytes(), claims.as_bytes());
    assert_eq!(s.authenticate(&token), Ok(()));
    let forged = format!("{}x", &token[..token.len() - 1]);
    assert!(s.authenticate(&forged).is_err());
}
