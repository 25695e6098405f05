//! The `ehds-node check` subcommand.
use std::path::PathBuf;

use ehds_core::domain::small_cell::SmallCellRule;
use ehds_core::domain::study::{DEFAULT_TEST_FRACTION, DEFAULT_VALIDATION_FRACTION};
use ehds_core::domain::OrgId;

use super::check::Check;
use super::features::FeatureSpec;
use super::preflight::{Preflight, DEFAULT_IGNORED_SHARE, DEFAULT_SMALL_CELL_THRESHOLD};
use super::{DataSource, SplitPlan};

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The study's feature specification (or a draft of one).
    #[arg(long)]
    pub spec: PathBuf,
    /// The records as FHIR R4: a Bulk Data export directory, an NDJSON file or a Bundle.
    #[arg(long, conflicts_with = "csv", required_unless_present = "csv")]
    pub fhir: Option<PathBuf>,
    /// The records as a CSV extract.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// The holder's code map.
    #[arg(long, requires = "fhir")]
    pub code_map: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Exit with 3 when there is any warning.
    #[arg(long)]
    pub strict: bool,
    /// The study's share of training rows kept for validation.
    #[arg(long, default_value_t = DEFAULT_VALIDATION_FRACTION)]
    pub validation_fraction: f64,
    /// The study's share of patients held out for testing (records without split tags).
    #[arg(long, default_value_t = DEFAULT_TEST_FRACTION)]
    pub test_fraction: f64,
    /// The study's seed; with `--holder`, the split shown is the one the node's tasks use.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The holder's organisation id, as the study names it.
    #[arg(long)]
    pub holder: Option<String>,
    /// The HDAB's small-cell threshold: label classes with fewer rows warn.
    #[arg(long, default_value_t = DEFAULT_SMALL_CELL_THRESHOLD)]
    pub small_cell_threshold: u64,
    /// Share of a feature's matching records that may not count before it warns.
    #[arg(long, default_value_t = DEFAULT_IGNORED_SHARE)]
    pub ignored_share: f64,
}

impl CheckArgs {
    fn preflight(&self) -> anyhow::Result<Preflight> {
        for (name, f) in [
            ("--validation-fraction", self.validation_fraction),
            ("--test-fraction", self.test_fraction),
        ] {
            anyhow::ensure!(f > 0.0 && f <= 0.5, "{name} must lie in (0, 0.5]");
        }
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.ignored_share),
            "--ignored-share must lie in [0, 1]"
        );
        // the seed the node derives for this study and holder (`local_model::split_plan`)
        let holder = match &self.holder {
            Some(h) => super::agent::holder_stream(
                &OrgId::parse(h).map_err(|(_, why)| anyhow::anyhow!("--holder: {why}"))?,
            ),
            None => 0,
        };
        Ok(Preflight {
            plan: SplitPlan::new(
                self.validation_fraction,
                self.test_fraction,
                fl_engine::seeds::stream_seed(self.seed, holder, u64::MAX),
            ),
            small_cell: SmallCellRule::new(self.small_cell_threshold),
            ignored_share: self.ignored_share,
        })
    }
}

/// The data source named by `--fhir` / `--csv` and `--code-map`.
pub fn data_source(
    fhir: Option<PathBuf>,
    csv: Option<PathBuf>,
    code_map: Option<PathBuf>,
) -> anyhow::Result<DataSource> {
    let data = match (fhir, csv) {
        (Some(p), _) => DataSource::Fhir(p),
        (None, Some(p)) => DataSource::Csv(p),
        (None, None) => anyhow::bail!("give --fhir or --csv"),
    };
    Ok(match code_map {
        Some(code_map) => DataSource::Mapped {
            data: Box::new(data),
            code_map,
        },
        None => data,
    })
}

/// Exit code 0 when the records were read (whatever they hold), 1 when they could not be,
/// 3 with `--strict` when there is a warning.
pub fn check(args: CheckArgs) -> anyhow::Result<i32> {
    let preflight = args.preflight()?;
    let spec = FeatureSpec::from_file(&args.spec)?;
    let source = data_source(args.fhir, args.csv, args.code_map)?;
    let rows = match source.read(&spec) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("the records cannot be read through this specification: {e}");
            return Ok(1);
        }
    };
    let report = Check::with(&spec, rows, &preflight);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(if args.strict && !report.warnings.is_empty() {
        3
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"name": "t", "features": [
        {"name": "x", "category": "ehr_data",
         "source": {"observation": {"system": "s", "code": "x"}}, "transform": {"kind": "number"}}],
      "label": {"name": "y", "category": "ehr_data",
                "source": {"condition": {"system": "s", "code": "y"}}}}"#;

    fn args(dir: &std::path::Path, strict: bool) -> CheckArgs {
        CheckArgs {
            spec: dir.join("spec.json"),
            fhir: None,
            csv: Some(dir.join("rows.csv")),
            code_map: None,
            json: true,
            strict,
            validation_fraction: DEFAULT_VALIDATION_FRACTION,
            test_fraction: DEFAULT_TEST_FRACTION,
            seed: 3,
            holder: Some("hosp-1".into()),
            small_cell_threshold: DEFAULT_SMALL_CELL_THRESHOLD,
            ignored_share: DEFAULT_IGNORED_SHARE,
        }
    }

    #[test]
    fn strict_exits_non_zero_on_a_warning_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spec.json"), SPEC).unwrap();
        // untagged, one class: the node splits the rows itself, and the label warns
        let one_class: String = (0..30).map(|i| format!("p{i},,0,{i}\n")).collect();
        std::fs::write(
            dir.path().join("rows.csv"),
            format!("pseudonym,split,label,x\n{one_class}"),
        )
        .unwrap();
        assert_eq!(check(args(dir.path(), false)).unwrap(), 0);
        assert_eq!(check(args(dir.path(), true)).unwrap(), 3);
        let balanced: String = (0..40).map(|i| format!("p{i},,{},{i}\n", i % 2)).collect();
        std::fs::write(
            dir.path().join("rows.csv"),
            format!("pseudonym,split,label,x\n{balanced}"),
        )
        .unwrap();
        assert_eq!(check(args(dir.path(), true)).unwrap(), 0);
        let mut bad = args(dir.path(), true);
        bad.test_fraction = 0.9;
        assert!(check(bad).is_err());
    }
}
