//! The provenance statement a released model carries: which permit and study produced it, by
//! which method, from which round, at what privacy spend, from which holders, and the audit
//! log's tree head at release. The gateway signs the statement as a C2SP signed note with the
//! key that signs the audit log's checkpoints, and stores the note in the safetensors
//! metadata under `provenance`; `ehds-gateway model verify` checks it with the verifier key
//! auditors already pin.
//!
//! The text is one `key value` line per field after a header line that no checkpoint can start
//! with (a checkpoint's first line is the log's origin), so the same key cannot be made to sign
//! a statement that reads as a checkpoint or the other way round:
//!
//! ```text
//! ehds-gateway model provenance v1
//! study 01a2...
//! permit 01a2...
//! method Ditto
//! round 3 of 3 best_validation
//! dp client epsilon 2.57 delta 0.00001
//! contributors cleveland,hungarian,switzerland,va
//! samples 598
//! digest 9f86...
//! audit-log 412 fL7Q...=
//! released-at 2026-11-24T12:00:00Z
//! ```
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use ehds_core::domain::{
    study::{DpLevel, ModelRelease},
    OrgId, PermitId, StudyId,
};

const HEADER: &str = "ehds-gateway model provenance v1";

/// The safetensors metadata key that holds the signed statement.
pub const METADATA_KEY: &str = "provenance";

/// Why a model file's provenance does not hold.
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    #[error("the parameter file is damaged or edited: {0}")]
    File(fl_engine::EngineError),
    #[error("the file carries no provenance statement")]
    Missing,
    #[error("the provenance signature does not verify with this key: {0}")]
    Signature(translog::Error),
    #[error("the signed text is not a provenance statement: {0}")]
    Statement(String),
    #[error("the file's {0} is not the one the gateway signed")]
    Mismatch(&'static str),
}

/// `model` (a parameter file as the gateway stores it) with `statement` signed by `signer`
/// in its metadata; the parameters and their digest are unchanged.
pub fn attach(
    model: &[u8],
    statement: &Provenance,
    signer: &translog::NoteSigner,
) -> anyhow::Result<Vec<u8>> {
    let (params, meta) = fl_engine::load_safetensors(model)?;
    anyhow::ensure!(
        meta.digest == statement.digest,
        "the statement names other parameters"
    );
    let note = signer
        .sign(&statement.to_text())
        .map_err(|e| anyhow::anyhow!("signing the provenance: {e}"))?;
    let mut extra = meta.extra;
    extra.insert(METADATA_KEY.to_owned(), note);
    let (bytes, _) = fl_engine::save_safetensors_with(
        &params,
        &meta.study,
        meta.round,
        meta.site.as_deref(),
        &extra,
    )?;
    Ok(bytes)
}

/// The provenance of a released model file, if `verifier` (the gateway's log key) signed it
/// and it names exactly these parameters, this study and this round.
pub fn verify(
    model: &[u8],
    verifier: &translog::NoteVerifier,
) -> Result<Provenance, ProvenanceError> {
    let (params, meta) = fl_engine::load_safetensors(model).map_err(ProvenanceError::File)?;
    let note = meta
        .extra
        .get(METADATA_KEY)
        .ok_or(ProvenanceError::Missing)?;
    let opened = translog::Note::open(note, std::slice::from_ref(verifier))
        .map_err(ProvenanceError::Signature)?;
    let statement = Provenance::parse(&opened.text).map_err(ProvenanceError::Statement)?;
    if statement.digest != params.digest() {
        return Err(ProvenanceError::Mismatch("parameters"));
    }
    if statement.study.to_string() != meta.study {
        return Err(ProvenanceError::Mismatch("study"));
    }
    if statement.round != meta.round {
        return Err(ProvenanceError::Mismatch("round"));
    }
    Ok(statement)
}

/// What the gateway vouches for about a released model.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Provenance {
    pub study: StudyId,
    pub permit: PermitId,
    /// The federated method (the engine's name).
    pub method: String,
    /// The released round, and how many rounds the study ran.
    pub round: u64,
    pub rounds: u64,
    pub selection: ModelRelease,
    pub dp: DpLevel,
    /// The study's spend when the model was released.
    pub epsilon: f64,
    pub delta: f64,
    /// The holders whose updates went into the released round.
    pub contributors: Vec<OrgId>,
    /// Their training samples in all; `None` where the small-cell rule withholds it.
    pub samples: Option<u64>,
    /// Hex SHA-256 of the parameters' canonical bytes (`fl_engine::ParameterSet::digest`).
    pub digest: String,
    /// The audit log's tree head once the release was recorded: size and base64 root.
    pub audit_log_size: u64,
    pub audit_log_root: String,
    pub released_at: DateTime<Utc>,
}

impl Provenance {
    /// The statement as signed (ends with a newline, as a note's text must).
    pub fn to_text(&self) -> String {
        let contributors: Vec<&str> = self.contributors.iter().map(OrgId::as_str).collect();
        let mut lines = vec![
            HEADER.to_owned(),
            format!("study {}", self.study),
            format!("permit {}", self.permit),
            format!("method {}", self.method),
            format!(
                "round {} of {} {}",
                self.round,
                self.rounds,
                self.selection.as_str()
            ),
            format!(
                "dp {} epsilon {} delta {}",
                self.dp.as_str(),
                self.epsilon,
                self.delta
            ),
            format!("contributors {}", contributors.join(",")),
            format!(
                "samples {}",
                self.samples
                    .map_or_else(|| "withheld".to_owned(), |n| n.to_string())
            ),
            format!("digest {}", self.digest),
            format!("audit-log {} {}", self.audit_log_size, self.audit_log_root),
            format!(
                "released-at {}",
                self.released_at
                    .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
            ),
        ];
        lines.push(String::new());
        lines.join("\n")
    }

    /// Reads a statement written by [`to_text`](Self::to_text).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(format!("not a model provenance statement (`{HEADER}`)"));
        }
        let mut fields = BTreeMap::new();
        for line in lines {
            let (key, value) = line
                .split_once(' ')
                .ok_or_else(|| format!("malformed line `{line}`"))?;
            if fields.insert(key, value).is_some() {
                return Err(format!("`{key}` appears twice"));
            }
        }
        let field = |k: &str| fields.get(k).copied().ok_or(format!("`{k}` is missing"));
        let words = |k: &str, n: usize| -> Result<Vec<&str>, String> {
            let w: Vec<&str> = field(k)?.split(' ').collect();
            if w.len() == n {
                Ok(w)
            } else {
                Err(format!("`{k}` takes {n} words"))
            }
        };
        let number = |s: &str, what: &str| s.parse::<f64>().map_err(|_| format!("bad {what}"));
        let whole = |s: &str, what: &str| s.parse::<u64>().map_err(|_| format!("bad {what}"));
        let round = words("round", 4)?;
        if round[1] != "of" {
            return Err("`round` reads `<round> of <rounds> <selection>`".into());
        }
        let dp = words("dp", 5)?;
        if dp[1] != "epsilon" || dp[3] != "delta" {
            return Err("`dp` reads `<level> epsilon <e> delta <d>`".into());
        }
        let log = words("audit-log", 2)?;
        let contributors = field("contributors")?;
        Ok(Self {
            study: StudyId::parse(field("study")?).map_err(|e| e.1)?,
            permit: PermitId::parse(field("permit")?).map_err(|e| e.1)?,
            method: field("method")?.to_owned(),
            round: whole(round[0], "round")?,
            rounds: whole(round[2], "rounds")?,
            selection: match round[3] {
                "best_validation" => ModelRelease::BestValidation,
                "last" => ModelRelease::Last,
                other => return Err(format!("unknown selection `{other}`")),
            },
            dp: DpLevel::parse(dp[0]).ok_or_else(|| format!("unknown DP level `{}`", dp[0]))?,
            epsilon: number(dp[2], "epsilon")?,
            delta: number(dp[4], "delta")?,
            contributors: if contributors.is_empty() {
                vec![]
            } else {
                contributors
                    .split(',')
                    .map(|c| OrgId::parse(c).map_err(|e| e.1))
                    .collect::<Result<_, _>>()?
            },
            samples: match field("samples")? {
                "withheld" => None,
                n => Some(whole(n, "samples")?),
            },
            digest: field("digest")?.to_owned(),
            audit_log_size: whole(log[0], "audit log size")?,
            audit_log_root: log[1].to_owned(),
            released_at: DateTime::parse_from_rfc3339(field("released-at")?)
                .map_err(|e| format!("bad released-at: {e}"))?
                .with_timezone(&Utc),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Provenance {
        Provenance {
            study: StudyId::new(),
            permit: PermitId::new(),
            method: "Ditto".into(),
            round: 2,
            rounds: 3,
            selection: ModelRelease::BestValidation,
            dp: DpLevel::Client,
            epsilon: 2.5712345678901234,
            delta: 1e-5,
            contributors: vec![
                OrgId::parse("cleveland").unwrap(),
                OrgId::parse("va").unwrap(),
            ],
            samples: None,
            digest: "ab".repeat(32),
            audit_log_size: 412,
            audit_log_root: "fL7Q".into(),
            released_at: Utc::now(),
        }
    }

    #[test]
    fn the_statement_reads_back_exactly() {
        let p = sample();
        let text = p.to_text();
        assert!(text.starts_with("ehds-gateway model provenance v1\nstudy "));
        assert!(text.ends_with('\n'));
        assert!(text.contains("\nround 2 of 3 best_validation\n"), "{text}");
        assert!(text.contains("\nsamples withheld\n"), "{text}");
        assert_eq!(Provenance::parse(&text).unwrap(), p);
        let shown = Provenance {
            samples: Some(598),
            contributors: vec![],
            ..sample()
        };
        assert_eq!(Provenance::parse(&shown.to_text()).unwrap(), shown);
    }

    #[test]
    fn a_signed_model_verifies_and_an_edited_one_does_not() {
        let signer = translog::NoteSigner::from_seed("gateway.example/audit", &[7; 32]).unwrap();
        let mut params = fl_engine::ParameterSet::new();
        params
            .insert("fc.weight", vec![1, 2], vec![0.5, -1.0])
            .unwrap();
        let statement = Provenance {
            digest: params.digest(),
            ..sample()
        };
        let (stored, _) = fl_engine::save_safetensors(
            &params,
            &statement.study.to_string(),
            statement.round,
            None,
        )
        .unwrap();
        let released = attach(&stored, &statement, &signer).unwrap();
        assert_eq!(verify(&released, &signer.verifier()).unwrap(), statement);
        // another key
        let other = translog::NoteSigner::from_seed("gateway.example/audit", &[8; 32]).unwrap();
        assert!(matches!(
            verify(&released, &other.verifier()),
            Err(ProvenanceError::Signature(_))
        ));
        // the stored file carries none
        assert!(matches!(
            verify(&stored, &signer.verifier()),
            Err(ProvenanceError::Missing)
        ));
        // an edited statement (a smaller epsilon) breaks the signature
        let (_, meta) = fl_engine::load_safetensors(&released).unwrap();
        let forged_note = meta.extra[METADATA_KEY].replace("epsilon 2.57", "epsilon 0.57");
        let mut extra = meta.extra.clone();
        extra.insert(METADATA_KEY.to_owned(), forged_note);
        let (forged, _) =
            fl_engine::save_safetensors_with(&params, &meta.study, meta.round, None, &extra)
                .unwrap();
        assert!(matches!(
            verify(&forged, &signer.verifier()),
            Err(ProvenanceError::Signature(_))
        ));
        // the signed statement moved onto other parameters
        let mut other_params = params.clone();
        other_params.insert("fc.bias", vec![1], vec![0.25]).unwrap();
        let (swapped, _) = fl_engine::save_safetensors_with(
            &other_params,
            &meta.study,
            meta.round,
            None,
            &meta.extra,
        )
        .unwrap();
        assert!(matches!(
            verify(&swapped, &signer.verifier()),
            Err(ProvenanceError::Mismatch("parameters"))
        ));
        // or relabelled as another round
        let (relabelled, _) = fl_engine::save_safetensors_with(
            &params,
            &meta.study,
            meta.round + 1,
            None,
            &meta.extra,
        )
        .unwrap();
        assert!(matches!(
            verify(&relabelled, &signer.verifier()),
            Err(ProvenanceError::Mismatch("round"))
        ));
    }

    #[test]
    fn malformed_statements_are_refused() {
        let text = sample().to_text();
        for bad in [
            text.replacen("ehds-gateway model provenance v1", "checkpoint", 1),
            text.replacen("\nmethod Ditto", "", 1),
            text.replacen("round 2 of 3", "round 2 to 3", 1),
            text.replacen("best_validation", "best", 1),
            text.replacen("dp client", "dp strong", 1),
            format!("{text}digest 00\n"),
        ] {
            assert!(Provenance::parse(&bad).is_err(), "{bad}");
        }
    }
}
