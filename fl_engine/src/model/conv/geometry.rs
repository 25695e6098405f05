//! The geometry of one convolution (sizes, stride, padding, output positions), how a 3x3
//! stride-1 convolution is computed, and how a batch is cut into runs of images per thread
//! and groups of images per matrix product.
use super::pool::parallel;

/// Geometry of one convolution (square kernel, same stride and padding on both axes).
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) batch: usize,
    pub(super) cin: usize,
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) cout: usize,
    pub(super) k: usize,
    pub(super) stride: usize,
    pub(super) pad: usize,
    /// Most values in one column matrix of images side by side ([`COLUMNS_PER_PRODUCT`];
    /// tests set 1 for one image per product).
    pub(super) columns: usize,
    /// How a 3x3 convolution with stride 1 and padding 1 is computed (others go by im2col).
    pub(super) algorithm: Algorithm,
}

/// How a 3x3 convolution with stride 1 and padding 1 is computed: by im2col, by Winograd's
/// F(2x2, 3x3) tiles ([`winograd`]), or by whichever of the two is faster for its channels
/// and map size (the engine's choice; tests pick one to compare them).
///
/// [`winograd`]: super::winograd
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Algorithm {
    Im2col,
    #[cfg(test)]
    Winograd,
    Fastest,
}

/// Most values in one column matrix of images side by side (1 MiB of f32, a core's L2 on
/// the AMD EPYC machines measured), so the columns stay in cache between unfolding and
/// product.
pub(super) const COLUMNS_PER_PRODUCT: usize = 1 << 18;

impl Geometry {
    pub(super) fn out_h(&self) -> usize {
        (self.h + 2 * self.pad - self.k) / self.stride + 1
    }

    pub(super) fn out_w(&self) -> usize {
        (self.w + 2 * self.pad - self.k) / self.stride + 1
    }

    /// Output positions per image.
    pub(super) fn positions(&self) -> usize {
        self.out_h() * self.out_w()
    }

    /// Rows of the column matrix: `in * k * k`.
    pub(super) fn patch(&self) -> usize {
        self.cin * self.k * self.k
    }

    /// Images per run: the batch in one contiguous run per rayon thread (fewer when there
    /// are fewer images), or one run when the work (the larger of input and output) is too
    /// small to split. The same in both directions, so that the backward pass meets the
    /// groups of images whose columns the forward pass kept.
    pub(super) fn images_per_run(&self) -> usize {
        let work = self.batch * (self.cin * self.h * self.w).max(self.cout * self.positions());
        let runs = if parallel(work) {
            rayon::current_num_threads().min(self.batch)
        } else {
            1
        };
        self.batch.div_ceil(runs.max(1)).max(1)
    }

    /// Images whose columns go side by side into one matrix product, for a run of `count`
    /// images: as many as keep that matrix within `columns` values (at least one), in
    /// groups of equal size but the run's last. Small maps thus share a product (at 8x8,
    /// one image's products are 9k-150k multiply-adds, and the cost of each call shows),
    /// large ones keep theirs.
    pub(super) fn images_per_product(&self, count: usize) -> usize {
        // the larger column matrix of the two directions: the input's, or (stride 1) the
        // output gradient's, unfolded for the input gradient
        let per_image = self
            .transposed()
            .map_or(0, |b| b.patch() * b.positions())
            .max(self.patch() * self.positions())
            .max(1);
        let most = (self.columns / per_image).clamp(1, count.max(1));
        count.div_ceil(count.max(1).div_ceil(most)).max(1)
    }
}
