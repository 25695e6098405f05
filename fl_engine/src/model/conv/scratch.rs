//! Matrices reused as scratch space between matrix products: one refilled in place, and
//! one per width for the groups of images of a run.
use candle_core::{CpuStorage, DType, Device, InplaceOp1, Layout, Tensor};

/// A `[rows, cols]` f32 matrix reused as scratch space: products take candle tensors, and
/// an in-place op is candle's safe way to refill one tensor's own buffer between them
/// (a fresh tensor per image would allocate and zero its columns every time). Its rows are
/// `ld` apart, a whole and odd number of cache lines: rows a power of two apart (an 8x8 map
/// has 64 positions, 16 images side by side 1,024) map to the same few sets of the L1
/// cache, so one image's columns, written row after row, would evict each other.
pub(super) struct Scratch {
    buf: Tensor,
    cols: usize,
    ld: usize,
}

impl Scratch {
    pub(super) fn new(rows: usize, cols: usize) -> candle_core::Result<Self> {
        Self::stacked(1, rows, cols)
    }

    /// `stack` matrices `[rows, cols]` one after the other (`[stack, rows, cols]`, a batch
    /// of products; one matrix when `stack` is 1), rows `ld` apart throughout.
    fn stacked(stack: usize, rows: usize, cols: usize) -> candle_core::Result<Self> {
        let ld = (cols.div_ceil(16) | 1) * 16;
        let buf = if stack == 1 {
            Tensor::zeros((rows, ld), DType::F32, &Device::Cpu)?
        } else {
            Tensor::zeros((stack, rows, ld), DType::F32, &Device::Cpu)?
        };
        Ok(Self { buf, cols, ld })
    }

    /// Runs `fill` on the buffer (and its row pitch) and returns the matrix, a view of it.
    pub(super) fn fill(&self, fill: impl Fn(&mut [f32], usize)) -> candle_core::Result<Tensor> {
        self.buf
            .inplace_op1(&Fill(|b: &mut [f32]| fill(b, self.ld)))?;
        self.buf.narrow(self.buf.rank() - 1, 0, self.cols)
    }
}

/// Scratch matrices `[rows, images * len]` for the groups of images of one run: groups
/// differ by at most one image (see [`Geometry::images_per_product`]), so at most two widths,
/// each made when first needed.
///
/// [`Geometry::images_per_product`]: super::geometry::Geometry::images_per_product
pub(super) struct GroupScratch {
    stack: usize,
    rows: usize,
    len: usize,
    made: Vec<(usize, Scratch)>,
}

impl GroupScratch {
    pub(super) fn new(rows: usize, len: usize) -> Self {
        Self::stacked(1, rows, len)
    }

    /// As [`Scratch::stacked`]: `stack` matrices `[rows, images * len]` per width.
    pub(super) fn stacked(stack: usize, rows: usize, len: usize) -> Self {
        Self {
            stack,
            rows,
            len,
            made: Vec::with_capacity(2),
        }
    }

    /// The matrix for `images` images, refilled by `fill` (see [`Scratch::fill`]).
    pub(super) fn fill(
        &mut self,
        images: usize,
        fill: impl Fn(&mut [f32], usize),
    ) -> candle_core::Result<Tensor> {
        let i = match self.made.iter().position(|(n, _)| *n == images) {
            Some(i) => i,
            None => {
                let scratch = Scratch::stacked(self.stack, self.rows, images * self.len)?;
                self.made.push((images, scratch));
                self.made.len() - 1
            }
        };
        self.made[i].1.fill(fill)
    }
}

struct Fill<F>(F);

impl<F: Fn(&mut [f32])> InplaceOp1 for Fill<F> {
    fn name(&self) -> &'static str {
        "fill-scratch"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
        match (s, l.contiguous_offsets()) {
            (CpuStorage::F32(v), Some((a, b))) => {
                (self.0)(&mut v[a..b]);
                Ok(())
            }
            _ => candle_core::bail!("scratch matrix must be contiguous f32"),
        }
    }
}
