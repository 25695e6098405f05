//! The CNN backbone's convolution and GroupNorm as single graph nodes with hand-written
//! backward passes.
//!
//! candle's CPU conv2d backward computes the input gradient with a direct-loop transposed
//! convolution and the kernel gradient with another convolution over permuted copies, and its
//! GroupNorm is about ten graph nodes (reshape, two means, subtract, square, add, sqrt,
//! divide, scale, shift), each with its own backward pass. Here a convolution unfolds each
//! image into columns (`im2col`, `[in * k * k, positions]`) and makes each direction one
//! matrix product per group of images, their columns side by side (one image per group for
//! large maps, up to [`COLUMNS_PER_PRODUCT`] values for small ones): forward `W cols`;
//! backward `cols dO^T` for the kernel (its transpose, so that `gemm` reads the columns along
//! their rows) and, for the input, with stride 1 the convolution of `dO` with the flipped
//! kernel (unfolded the same way), with larger strides `W^T dO` folded back (`col2im`). The
//! fused convolution-GroupNorm node keeps a small batch's columns (up to [`KEPT_COLUMNS`]
//! values) for its backward pass; other columns are rebuilt there, into one buffer per
//! thread. With more than one thread, each thread takes a contiguous run of images through
//! that whole chain. 3x3 stride-1 convolutions with enough channels go by Winograd's
//! F(2x2, 3x3) tiles instead ([`winograd`]), the same chain with 16 smaller products.
//! GroupNorm (optionally followed by ReLU) reads each group once for its statistics and
//! once to normalise, and its backward pass is the closed form
//! `dx = rstd (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂))`, `dx̂ = dy gamma`, with the statistics of
//! the forward pass where the fused node kept them. The backbone runs convolution and
//! GroupNorm as one node ([`conv_gn`]) and a residual block's skip sum and ReLU as another
//! ([`add_relu`]).
//!
//! Both keep candle's arithmetic (biased variance, `(x - mean) / sqrt(var + eps)` forward,
//! ReLU derivative 1 at 0) and fall back to candle's ops off the CPU or for other dtypes; the
//! tests compare values and gradients against those ops.
//!
//! By file: [`geometry`] (a convolution's sizes, runs of images per thread and groups per
//! product), [`im2col`] (unfolding and the batch's forward and backward passes on slices),
//! [`winograd`] (the F(2x2, 3x3) tiles), [`scratch`] (matrices refilled between products),
//! [`pool`] (splitting work over rayon's pool), [`conv2d`] (the convolution layer),
//! [`group_norm`] (GroupNorm and ReLU), [`conv_norm`] (the fused convolution-GroupNorm node),
//! [`skip_sum`] (the skip sum and ReLU) and [`body`] (the whole residual body as one node).
//!
//! [`COLUMNS_PER_PRODUCT`]: geometry::COLUMNS_PER_PRODUCT
//! [`KEPT_COLUMNS`]: im2col::KEPT_COLUMNS
mod body;
mod conv2d;
mod conv_norm;
mod geometry;
mod group_norm;
mod im2col;
mod pool;
mod scratch;
mod skip_sum;
#[cfg(test)]
mod testing;
mod winograd;

pub(crate) use body::{residual_body, ConvGnLayer, ResidualBlock};
pub(crate) use conv2d::Conv;
pub(crate) use conv_norm::conv_gn;
pub(crate) use group_norm::GroupNormAct;
pub(crate) use skip_sum::add_relu;
