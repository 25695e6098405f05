//! Images: the Media whose modality (and view) match, kept undecoded, the Binaries they may
//! point to, and the decoding of a subject's chosen image.
use crate::cohort::CodeSet;
use crate::features::ImageSpec;
use crate::image::ImageError;
use crate::reader::At;
use crate::report::{IgnoreReason, IssueKind, Report};
use crate::resource::{Concept, Raw};

use super::{BinaryRec, MediaContent, MediaRec, Store};

impl Store {
    pub(super) fn media(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let Some(image) = &self.image else { return };
        let void = matches!(r.status.as_deref(), Some("entered-in-error" | "not-done"));
        let matches = |codes: &CodeSet, concept: Option<&Concept<'_>>| {
            concept.is_some_and(|c| c.codings().any(|(s, code)| codes.matches(s, code)))
        };
        let wanted = matches(&image.modality, r.modality.as_ref())
            && image
                .view
                .as_ref()
                .is_none_or(|v| matches(v, r.view.as_ref()));
        if !wanted {
            return;
        }
        let name = image.name.clone();
        let rid = r.id.as_deref().map(|i| format!("Media/{i}"));
        if self.duplicate(&at, "Media", r.id.as_deref(), report) {
            return;
        }
        report.matched(&name);
        if void {
            return report.ignored(&name, IgnoreReason::Status);
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return report.ignored(&name, IgnoreReason::Unresolved);
        };
        let when = r
            .created_date_time
            .as_deref()
            .or(r.created_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.issued.as_deref());
        let time = Self::time(&at, "created[x]", when, &rid, report);
        self.touch(subject, time);
        let content = r.content.as_ref();
        self.media.push(MediaRec {
            subject,
            time,
            content_type: content
                .and_then(|c| c.content_type.as_deref())
                .map(str::to_owned),
            content: match content {
                Some(c) if c.data.is_some() => {
                    MediaContent::Data(c.data.as_deref().unwrap_or_default().to_owned())
                }
                Some(c) if c.url.is_some() => {
                    MediaContent::Url(c.url.as_deref().unwrap_or_default().to_owned())
                }
                _ => MediaContent::None,
            },
            at: (at.file.to_owned(), at.line, rid),
        });
    }

    /// A Binary, by `Binary/<id>` and by its Bundle entry's `fullUrl`; one with neither
    /// cannot be referred to and is reported, and a second copy of an id is skipped.
    pub(super) fn binary(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        if self.image.is_none() {
            return;
        }
        let key = match (r.id.as_deref(), at.full_url) {
            (Some(id), _) => {
                if self.duplicate(&at, "Binary", Some(id), report) {
                    return;
                }
                format!("Binary/{id}")
            }
            (None, Some(u)) => u.to_owned(),
            (None, None) => {
                return report.issue(at.issue(
                    IssueKind::MissingId,
                    None,
                    "Binary without an id or a fullUrl: no Media can refer to it".into(),
                ))
            }
        };
        if let Some(u) = at.full_url {
            self.binary_urls.insert(u.to_owned(), key.clone());
        }
        self.binaries.insert(
            key,
            BinaryRec {
                content_type: r.content_type.as_deref().map(str::to_owned),
                data: r.data.as_deref().map(str::to_owned),
            },
        );
    }

    /// The subject's image, decoded; `Ok(None)` when it has none, else the Media (an index
    /// into `media`) and why it cannot be used.
    pub(super) fn image_of(
        &self,
        patient: u32,
        spec: &ImageSpec,
    ) -> Result<Option<Vec<f32>>, (usize, ImageError)> {
        let Some(&k) = self.first_image.get(&patient) else {
            return Ok(None);
        };
        let m = &self.media[k];
        let (content_type, data) = match &m.content {
            MediaContent::Data(d) => (m.content_type.as_deref(), d.as_str()),
            MediaContent::Url(u) => {
                // a Bundle entry's fullUrl, or a relative or absolute `Binary/<id>`
                let plain = u.split("/_history/").next().unwrap_or(u.as_str());
                let key = match self.binary_urls.get(u) {
                    Some(k) => k.clone(),
                    None => match plain.rsplit_once("/Binary/") {
                        Some((_, id)) => format!("Binary/{id}"),
                        None => plain.to_owned(),
                    },
                };
                let Some(b) = self.binaries.get(&key) else {
                    return Err((k, ImageError::UnresolvedBinary(u.clone())));
                };
                let Some(d) = &b.data else {
                    return Err((k, ImageError::NoContent));
                };
                // the attachment's type, else the Binary's own
                (
                    m.content_type.as_deref().or(b.content_type.as_deref()),
                    d.as_str(),
                )
            }
            MediaContent::None => return Err((k, ImageError::NoContent)),
        };
        let bytes = crate::image::base64_bytes(data).map_err(|e| (k, e))?;
        crate::image::decode(content_type, &bytes, spec)
            .map(Some)
            .map_err(|e| (k, e))
    }
}
