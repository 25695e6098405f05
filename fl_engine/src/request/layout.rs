//! The row every model of a study reads, and where each part of it lies.

/// The flat row a node builds for every subject, as every model of a study reads it:
/// `[image | series | mask | static]`. With an image (`channels`, `height`, `width`), `image`
/// is its values channel-major (`torch.flatten` of a `[C, H, W]` tensor), as the CNN backbone
/// reads them. With a time series, `series` is the `[steps, channels]` values time-major
/// (`x[t0,c0], x[t0,c1], .., x[t1,c0], ..`), `mask` the presence mask in the same order (1
/// where the bin had an Observation: the engine's `per_value` mask layout); then the static
/// columns of the feature specification, in order. A specification has an image or a series,
/// never both; without either the row is the static columns alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLayout {
    /// `(channels, height, width)` of the image input, when the specification has one.
    pub image: Option<(usize, usize, usize)>,
    pub steps: usize,
    pub channels: usize,
    /// Per feature of the specification: its name and its static columns' range in the row.
    pub features: Vec<(String, std::ops::Range<usize>)>,
}

impl RowLayout {
    pub fn has_series(&self) -> bool {
        self.steps * self.channels > 0
    }

    /// Width of the image values (0 without an image).
    pub fn image_width(&self) -> usize {
        self.image.map_or(0, |(c, h, w)| c * h * w)
    }

    /// Width of the series values and their mask.
    pub fn series_width(&self) -> usize {
        2 * self.steps * self.channels
    }

    /// Where the series (then its mask) starts.
    pub fn series_start(&self) -> usize {
        self.image_width()
    }

    /// Where the static columns start.
    pub fn statics_start(&self) -> usize {
        self.image_width() + self.series_width()
    }

    /// Number of static columns.
    pub fn statics(&self) -> usize {
        self.width() - self.statics_start()
    }

    pub fn width(&self) -> usize {
        self.features
            .last()
            .map_or(self.statics_start(), |(_, r)| r.end)
    }
}
