//! The `ehds-node check` subcommand.
use std::path::PathBuf;

use super::check::Check;
use super::features::FeatureSpec;
use super::DataSource;

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

/// Exit code 0 when the records were read (whatever they hold), 1 when they could not be.
pub fn check(args: CheckArgs) -> anyhow::Result<i32> {
    let spec = FeatureSpec::from_file(&args.spec)?;
    let source = data_source(args.fhir, args.csv, args.code_map)?;
    let rows = match source.read(&spec) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("the records cannot be read through this specification: {e}");
            return Ok(1);
        }
    };
    let report = Check::new(&spec, rows);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(0)
}
