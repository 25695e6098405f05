//! The fuzz targets: each hands arbitrary bytes to the production parser of one kind of
//! untrusted input. A target returns normally whatever the parser makes of its input (an `Err`
//! is a correct answer to garbage); a panic, a hang or an unbounded allocation is a bug in the
//! parser. The same functions run under libFuzzer (`fuzz_targets/`, `scripts/fuzz.sh`) and over
//! the committed corpus as a plain test (`tests/fuzz_corpus.rs`). See docs/fuzzing.md.

use std::sync::OnceLock;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use chrono::{TimeZone, Utc};
use ehds_core::domain::StudyId;
use ehds_gateway::auth::Authenticator;
use ehds_node::fhir_source::{self, Options};
use ehds_node::FeatureSpec;
use ring::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
};

/// A fuzz target: any bytes in, nothing out.
pub type Target = fn(&[u8]);

/// Every target, by the name of its corpus directory and libFuzzer binary.
pub const TARGETS: &[(&str, Target)] = &[
    ("fhir_bundle", fhir_bundle),
    ("fhir_ndjson", fhir_ndjson),
    ("feature_spec", feature_spec),
    ("safetensors", safetensors),
    ("optout_ndjson", optout_ndjson),
    ("fhir_consent", fhir_consent),
    ("jwt", jwt),
];

/// Specifications the FHIR input is read through: between them they use every kind of source
/// (patient fields, observations with units, conditions, medications, encounters, problem
/// lists, cohorts with an index event, time series).
const SPECS: &[&str] = &[
    include_str!("../../examples/federation/heart_disease.features.json"),
    include_str!("../../examples/icu-federation/mortality.features.json"),
    include_str!("../../examples/icu-federation/timeseries.features.json"),
    include_str!("../../examples/icu-federation/survival.features.json"),
];

fn specs() -> &'static [FeatureSpec] {
    static SPECS_PARSED: OnceLock<Vec<FeatureSpec>> = OnceLock::new();
    SPECS_PARSED.get_or_init(|| {
        SPECS
            .iter()
            .map(|s| FeatureSpec::from_json(s).expect("the example specifications parse"))
            .collect()
    })
}

/// The readers take text; bytes that are not UTF-8 still reach them, repaired.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A FHIR Bundle (JSON) as the node reads it, through each specification.
pub fn fhir_bundle(data: &[u8]) {
    let json = text(data);
    for spec in specs() {
        let _ = fhir_source::extract_json(spec, &json);
    }
}

/// FHIR Bulk Data NDJSON as the node reads it, through each specification.
pub fn fhir_ndjson(data: &[u8]) {
    let ndjson = text(data);
    for spec in specs() {
        let _ = fhir_source::extract_ndjson(spec, &ndjson, &Options::default());
    }
}

/// A feature specification, parsed and checked.
pub fn feature_spec(data: &[u8]) {
    let _ = FeatureSpec::from_json(&text(data));
}

/// The study the generated parameter files of the corpus name (`tests/fuzz_corpus.rs`).
pub const STUDY: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
/// Their round.
pub const ROUND: u64 = 3;

/// A safetensors parameter file: as the engine loads any, and as a node decodes the global
/// model of a task (metadata checked, extras split off).
pub fn safetensors(data: &[u8]) {
    let _ = fl_engine::load_safetensors(data);
    let study = StudyId::parse(STUDY).expect("a valid study id");
    let _ = ehds_core::wire::decode_fit_ins(data, study, ROUND);
}

/// An opt-out NDJSON import as the gateway parses it, and as a node reads its opt-out file.
pub fn optout_ndjson(data: &[u8]) {
    let ndjson = text(data);
    let _ = ehds_gateway::app::optouts::parse_ndjson(&ndjson, "DE");
    let as_of = Utc.with_ymd_and_hms(2025, 6, 1, 0, 0, 0).unwrap();
    let _ = ehds_node::opted_out_at(&ndjson, as_of);
}

/// A FHIR Bundle of Consent resources (the gateway's opt-out import).
pub fn fhir_consent(data: &[u8]) {
    let _ = ehds_gateway::fhir::consent::parse_opt_out_bundle(data, "DE");
}

/// The issuer and audience of the tokens the JWT target builds.
pub const ISSUER: &str = "https://issuer.example";
pub const AUDIENCE: &str = "ehds-gateway";

pub struct Signer {
    pub kid: String,
    key: EcdsaKeyPair,
    auth: Authenticator,
    runtime: tokio::runtime::Runtime,
}

impl Signer {
    /// A signed JWS over the given header and payload bytes (either may be anything).
    pub fn sign(&self, header: &[u8], payload: &[u8]) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let sig = self
            .key
            .sign(&SystemRandom::new(), input.as_bytes())
            .expect("ECDSA signing");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    pub fn header(&self) -> String {
        format!(r#"{{"alg":"ES256","typ":"JWT","kid":"{}"}}"#, self.kid)
    }

    pub fn authenticate(&self, token: &str) -> Result<(), ehds_gateway::auth::AuthError> {
        self.runtime
            .block_on(self.auth.authenticate(token))
            .map(|_| ())
    }
}

/// One P-256 key the authenticator trusts, made once per process.
pub fn signer() -> &'static Signer {
    static SIGNER: OnceLock<Signer> = OnceLock::new();
    SIGNER.get_or_init(|| {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("P-256 key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("P-256 key");
        let point = key.public_key().as_ref();
        let kid = "fuzz-key".to_owned();
        let jwks = serde_json::json!({"keys": [{
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        }]});
        let mut settings = ehds_gateway::configuration::Settings::default().auth;
        settings.audience = AUDIENCE.into();
        let auth = Authenticator::with_keys(
            &settings,
            ISSUER.into(),
            serde_json::from_value(jwks).expect("a JWK set"),
        )
        .expect("an authenticator");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Signer {
            kid,
            key,
            auth,
            runtime,
        }
    })
}

/// A bearer token as the gateway validates it. The first byte chooses what the rest is: the
/// token text itself (the header and signature checks), the claims of a token signed with the
/// trusted key (claim validation and the caller's roles and organisation), or the header of
/// such a token (algorithm and key selection after a valid signature).
pub fn jwt(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let s = signer();
    let token = match mode % 3 {
        0 => text(rest).into_owned(),
        1 => s.sign(s.header().as_bytes(), rest),
        _ => {
            let claims = format!(
                r#"{{"iss":"{ISSUER}","aud":"{AUDIENCE}","sub":"s","exp":{},"roles":["researcher"]}}"#,
                Utc::now().timestamp() + 3600
            );
            s.sign(rest, claims.as_bytes())
        }
    };
    let _ = s.authenticate(&token);
}
