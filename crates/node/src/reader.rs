//! Reads FHIR R4 as hospitals export it, as a stream: a Bulk Data export directory (one or
//! more NDJSON files per resource type, optionally gzipped, as `$export` and common generators
//! write them), a single NDJSON file, or a Bundle (`.json`, optionally gzipped; a directory
//! may hold Bundles too, one per file). The format is told from the file name.
//!
//! Nothing is held but the line being parsed: each resource goes to a [`Sink`] as soon as it
//! is read, so memory is bounded by what the sink keeps, not by the size of the export.
//! A line that is not JSON, or not a resource the node can read, is counted in the
//! [`Report`] with its file, line and resource id, and reading goes on; a file that breaks
//! off (an I/O or gzip error) stops the read with an error, because what follows it is lost.
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::report::{Issue, IssueKind, Report};
use super::resource::{Raw, TypeOnly, READ_TYPES};
use super::SourceError;

/// Where a resource was read.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub file: &'a str,
    /// 1-based line (NDJSON) or entry (Bundle).
    pub line: u64,
    /// `Bundle.entry.fullUrl`, for Bundles.
    pub full_url: Option<&'a str>,
}

impl At<'_> {
    pub fn issue(&self, kind: IssueKind, resource: Option<String>, detail: String) -> Issue {
        Issue {
            kind,
            file: Some(self.file.to_owned()),
            line: Some(self.line),
            resource,
            detail,
        }
    }
}

/// Receives every resource of a type the node reads.
pub trait Sink {
    fn resource(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Ndjson,
    Bundle,
}

fn format_of(path: &Path) -> Option<(Format, bool)> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let (base, gz) = match name.strip_suffix(".gz") {
        Some(b) => (b.to_owned(), true),
        None => (name, false),
    };
    if base.ends_with(".ndjson") || base.ends_with(".jsonl") {
        Some((Format::Ndjson, gz))
    } else if base.ends_with(".json") {
        Some((Format::Bundle, gz))
    } else {
        None
    }
}

/// The files a path stands for, in name order.
pub fn input_files(path: &Path) -> Result<Vec<PathBuf>, SourceError> {
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && format_of(p).is_some())
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(SourceError::NoInput(path.display().to_string()));
        }
        Ok(files)
    } else if format_of(path).is_some() {
        Ok(vec![path.to_path_buf()])
    } else if !path.exists() {
        Err(SourceError::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} does not exist", path.display()),
        )))
    } else {
        Err(SourceError::UnknownFormat(path.display().to_string()))
    }
}

fn open(path: &Path, gz: bool) -> Result<Box<dyn BufRead>, SourceError> {
    let file = File::open(path)?;
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file)),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    })
}

/// Read every resource under `path` into `sink`.
pub fn read(path: &Path, sink: &mut impl Sink, report: &mut Report) -> Result<(), SourceError> {
    for file in input_files(path)? {
        let (format, gz) = format_of(&file).expect("listed files have a format");
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        report.files.push(name.clone());
        let input = open(&file, gz)?;
        match format {
            Format::Ndjson => read_ndjson(&name, input, sink, report)?,
            Format::Bundle => read_bundle(&name, input, sink, report)?,
        }
    }
    Ok(())
}

/// Dispatch one parsed JSON resource (or explain why it is not one).
fn dispatch(at: At<'_>, text: &[u8], sink: &mut impl Sink, report: &mut Report) {
    match serde_json::from_slice::<Raw>(text) {
        Ok(r) => accept(at, &r, sink, report),
        Err(e) if e.is_syntax() || e.is_eof() => {
            report.issue(at.issue(IssueKind::MalformedJson, None, format!("not JSON: {e}")))
        }
        Err(e) => {
            // A resource of a type the node does not read may use its field names for
            // other shapes; only a type the node reads is invalid here.
            let t: Option<TypeOnly> = serde_json::from_slice(text).ok();
            let ty = t.as_ref().and_then(|t| t.resource_type.clone());
            match ty {
                Some(ty) if !READ_TYPES.contains(&ty.as_str()) && ty != "Bundle" => {
                    *report.resources.entry(ty.clone()).or_default() += 1;
                    report.issue(at.issue(
                        IssueKind::TypeNotRead,
                        None,
                        format!("{ty} is not read by the node"),
                    ))
                }
                _ => {
                    let id = t.and_then(|t| Some(format!("{}/{}", t.resource_type?, t.id?)));
                    report.issue(at.issue(
                        IssueKind::InvalidResource,
                        id,
                        format!("not a valid FHIR R4 resource: {e}"),
                    ))
                }
            }
        }
    }
}

fn accept(at: At<'_>, r: &Raw<'_>, sink: &mut impl Sink, report: &mut Report) {
    let Some(ty) = r.resource_type.as_deref() else {
        report.issue(at.issue(
            IssueKind::InvalidResource,
            None,
            "JSON object without resourceType".into(),
        ));
        return;
    };
    *report.resources.entry(ty.to_owned()).or_default() += 1;
    if READ_TYPES.contains(&ty) {
        sink.resource(at, r, report);
    } else {
        report.issue(at.issue(
            IssueKind::TypeNotRead,
            r.id.as_deref().map(|id| format!("{ty}/{id}")),
            format!("{ty} is not read by the node"),
        ));
    }
}

fn read_ndjson(
    file: &str,
    mut input: Box<dyn BufRead + '_>,
    sink: &mut impl Sink,
    report: &mut Report,
) -> Result<(), SourceError> {
    let mut buf = Vec::with_capacity(1 << 12);
    let mut line = 0u64;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| SourceError::Read {
                file: file.to_owned(),
                line: line + 1,
                error: e,
            })?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        report.entries += 1;
        let at = At {
            file,
            line,
            full_url: None,
        };
        if text.starts_with(br#"{"resourceType":"Bundle""#) || looks_like_bundle(text) {
            read_bundle(file, Box::new(text), sink, report)?;
            continue;
        }
        dispatch(at, text, sink, report);
    }
}

fn looks_like_bundle(text: &[u8]) -> bool {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct T<'a> {
        #[serde(borrow)]
        resource_type: Option<std::borrow::Cow<'a, str>>,
    }
    // cheap pre-check before a full parse: only lines naming Bundle at all
    memchr_bundle(text)
        && serde_json::from_slice::<T>(text)
            .ok()
            .and_then(|t| t.resource_type)
            .is_some_and(|t| t == "Bundle")
}

fn memchr_bundle(text: &[u8]) -> bool {
    text.windows(8).any(|w| w == b"\"Bundle\"")
}

/// Streams a Bundle's entries: the Bundle is never held whole, only one entry at a time.
fn read_bundle(
    file: &str,
    input: Box<dyn Read + '_>,
    sink: &mut impl Sink,
    report: &mut Report,
) -> Result<(), SourceError> {
    let mut de = serde_json::Deserializer::from_reader(input);
    let seed = BundleSeed { file, sink, report };
    match seed.deserialize(&mut de).and_then(|r| {
        de.end()?;
        Ok(r)
    }) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(SourceError::Bundle {
            file: file.to_owned(),
            error: e,
        }),
    }
}

struct BundleSeed<'s, S> {
    file: &'s str,
    sink: &'s mut S,
    report: &'s mut Report,
}

impl<'de, S: Sink> DeserializeSeed<'de> for BundleSeed<'_, S> {
    type Value = Result<(), SourceError>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for BundleSeed<'_, S> {
    type Value = Result<(), SourceError>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a FHIR Bundle")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut is_bundle = false;
        let mut other = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "resourceType" => {
                    let t: String = map.next_value()?;
                    is_bundle = t == "Bundle";
                    if !is_bundle {
                        other = Some(t);
                    }
                }
                "entry" if other.is_none() => {
                    map.next_value_seed(Entries {
                        file: self.file,
                        sink: &mut *self.sink,
                        report: &mut *self.report,
                    })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !is_bundle {
            return Ok(Err(SourceError::NotABundle(
                other.unwrap_or_else(|| "JSON value without resourceType".into()),
            )));
        }
        Ok(Ok(()))
    }
}

struct Entries<'s, S> {
    file: &'s str,
    sink: &'s mut S,
    report: &'s mut Report,
}

impl<'de, S: Sink> DeserializeSeed<'de> for Entries<'_, S> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for Entries<'_, S> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("Bundle entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut n = 0u64;
        // one entry at a time, as a JSON value: a malformed entry is counted, not fatal
        while let Some(entry) = seq.next_element::<serde_json::Value>()? {
            n += 1;
            self.report.entries += 1;
            let full_url = entry.get("fullUrl").and_then(|u| u.as_str());
            let at = At {
                file: self.file,
                line: n,
                full_url,
            };
            let Some(resource) = entry.get("resource") else {
                continue;
            };
            match Raw::deserialize(resource) {
                Ok(r) => accept(at, &r, self.sink, self.report),
                Err(e) => {
                    let ty = resource.get("resourceType").and_then(|t| t.as_str());
                    match ty {
                        Some(ty) if !READ_TYPES.contains(&ty) => {
                            *self.report.resources.entry(ty.to_owned()).or_default() += 1;
                            self.report.issue(at.issue(
                                IssueKind::TypeNotRead,
                                None,
                                format!("{ty} is not read by the node"),
                            ))
                        }
                        _ => {
                            let id = resource.get("id").and_then(|i| i.as_str());
                            self.report.issue(at.issue(
                                IssueKind::InvalidResource,
                                ty.zip(id).map(|(t, i)| format!("{t}/{i}")),
                                format!("not a valid FHIR R4 resource: {e}"),
                            ))
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Read a Bundle held in memory (tests, and callers that already have the text).
pub fn read_bundle_str(
    text: &str,
    sink: &mut impl Sink,
    report: &mut Report,
) -> Result<(), SourceError> {
    read_bundle("bundle", Box::new(text.as_bytes()), sink, report)
}

/// Read NDJSON held in memory.
pub fn read_ndjson_str(
    text: &str,
    sink: &mut impl Sink,
    report: &mut Report,
) -> Result<(), SourceError> {
    read_ndjson("ndjson", Box::new(text.as_bytes()), sink, report)
}
