//! An image input: one picture per subject, read from FHIR `Media` resources, decoded into a
//! `[channels, height, width]` tensor (channel-major) that a CNN backbone reads.
//!
//! ```json
//! "image": { "name": "digit", "category": "ehr_data",
//!   "media": { "modality": [ { "system": "http://dicom.nema.org/resources/ontology/DCM",
//!                              "code": "DOC" } ],
//!              "view": [ { "system": "urn:example:view", "code": "lateral" } ] },
//!   "channels": 1, "height": 8, "width": 8,
//!   "normalize": { "mean": [0.3], "std": [0.4] } }
//! ```
//!
//! A `Media` is one of the subject's images when its `modality` (the acquisition equipment
//! or process, FHIR's field for "what kind of image") carries one of the `modality` codes and,
//! when `view` is given, its `view` (the imaging view) one of those. `Media.type` (image,
//! video or audio) is not needed: the content's `contentType` must be `image/png`.
//! The geometry is declared, never inferred: an image of another size is refused (no
//! resizing, so no filter silently changes what the model sees). Intensities are scaled to
//! [0, 1] by the image's bit depth, then, with `normalize`, each channel `c` becomes
//! `(x - mean[c]) / std[c]`. The node does not standardise image values further.
use serde::Deserialize;

use super::cohort::{code_set, CodeSet, RawCode};
use super::features::SpecError;
use crate::domain::DataCategory;

/// Largest side an image may declare.
pub const MAX_SIDE: usize = 1024;
/// Most values one image may hold (`channels * height * width`).
pub const MAX_VALUES: usize = 1 << 20;

/// A parsed image input.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSpec {
    pub name: String,
    pub category: DataCategory,
    /// `Media.modality` codes that select the subject's images.
    pub modality: CodeSet,
    /// `Media.view` codes, when the selection also names a view.
    pub view: Option<CodeSet>,
    /// 1 (grayscale) or 3 (RGB).
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    /// Per channel (mean, std) applied after scaling to [0, 1].
    pub normalize: Option<Vec<(f32, f32)>>,
}

impl ImageSpec {
    /// Values per image: `channels * height * width`.
    pub fn len(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Whether the image holds no value (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The code sets a holder's code map may extend.
    pub fn code_sets_mut(&mut self) -> Vec<&mut CodeSet> {
        let mut out = vec![&mut self.modality];
        out.extend(self.view.as_mut());
        out
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawImage {
    name: String,
    category: String,
    media: RawMedia,
    channels: usize,
    height: usize,
    width: usize,
    normalize: Option<RawNormalize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMedia {
    modality: Vec<RawCode>,
    view: Option<Vec<RawCode>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNormalize {
    mean: Vec<f32>,
    std: Vec<f32>,
}

fn invalid(reason: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        at: "image".into(),
        reason: reason.into(),
    }
}

pub(crate) fn image(raw: RawImage) -> Result<ImageSpec, SpecError> {
    let category = DataCategory::parse(&raw.category).map_err(|_| SpecError::UnknownCategory {
        feature: raw.name.clone(),
        category: raw.category.clone(),
    })?;
    if !matches!(raw.channels, 1 | 3) {
        return Err(invalid("`channels` is 1 (grayscale) or 3 (RGB)"));
    }
    if !(1..=MAX_SIDE).contains(&raw.height) || !(1..=MAX_SIDE).contains(&raw.width) {
        return Err(invalid(format!(
            "`height` and `width` lie between 1 and {MAX_SIDE}"
        )));
    }
    if raw.channels * raw.height * raw.width > MAX_VALUES {
        return Err(invalid(format!(
            "an image holds at most {MAX_VALUES} values (channels x height x width)"
        )));
    }
    let modality =
        code_set(&raw.media.modality).map_err(|r| invalid(format!("media.modality: {r}")))?;
    let view = raw
        .media
        .view
        .as_deref()
        .map(code_set)
        .transpose()
        .map_err(|r| invalid(format!("media.view: {r}")))?;
    let normalize = match raw.normalize {
        None => None,
        Some(n) => {
            let ok = n.mean.len() == raw.channels
                && n.std.len() == raw.channels
                && n.mean.iter().all(|m| m.is_finite())
                && n.std.iter().all(|s| s.is_finite() && *s > 0.0);
            if !ok {
                return Err(invalid(format!(
                    "`normalize` gives {} finite `mean` values and {} finite `std` values > 0, \
                     one per channel",
                    raw.channels, raw.channels
                )));
            }
            Some(n.mean.into_iter().zip(n.std).collect())
        }
    };
    Ok(ImageSpec {
        name: raw.name,
        category,
        modality,
        view,
        channels: raw.channels,
        height: raw.height,
        width: raw.width,
        normalize,
    })
}
