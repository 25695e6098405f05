//! Extraction throughput and peak memory on a generated FHIR Bulk Data export of about one
//! million resources, against the parser the node used before it streamed (the `fhir-sdk`
//! R4B models), in the same run.
//!
//! `cargo bench -p ehds-gateway --bench fhir_extract [-- --patients 9600]`
//!
//! Each measurement runs in a child process of its own, so its peak resident set (`VmHWM`)
//! is its own; every child is single-threaded. Rows:
//! * `stream, gzip`: `ehds-gateway`'s reader and extraction, ICU mortality specification and
//!   code map, on the gzipped export (what a hospital's `$export` writes);
//! * `stream, plain`: the same on the uncompressed NDJSON;
//! * `fhir-sdk per line`: every NDJSON line parsed into the `fhir-sdk` R4B `Resource` type,
//!   streamed the same way, and nothing else done (no extraction);
//! * `fhir-sdk Bundle (before)`: the node's former path, a whole Bundle read into memory,
//!   parsed to a JSON value and then into the `fhir-sdk` `Bundle`, on the first 100,000
//!   resources (the whole export does not fit that path on this machine).
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use ehds_node::codemap::CodeMap;
use ehds_node::features::FeatureSpec;
use ehds_tools::corpus::{generate, SITES};

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn icu() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/icu-federation")
}

/// In the child: run one measurement, print `resources seconds peak_mib rows`.
fn child(mode: &str, path: &Path) -> anyhow::Result<()> {
    let start = Instant::now();
    let (resources, rows) = match mode {
        "stream" => {
            let spec = FeatureSpec::from_file(&icu().join("mortality.features.json"))?;
            let map = CodeMap::from_file(&icu().join("south.codemap.json"), &spec)?;
            let rows = ehds_node::fhir_source::load(&spec, path, Some(&map))?;
            (rows.report.entries, rows.rows.len())
        }
        "fhir-sdk-lines" => {
            let mut n = 0u64;
            for entry in std::fs::read_dir(path)? {
                let file = std::io::BufReader::new(std::fs::File::open(entry?.path())?);
                for line in file.lines() {
                    let line = line?;
                    let r: fhir_sdk::r4b::resources::Resource = serde_json::from_str(&line)?;
                    std::hint::black_box(&r);
                    n += 1;
                }
            }
            (n, 0)
        }
        "fhir-sdk-bundle" => {
            let text = std::fs::read_to_string(path)?;
            let bundle = ehds_tools::fhir_model::parse_bundle(&text)?;
            (bundle.entry.len() as u64, 0)
        }
        other => anyhow::bail!("unknown mode {other}"),
    };
    let secs = start.elapsed().as_secs_f64();
    println!("{resources} {secs} {} {rows}", peak_rss_mib());
    Ok(())
}

fn measure(label: &str, mode: &str, path: &Path) -> anyhow::Result<()> {
    let out = std::process::Command::new(std::env::current_exe()?)
        .args(["--child", mode])
        .arg(path)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{label}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let f: Vec<f64> = text
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(f64::NAN))
        .collect();
    println!(
        "| {label} | {:.0} | {:.2} | {:.0} | {:.0} | {:.0} |",
        f[0],
        f[1],
        f[0] / f[1],
        f[2],
        f[3]
    );
    Ok(())
}

/// The first `n` resources of the export as one Bundle.
fn bundle_of(dir: &Path, n: usize, out: &Path) -> anyhow::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(out)?);
    write!(
        w,
        r#"{{"resourceType":"Bundle","type":"collection","entry":["#
    )?;
    let mut k = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    'outer: for f in files {
        for line in std::io::BufReader::new(std::fs::File::open(f)?).lines() {
            if k == n {
                break 'outer;
            }
            if k > 0 {
                w.write_all(b",")?;
            }
            write!(w, r#"{{"resource":{}}}"#, line?)?;
            k += 1;
        }
    }
    write!(w, "]}}")?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return child(&args[i + 1], Path::new(&args[i + 2]));
    }
    let patients = args
        .iter()
        .position(|a| a == "--patients")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(9_600);
    let tmp = tempfile::tempdir()?;
    let site = [SITES[1]];
    let t = Instant::now();
    let counts = generate(&tmp.path().join("gz"), &site, patients, 7, true)?;
    generate(&tmp.path().join("plain"), &site, patients, 7, false)?;
    eprintln!(
        "generated {} resources ({} patients) in {:.1} s",
        counts[0].resources(),
        patients,
        t.elapsed().as_secs_f64()
    );
    let size = |d: &Path| -> u64 {
        std::fs::read_dir(d)
            .map(|r| {
                r.filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    let (gz, plain) = (tmp.path().join("gz/south"), tmp.path().join("plain/south"));
    println!(
        "export: {} resources, {:.0} MiB NDJSON, {:.0} MiB gzipped; load average {}",
        counts[0].resources(),
        size(&plain) as f64 / 1048576.0,
        size(&gz) as f64 / 1048576.0,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!("| reader | resources | seconds | resources/s | peak RSS MiB | rows |");
    println!("|---|---:|---:|---:|---:|---:|");
    measure("stream, gzip", "stream", &gz)?;
    measure("stream, plain", "stream", &plain)?;
    measure("fhir-sdk per line", "fhir-sdk-lines", &plain)?;
    let bundle = tmp.path().join("bundle.json");
    bundle_of(&plain, 100_000, &bundle)?;
    measure("fhir-sdk Bundle (before), 100k", "fhir-sdk-bundle", &bundle)?;
    Ok(())
}
