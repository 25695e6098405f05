//! Decoding a subject's image ([`ImageSpec`]) into the values a CNN reads: PNG only, the
//! declared geometry only, intensities scaled to [0, 1] by the bit depth and optionally
//! normalised per channel. Every way an image can be unusable is an [`ImageError`], which
//! the extraction reports per record; nothing here panics on input.
//!
//! Colour: a grayscale image fills a 1-channel input, and all three channels of an RGB input
//! (the same picture, replicated); an RGB image fills an RGB input and is refused for a
//! grayscale one (a conversion would choose channel weights for the study). Palette images
//! are expanded to RGB, bit depths below 8 to 8; an alpha channel is ignored.
use std::io::Cursor;

use base64::Engine as _;

use super::features::ImageSpec;

/// The one content type the node decodes.
pub const PNG: &str = "image/png";

/// Why an image was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("content type `{}` is not image/png", .0.as_deref().unwrap_or("(none)"))]
    ContentType(Option<String>),
    #[error("the attachment has neither `data` nor a `url` to a Binary of the export")]
    NoContent,
    #[error("`url` {0:?} names no Binary in the export")]
    UnresolvedBinary(String),
    #[error("`data` is not base64: {0}")]
    Base64(String),
    #[error("not a decodable PNG: {0}")]
    Decode(String),
    #[error("the image is {found_width}x{found_height} (width x height); the specification declares {width}x{height}")]
    Geometry {
        found_width: u32,
        found_height: u32,
        width: usize,
        height: usize,
    },
    #[error("an RGB image cannot fill a grayscale (1-channel) input")]
    Channels,
}

/// The base64 `data` of an Attachment or a Binary as bytes.
pub fn base64_bytes(data: &str) -> Result<Vec<u8>, ImageError> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| ImageError::Base64(e.to_string()))
}

/// Decode `bytes` (of `content_type`) into `spec.channels * spec.height * spec.width` values,
/// channel-major.
pub fn decode(
    content_type: Option<&str>,
    bytes: &[u8],
    spec: &ImageSpec,
) -> Result<Vec<f32>, ImageError> {
    // `image/png; charset=..` is not a thing, but parameters are legal in a MIME type
    let essence = content_type.map(|c| c.split(';').next().unwrap_or(c).trim());
    if !essence.is_some_and(|c| c.eq_ignore_ascii_case(PNG)) {
        return Err(ImageError::ContentType(content_type.map(str::to_owned)));
    }
    let decode_err = |e: png::DecodingError| ImageError::Decode(e.to_string());
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(decode_err)?;
    // the size is checked before any pixel buffer is allocated
    let (w, h) = reader.info().size();
    if w as usize != spec.width || h as usize != spec.height {
        return Err(ImageError::Geometry {
            found_width: w,
            found_height: h,
            width: spec.width,
            height: spec.height,
        });
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| ImageError::Decode("the image is too large to decode".into()))?;
    let mut buf = vec![0u8; size];
    let frame = reader.next_frame(&mut buf).map_err(decode_err)?;
    let samples = frame.color_type.samples();
    let sixteen = frame.bit_depth == png::BitDepth::Sixteen;
    let colour = match frame.color_type {
        png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => false,
        png::ColorType::Rgb | png::ColorType::Rgba => true,
        // EXPAND turns palette images into RGB(A)
        png::ColorType::Indexed => {
            return Err(ImageError::Decode(
                "a palette image was not expanded".into(),
            ))
        }
    };
    if colour && spec.channels == 1 {
        return Err(ImageError::Channels);
    }
    let bytes_per_sample = if sixteen { 2 } else { 1 };
    let max = if sixteen { 65535.0 } else { 255.0 };
    let (width, height) = (spec.width, spec.height);
    let sample = |y: usize, x: usize, s: usize| -> f32 {
        let at = y * frame.line_size + (x * samples + s) * bytes_per_sample;
        let v = if sixteen {
            u16::from_be_bytes([buf[at], buf[at + 1]])
        } else {
            u16::from(buf[at])
        };
        f32::from(v) / max
    };
    let mut out = Vec::with_capacity(spec.len());
    for c in 0..spec.channels {
        // a grayscale picture fills every channel
        let s = if colour { c } else { 0 };
        let (mean, std) = spec.normalize.as_ref().map_or((0.0, 1.0), |n| n[c]);
        for y in 0..height {
            for x in 0..width {
                out.push((sample(y, x, s) - mean) / std);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::features::FeatureSpec;

    /// A PNG of `width` x `height` with `color` and `depth`, pixels from `data`.
    pub(crate) fn png(
        width: u32,
        height: u32,
        color: png::ColorType,
        depth: png::BitDepth,
        data: &[u8],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(color);
        enc.set_depth(depth);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(data).unwrap();
        w.finish().unwrap();
        out
    }

    fn spec(channels: usize, normalize: &str) -> ImageSpec {
        let text = format!(
            r#"{{"name": "t", "image": {{"name": "img", "category": "ehr_data",
                "media": {{"modality": [{{"system": "s", "code": "m"}}]}},
                "channels": {channels}, "height": 2, "width": 3 {normalize}}},
              "label": {{"name": "y", "category": "ehr_data",
                "source": {{"condition": {{"system": "s", "code": "c"}}}}}}}}"#
        );
        FeatureSpec::from_json(&text).unwrap().image.unwrap()
    }

    #[test]
    fn grayscale_scales_to_unit_range_row_major() {
        let pixels = [0u8, 51, 102, 153, 204, 255];
        let file = png(
            3,
            2,
            png::ColorType::Grayscale,
            png::BitDepth::Eight,
            &pixels,
        );
        let v = decode(Some("image/png"), &file, &spec(1, "")).unwrap();
        assert_eq!(v, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        // normalised: (x - 0.5) / 0.25
        let n = spec(1, r#", "normalize": {"mean": [0.5], "std": [0.25]}"#);
        let v = decode(Some("image/png"), &file, &n).unwrap();
        for (got, want) in v.iter().zip([-2.0, -1.2, -0.4, 0.4, 1.2, 2.0]) {
            assert!((got - want).abs() < 1e-5, "{v:?}");
        }
        // replicated into each channel of an RGB input
        let v = decode(Some("image/png"), &file, &spec(3, "")).unwrap();
        assert_eq!(v.len(), 18);
        assert_eq!(v[6..12], v[..6]);
        assert_eq!(v[12..], v[..6]);
    }

    #[test]
    fn rgb_is_channel_major_and_sixteen_bit_scales_by_its_depth() {
        // pixel (y, x) = (r, g, b) = (10 * x, 100, 255 - y)
        let mut pixels = Vec::new();
        for y in 0..2u8 {
            for x in 0..3u8 {
                pixels.extend([10 * x, 100, 255 - y]);
            }
        }
        let file = png(3, 2, png::ColorType::Rgb, png::BitDepth::Eight, &pixels);
        let v = decode(Some("image/png"), &file, &spec(3, "")).unwrap();
        let r: Vec<f32> = [0u8, 10, 20, 0, 10, 20]
            .iter()
            .map(|&p| f32::from(p) / 255.0)
            .collect();
        assert_eq!(v[..6], r[..]);
        assert!(v[6..12].iter().all(|&g| g == 100.0 / 255.0));
        assert_eq!(v[12], 1.0);
        assert_eq!(v[17], 254.0 / 255.0);
        assert_eq!(
            decode(Some("image/png"), &file, &spec(1, "")),
            Err(ImageError::Channels)
        );
        let deep: Vec<u8> = [0u16, 65535, 13107, 0, 0, 0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let file = png(
            3,
            2,
            png::ColorType::Grayscale,
            png::BitDepth::Sixteen,
            &deep,
        );
        let v = decode(Some("image/png"), &file, &spec(1, "")).unwrap();
        assert_eq!(v[..3], [0.0, 1.0, 0.2]);
    }

    fn media(id: &str, subject: &str, modality: &str, extra: &str) -> String {
        format!(
            r#"{{"fullUrl": "urn:uuid:{id}", "resource": {{"resourceType": "Media", "id": "{id}",
                "status": "completed", "subject": {{"reference": "Patient/{subject}"}},
                "modality": {{"coding": [{{"system": "s", "code": "{modality}"}}]}} {extra}}}}}"#
        )
    }

    fn inline(file: &[u8], content_type: &str) -> String {
        let data = base64::engine::general_purpose::STANDARD.encode(file);
        format!(r#""content": {{"contentType": "{content_type}", "data": "{data}"}}"#)
    }

    #[test]
    fn the_first_matching_image_is_decoded_and_bad_ones_are_reported() {
        use crate::fhir_source::extract_json;
        use crate::report::IssueKind;
        let text = r#"{"name": "t", "image": {"name": "img", "category": "ehr_data",
                "media": {"modality": [{"system": "s", "code": "m"}]},
                "channels": 1, "height": 2, "width": 3},
              "label": {"name": "y", "category": "ehr_data",
                "source": {"condition": {"system": "s", "code": "c"}}}}"#;
        let spec = FeatureSpec::from_json(text).unwrap();
        let gray = |v: u8| {
            png(
                3,
                2,
                png::ColorType::Grayscale,
                png::BitDepth::Eight,
                &[v; 6],
            )
        };
        let patient = |id: &str| {
            format!(
                r#"{{"resource": {{"resourceType": "Patient", "id": "{id}",
                    "meta": {{"tag": [{{"system": "urn:ehds-gateway:split", "code": "train"}}]}}}}}}"#
            )
        };
        let dated = |d: &str| format!(r#", "createdDateTime": "{d}""#);
        let entries = [
            patient("a"),
            // a's images: undated, later, another modality earlier, the earliest, voided
            media(
                "a0",
                "a",
                "m",
                &format!(", {}", inline(&gray(1), "image/png")),
            ),
            media(
                "a1",
                "a",
                "m",
                &format!("{}, {}", dated("2020-02-01"), inline(&gray(2), "image/png")),
            ),
            media(
                "a2",
                "a",
                "x",
                &format!("{}, {}", dated("2019-01-01"), inline(&gray(3), "image/png")),
            ),
            media(
                "a3",
                "a",
                "m",
                &format!(
                    "{}, {}",
                    dated("2020-01-01"),
                    inline(&gray(51), "image/png")
                ),
            ),
            media(
                "a4",
                "a",
                "m",
                &format!(
                    r#"{}, {}, "status": "entered-in-error""#,
                    dated("2019-06-01"),
                    inline(&gray(9), "image/png")
                )
                .replace(r#""status": "completed","#, ""),
            ),
            patient("b"),
            media(
                "b1",
                "b",
                "m",
                r#", "content": {"contentType": "image/png", "url": "Binary/bin-b"}"#,
            ),
            format!(
                r#"{{"resource": {{"resourceType": "Binary", "id": "bin-b", "contentType": "image/png",
                    "data": "{}"}}}}"#,
                base64::engine::general_purpose::STANDARD.encode(gray(255))
            ),
            patient("c"),
            media(
                "c1",
                "c",
                "m",
                &format!(
                    ", {}",
                    inline(
                        &png(
                            2,
                            2,
                            png::ColorType::Grayscale,
                            png::BitDepth::Eight,
                            &[0; 4]
                        ),
                        "image/png"
                    )
                ),
            ),
            patient("d"),
            patient("e"),
            media(
                "e1",
                "e",
                "m",
                &format!(", {}", inline(&gray(1), "image/jpeg")),
            ),
            patient("f"),
            media(
                "f1",
                "f",
                "m",
                r#", "content": {"contentType": "image/png", "url": "Binary/nowhere"}"#,
            ),
            patient("g"),
            media(
                "g1",
                "g",
                "m",
                r#", "content": {"contentType": "image/png", "data": "not base64!"}"#,
            ),
        ];
        let bundle = format!(
            r#"{{"resourceType": "Bundle", "type": "collection", "entry": [{}]}}"#,
            entries.join(",")
        );
        let rows = extract_json(&spec, &bundle).unwrap();
        assert_eq!(rows.image_len, 6);
        let kept: Vec<(&str, f32)> = rows
            .rows
            .iter()
            .map(|r| (r.pseudonym.as_str(), r.image.as_ref().unwrap()[0]))
            .collect();
        // a: the earliest dated image of the modality (51 / 255), not the voided one
        assert_eq!(kept, [("a", 0.2), ("b", 1.0)]);
        assert!(rows.rows.iter().all(|r| r.features.is_empty()));
        assert_eq!(rows.incomplete, ["c", "d", "e", "f", "g"]);
        assert_eq!(rows.missing_by_column.get("img"), Some(&5));
        assert_eq!(rows.report.count(IssueKind::Image), 4);
        let details: Vec<(&str, &str)> = rows
            .report
            .examples
            .iter()
            .filter(|i| i.kind == IssueKind::Image)
            .map(|i| (i.resource.as_deref().unwrap(), i.detail.as_str()))
            .collect();
        assert!(
            details[0].0 == "Media/c1" && details[0].1.contains("2x2"),
            "{details:?}"
        );
        assert!(
            details[1].0 == "Media/e1" && details[1].1.contains("image/jpeg"),
            "{details:?}"
        );
        assert!(
            details[2].0 == "Media/f1" && details[2].1.contains("Binary/nowhere"),
            "{details:?}"
        );
        assert!(
            details[3].0 == "Media/g1" && details[3].1.contains("base64"),
            "{details:?}"
        );

        // the rows the engine trains on: the image values first, as the study's layout says
        let tensors = rows.tensors(&crate::SplitPlan::new(0.0, 0.2, 1)).unwrap();
        assert_eq!(tensors.train.n, 2);
        assert_eq!(tensors.train.rows(6, 0, 0).unwrap().len(), 12);
        // what `node check` shows the holder
        let check = crate::check::Check::new(&spec, rows).image.unwrap();
        assert_eq!(
            (check.shape, check.missing, check.unusable),
            ([1, 2, 3], 5, 4)
        );

        // with a view, a Media of the modality without that view is not the subject's image
        let viewed = text.replace(
            r#""media": {"modality": [{"system": "s", "code": "m"}]}"#,
            r#""media": {"modality": [{"system": "s", "code": "m"}],
                         "view": [{"system": "v", "code": "lateral"}]}"#,
        );
        let spec = FeatureSpec::from_json(&viewed).unwrap();
        let view = |code: &str| {
            format!(r#", "view": {{"coding": [{{"system": "v", "code": "{code}"}}]}}"#)
        };
        let entries = [
            patient("a"),
            media(
                "a1",
                "a",
                "m",
                &format!("{}, {}", view("frontal"), inline(&gray(0), "image/png")),
            ),
            media(
                "a2",
                "a",
                "m",
                &format!("{}, {}", view("lateral"), inline(&gray(255), "image/png")),
            ),
            patient("b"),
            media(
                "b1",
                "b",
                "m",
                &format!(", {}", inline(&gray(0), "image/png")),
            ),
        ];
        let bundle = format!(
            r#"{{"resourceType": "Bundle", "type": "collection", "entry": [{}]}}"#,
            entries.join(",")
        );
        let rows = extract_json(&spec, &bundle).unwrap();
        assert_eq!(rows.rows.len(), 1);
        assert_eq!(rows.rows[0].image.as_deref(), Some(&[1.0; 6][..]));
        assert_eq!(rows.incomplete, ["b"]);
    }

    #[test]
    fn a_specification_declares_a_usable_image() {
        let bad = |image: &str| {
            let text = format!(
                r#"{{"name": "t", "image": {image},
                  "label": {{"name": "y", "category": "ehr_data",
                    "source": {{"condition": {{"system": "s", "code": "c"}}}}}}}}"#
            );
            FeatureSpec::from_json(&text).unwrap_err().to_string()
        };
        let image = |rest: &str| {
            format!(
                r#"{{"name": "img", "category": "ehr_data",
                    "media": {{"modality": [{{"system": "s", "code": "m"}}]}} {rest}}}"#
            )
        };
        assert!(bad(&image(r#", "channels": 2, "height": 8, "width": 8"#)).contains("grayscale"));
        assert!(bad(&image(r#", "channels": 1, "height": 0, "width": 8"#)).contains("between 1"));
        assert!(
            bad(&image(r#", "channels": 3, "height": 1024, "width": 1024"#)).contains("at most")
        );
        assert!(bad(&image(
            r#", "channels": 1, "height": 8, "width": 8, "normalize": {"mean": [0.5], "std": [0]}"#
        ))
        .contains("normalize"));
        assert!(bad(&image(
            r#", "channels": 3, "height": 8, "width": 8, "normalize": {"mean": [0.5], "std": [1]}"#
        ))
        .contains("normalize"));
        assert!(bad(
            r#"{"name": "img", "category": "ehr_data", "media": {"modality": []},
                "channels": 1, "height": 8, "width": 8}"#
        )
        .contains("media.modality"));
        assert!(bad(&image(
            r#", "channels": 1, "height": 8, "width": 8, "resize": "bilinear""#
        ))
        .contains("resize"));
        assert!(bad(
            &image(r#", "channels": 1, "height": 8, "width": 8"#).replace("ehr_data", "x-rays")
        )
        .contains("x-rays"));
        // with a time series as well
        let text = format!(
            r#"{{"name": "t", "cohort": {{"unit": "encounter", "index": "admission", "category": "ehr_data"}},
              "image": {},
              "time_series": {{"hours": 2, "channels": [{{"name": "hr", "category": "ehr_data",
                 "observation": {{"system": "http://loinc.org", "code": "8867-4"}}}}]}},
              "label": {{"name": "y", "category": "ehr_data",
                "source": {{"death": {{"within": "30d"}}}}}}}}"#,
            image(r#", "channels": 1, "height": 8, "width": 8"#)
        );
        let err = FeatureSpec::from_json(&text).unwrap_err().to_string();
        assert!(err.contains("not both"), "{err}");
        // no image and no features
        let err = FeatureSpec::from_json(
            r#"{"name": "t", "label": {"name": "y", "category": "ehr_data",
                "source": {"condition": {"system": "s", "code": "c"}}}}"#,
        )
        .unwrap_err();
        assert!(matches!(err, crate::SpecError::NoFeatures), "{err}");
        // a CSV extract has no pictures to read
        let text = format!(
            r#"{{"name": "t", "image": {},
              "label": {{"name": "y", "category": "ehr_data",
                "source": {{"condition": {{"system": "s", "code": "c"}}}}}}}}"#,
            image(r#", "channels": 1, "height": 8, "width": 8"#)
        );
        let with_image = FeatureSpec::from_json(&text).unwrap();
        assert!(matches!(
            crate::csv_source::read_csv(&with_image, "pseudonym,split,label\n".as_bytes()),
            Err(crate::SourceError::ImageNeedsFhir)
        ));
    }

    #[test]
    fn wrong_type_size_or_bytes_are_typed_errors() {
        let s = spec(1, "");
        let file = png(
            2,
            2,
            png::ColorType::Grayscale,
            png::BitDepth::Eight,
            &[0; 4],
        );
        assert_eq!(
            decode(Some("image/png"), &file, &s),
            Err(ImageError::Geometry {
                found_width: 2,
                found_height: 2,
                width: 3,
                height: 2
            })
        );
        assert_eq!(
            decode(Some("image/jpeg"), &file, &s),
            Err(ImageError::ContentType(Some("image/jpeg".into())))
        );
        assert_eq!(decode(None, &file, &s), Err(ImageError::ContentType(None)));
        assert!(matches!(
            decode(Some("image/png"), b"not a png", &s),
            Err(ImageError::Decode(_))
        ));
        // a PNG cut short after its header
        let ok = png(
            3,
            2,
            png::ColorType::Grayscale,
            png::BitDepth::Eight,
            &[7; 6],
        );
        assert!(matches!(
            decode(Some("image/png"), &ok[..ok.len() - 20], &s),
            Err(ImageError::Decode(_))
        ));
        assert!(matches!(base64_bytes("@@@"), Err(ImageError::Base64(_))));
    }
}
