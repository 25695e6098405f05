//! FedMAP's learnt prior `R(theta; mu, psi)`: one input-convex network per parameter tensor
//! plus the Gaussian and weight-decay terms, evaluated with candle so that its gradients with
//! respect to theta (at the site) and to psi (at the server) come from autograd.
//!
//! For a shared tensor `t` with `n` values the network `f_t` is
//!
//! ```text
//! z_0 = x_t(theta_t, mu_t)                       (input, see below)
//! z_1 = softplus(W_0 z_0 + b_0)                  W_0 free (exact form) or >= 0 (summary form)
//! z_l = softplus(W_{l-1} z_{l-1} + b_{l-1})      W >= 0, for every further hidden layer
//! f_t = W_L z_L                                  W_L >= 0, no bias
//! ```
//!
//! * Exact form (`n <= exact_cap`): `x_t = [theta_t; mu_t]` (2n values), the paper's input.
//!   Affine in (theta, mu), then non-negative combinations of convex non-decreasing softplus
//!   layers: f_t is jointly convex in (theta_t, mu_t).
//! * Summary form (`n > exact_cap`): `x_t = (d_1, ..., d_B)` with
//!   `d_b = mean_{i in bucket b} (theta_i - mu_i)^2` over B contiguous buckets of the
//!   flattened tensor (bucket b = indices `[b n / B, (b + 1) n / B)`, B clipped to n). Every
//!   `d_b` is convex in theta, and with *all* weights non-negative the network is convex and
//!   non-decreasing in its inputs, so f_t stays convex in theta (and in mu).
//!
//! Size of psi for hidden widths `h_1..h_L` (defaults [64, 32]):
//! `P(in) = in h_1 + h_1 + sum_{l>1} (h_{l-1} h_l + h_l) + h_L`, with `in = 2n` (exact) or
//! `min(B, n)` (summary). With the defaults that is `128 n + 2176` values per tensor up to the
//! cap and `64 B + 2176` above it, so psi is at most `T (128 cap + 2176)` values for T tensors
//! whatever the model size (cap 512: <= 67,712 values per tensor).
//!
//! The output layer has no bias: a constant does not move the MAP estimate, and the server's
//! objective (below) would push it down without bound.
use candle_core::{DType, Device, Tensor, Var};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{EngineError, Result};
use crate::params::ParameterSet;

/// Extras entry carrying a site's log-weight `log omega_k` (a 1-element tensor).
pub(crate) const LOG_WEIGHT: &str = "fedmap.log_weight";
/// Prefix of the prior's parameters inside `FitIns::extras`.
pub(crate) const PSI_PREFIX: &str = "fedmap.psi.";

/// Input construction of one tensor's network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// `[theta_t; mu_t]`.
    Exact,
    /// Mean squared deviation over this many buckets.
    Summary(usize),
}

/// The prior's hyperparameters and architecture.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Prior {
    pub alpha: f32,
    pub eps: f32,
    pub hidden: Vec<usize>,
    pub exact_cap: usize,
    pub buckets: usize,
}

fn psi_name(tensor: &str, layer: usize, part: &str) -> String {
    format!("{PSI_PREFIX}{tensor}.{layer}.{part}")
}

/// `softplus(x) = max(x, 0) + log(1 + exp(-|x|))`, exact and overflow-free; candle's
/// derivatives of relu and abs at 0 (both taken as 1) give the right slope 1/2 there.
fn softplus(x: &Tensor) -> candle_core::Result<Tensor> {
    (x.abs()?.neg()?.exp()? + 1.0)?.log()?.add(&x.relu()?)
}

fn to_f64(t: &Tensor) -> Result<f64> {
    Ok(t.to_dtype(DType::F64)?.to_scalar::<f64>()?)
}

fn flat(t: &ParameterSet, name: &str) -> Result<Vec<f32>> {
    t.get(name)
        .map(|d| d.values.clone())
        .ok_or_else(|| EngineError::MissingParameter(name.to_string()))
}

/// One tensor's network as candle tensors (constants or variables).
struct Layers {
    weights: Vec<Tensor>,
    biases: Vec<Tensor>,
}

impl Prior {
    pub fn form(&self, numel: usize) -> Form {
        if numel <= self.exact_cap {
            Form::Exact
        } else {
            Form::Summary(self.buckets.min(numel).max(1))
        }
    }

    fn input_width(&self, numel: usize) -> usize {
        match self.form(numel) {
            Form::Exact => 2 * numel,
            Form::Summary(b) => b,
        }
    }

    /// `(name, shape, constrained)` of every psi tensor for shared tensor `tensor`.
    fn layout(&self, tensor: &str, numel: usize) -> Vec<(String, Vec<usize>, bool)> {
        let summary = matches!(self.form(numel), Form::Summary(_));
        let mut out = Vec::new();
        let mut width = self.input_width(numel);
        for (l, &h) in self.hidden.iter().enumerate() {
            out.push((
                psi_name(tensor, l, "weight"),
                vec![h, width],
                summary || l > 0,
            ));
            out.push((psi_name(tensor, l, "bias"), vec![h], false));
            width = h;
        }
        out.push((
            psi_name(tensor, self.hidden.len(), "weight"),
            vec![1, width],
            true,
        ));
        out
    }

    /// Number of psi values for a model whose shared tensors are `shared`.
    pub fn psi_size(&self, shared: &ParameterSet) -> usize {
        shared
            .iter()
            .flat_map(|(name, t)| self.layout(name, t.values.len()))
            .map(|(_, shape, _)| shape.iter().product::<usize>())
            .sum()
    }

    /// Seeded initial psi: PyTorch's `nn.Linear` bounds `U(-1/sqrt(fan_in), 1/sqrt(fan_in))`,
    /// with the absolute value taken for the weights that must be non-negative.
    ///
    /// In the exact form the first layer is then made mirror-symmetric so that the initial
    /// prior is centred on mu: hidden unit `h/2 + j` gets the row `[-a_j, a_j]` of unit j's
    /// `[a_j, -a_j]` (a_j = its first n draws) and the same bias, and every unit of the next
    /// layer weighs the two alike (an odd unit out gets a zero row). Then
    /// `f(theta, mu) = g(theta - mu)` with g even and convex, so the initial f is smallest, with
    /// zero gradient, at theta = mu, instead of pushing every site along a random direction.
    /// Training psi may break the symmetry (the first layer is free). The summary form needs
    /// no such step: it is non-decreasing in squared deviations, hence smallest at theta = mu.
    pub fn init(&self, shared: &ParameterSet, seed: u64) -> Result<ParameterSet> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut psi = ParameterSet::new();
        for (tensor, t) in shared.iter() {
            let numel = t.values.len();
            let layout = self.layout(tensor, numel);
            // the bias of layer l shares its weight's fan-in
            let mut fan_in = 1;
            for (name, shape, constrained) in layout {
                if shape.len() == 2 {
                    fan_in = shape[1];
                }
                let bound = 1.0 / (fan_in.max(1) as f32).sqrt();
                let n: usize = shape.iter().product();
                let values = (0..n)
                    .map(|_| {
                        let v = rng.random_range(-bound..bound);
                        if constrained {
                            v.abs()
                        } else {
                            v
                        }
                    })
                    .collect();
                psi.insert(name, shape, values)?;
            }
            if self.form(numel) == Form::Exact {
                self.mirror(tensor, numel, &mut psi)?;
            }
        }
        Ok(psi)
    }

    /// The mirror-symmetric first layer of [`Prior::init`] for tensor `tensor`.
    fn mirror(&self, tensor: &str, n: usize, psi: &mut ParameterSet) -> Result<()> {
        let h = self.hidden.first().copied().unwrap_or(0);
        if h == 0 {
            return Ok(());
        }
        let half = h / 2;
        let w0 = psi_name(tensor, 0, "weight");
        let b0 = psi_name(tensor, 0, "bias");
        let w1 = psi_name(tensor, 1, "weight");
        let mut w = flat(psi, &w0)?;
        let mut b = flat(psi, &b0)?;
        let mut next = flat(psi, &w1)?;
        for j in 0..half {
            for i in 0..n {
                let a = w[j * 2 * n + i];
                w[j * 2 * n + n + i] = -a;
                w[(half + j) * 2 * n + i] = -a;
                w[(half + j) * 2 * n + n + i] = a;
            }
            b[half + j] = b[j];
        }
        if h % 2 == 1 {
            w[(h - 1) * 2 * n..h * 2 * n]
                .iter_mut()
                .for_each(|v| *v = 0.0);
        }
        for row in next.chunks_exact_mut(h) {
            for j in 0..half {
                row[half + j] = row[j];
            }
        }
        psi.insert(w0, vec![h, 2 * n], w)?;
        psi.insert(b0, vec![h], b)?;
        let rows = next.len() / h;
        psi.insert(w1, vec![rows, h], next)?;
        Ok(())
    }

    /// Fail unless `psi` has exactly the tensors this prior needs for `shared`, finite values
    /// and non-negative constrained weights.
    pub fn check(&self, shared: &ParameterSet, psi: &ParameterSet) -> Result<()> {
        let mut expected = ParameterSet::new();
        for (tensor, t) in shared.iter() {
            for (name, shape, _) in self.layout(tensor, t.values.len()) {
                let n = shape.iter().product();
                expected.insert(name, shape, vec![0.0; n])?;
            }
        }
        expected.check_compatible(psi)?;
        psi.ensure_finite()?;
        for (tensor, t) in shared.iter() {
            for (name, _, constrained) in self.layout(tensor, t.values.len()) {
                if constrained && flat(psi, &name)?.iter().any(|v| *v < 0.0) {
                    return Err(EngineError::InvalidConfig(format!(
                        "prior weight `{name}` must be non-negative (input convexity)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Project psi onto the convex set: constrained weights clamped to >= 0.
    pub fn clamp(&self, shared: &ParameterSet, psi: &mut ParameterSet) {
        let constrained: Vec<String> = shared
            .iter()
            .flat_map(|(tensor, t)| self.layout(tensor, t.values.len()))
            .filter(|(_, _, c)| *c)
            .map(|(name, _, _)| name)
            .collect();
        for (name, t) in psi.iter_mut() {
            if constrained.iter().any(|c| c == name) {
                t.values.iter_mut().for_each(|v| *v = v.max(0.0));
            }
        }
    }

    fn layers(
        &self,
        tensor: &str,
        numel: usize,
        get: &dyn Fn(&str) -> Result<Tensor>,
    ) -> Result<Layers> {
        let mut weights = Vec::new();
        let mut biases = Vec::new();
        for (name, _, _) in self.layout(tensor, numel) {
            let t = get(&name)?;
            if name.ends_with(".bias") {
                biases.push(t);
            } else {
                weights.push(t);
            }
        }
        Ok(Layers { weights, biases })
    }

    /// Network inputs `[rows, in]` for the rows `thetas` (each `[n]`) around `mu` (`[n]`).
    fn inputs(&self, thetas: &[Tensor], mu: &Tensor) -> Result<Tensor> {
        let n = mu.elem_count();
        let rows = thetas
            .iter()
            .map(|theta| -> Result<Tensor> {
                Ok(match self.form(n) {
                    Form::Exact => Tensor::cat(&[theta, mu], 0)?,
                    Form::Summary(b) => {
                        let sq = theta.sub(mu)?.sqr()?;
                        let parts = (0..b)
                            .map(|i| {
                                let (start, end) = (i * n / b, (i + 1) * n / b);
                                sq.narrow(0, start, end - start)?.mean_all()
                            })
                            .collect::<candle_core::Result<Vec<_>>>()?;
                        Tensor::stack(&parts, 0)?
                    }
                }
                .unsqueeze(0)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&rows, 0)?)
    }

    /// `f_t` for every row of `z` (`[rows, in]`), as `[rows, 1]`.
    fn forward(layers: &Layers, z: Tensor) -> Result<Tensor> {
        let mut z = z;
        for (w, b) in layers.weights.iter().zip(&layers.biases) {
            z = softplus(&z.matmul(&w.t()?)?.broadcast_add(&b.unsqueeze(0)?)?)?;
        }
        let out = layers
            .weights
            .last()
            .ok_or_else(|| EngineError::InvalidConfig("prior has no layers".into()))?;
        Ok(z.matmul(&out.t()?)?)
    }

    /// `(alpha/2)||theta - mu||^2 + eps(||theta||^2 + ||mu||^2)`, in f64.
    fn quadratic(&self, theta: &ParameterSet, mu: &ParameterSet) -> Result<f64> {
        let d = theta.sub(mu)?.l2_norm();
        let (a, b) = (theta.l2_norm(), mu.l2_norm());
        Ok(self.alpha as f64 / 2.0 * d * d + self.eps as f64 * (a * a + b * b))
    }

    /// `R(theta; mu, psi)` and its gradient with respect to theta (on the tensors of `mu`).
    pub fn value_and_grad(
        &self,
        psi: &ParameterSet,
        theta: &ParameterSet,
        mu: &ParameterSet,
    ) -> Result<(f64, ParameterSet)> {
        let dev = Device::Cpu;
        let mut value = self.quadratic(theta, mu)?;
        let mut grads = ParameterSet::new();
        let const_psi = |name: &str| -> Result<Tensor> {
            let t = psi
                .get(name)
                .ok_or_else(|| EngineError::MissingParameter(name.to_string()))?;
            Ok(Tensor::from_slice(&t.values, t.shape.as_slice(), &dev)?)
        };
        for (name, m) in mu.iter() {
            let th = flat(theta, name)?;
            let n = m.values.len();
            let var = Var::from_slice(&th, n, &dev)?;
            let mu_t = Tensor::from_slice(&m.values, n, &dev)?;
            let layers = self.layers(name, n, &const_psi)?;
            let f = Self::forward(&layers, self.inputs(&[var.as_tensor().clone()], &mu_t)?)?
                .sum_all()?;
            value += to_f64(&f)?;
            let back = crate::model::backward(&f)?;
            let mut g = match back.get(var.as_tensor()) {
                Some(g) => g.to_vec1::<f32>()?,
                None => vec![0.0; n],
            };
            for ((g, t), c) in g.iter_mut().zip(&th).zip(&m.values) {
                *g += self.alpha * (t - c) + 2.0 * self.eps * t;
            }
            grads.insert(name.clone(), m.shape.clone(), g)?;
        }
        if !value.is_finite() {
            return Err(EngineError::NonFinite("FedMAP prior".into()));
        }
        Ok((value, grads))
    }

    /// `R(theta; mu, psi)`.
    pub fn value(
        &self,
        psi: &ParameterSet,
        theta: &ParameterSet,
        mu: &ParameterSet,
    ) -> Result<f64> {
        Ok(self.value_and_grad(psi, theta, mu)?.0)
    }

    /// `J(psi) = sum_k w_k R(theta_k; mu, psi)` (weights already normalised) and its gradient
    /// with respect to psi. Only the networks depend on psi; the quadratic terms are included
    /// in the value for reporting.
    pub fn server_objective(
        &self,
        psi: &ParameterSet,
        thetas: &[&ParameterSet],
        weights: &[f64],
        mu: &ParameterSet,
    ) -> Result<(f64, ParameterSet)> {
        if thetas.len() != weights.len() || thetas.is_empty() {
            return Err(EngineError::InvalidConfig(
                "site models and weights do not line up".into(),
            ));
        }
        let dev = Device::Cpu;
        let mut value = 0.0;
        for (theta, w) in thetas.iter().zip(weights) {
            value += w * self.quadratic(theta, mu)?;
        }
        let vars: Vec<(String, Var)> = psi
            .iter()
            .map(|(name, t)| -> Result<(String, Var)> {
                Ok((
                    name.clone(),
                    Var::from_slice(&t.values, t.shape.as_slice(), &dev)?,
                ))
            })
            .collect::<Result<_>>()?;
        let var_of = |name: &str| -> Result<Tensor> {
            vars.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_tensor().clone())
                .ok_or_else(|| EngineError::MissingParameter(name.to_string()))
        };
        let w = Tensor::from_vec(
            weights.iter().map(|w| *w as f32).collect::<Vec<_>>(),
            (weights.len(), 1),
            &dev,
        )?;
        let mut total: Option<Tensor> = None;
        for (name, m) in mu.iter() {
            let n = m.values.len();
            let mu_t = Tensor::from_slice(&m.values, n, &dev)?;
            let rows = thetas
                .iter()
                .map(|th| Ok(Tensor::from_vec(flat(th, name)?, n, &dev)?))
                .collect::<Result<Vec<_>>>()?;
            let layers = self.layers(name, n, &var_of)?;
            let f = Self::forward(&layers, self.inputs(&rows, &mu_t)?)?
                .mul(&w)?
                .sum_all()?;
            total = Some(match total {
                None => f,
                Some(t) => t.add(&f)?,
            });
        }
        let total = total.ok_or(EngineError::NoUpdates)?;
        value += to_f64(&total)?;
        if !value.is_finite() {
            return Err(EngineError::NonFinite("FedMAP prior objective".into()));
        }
        let back = crate::model::backward(&total)?;
        let mut grads = ParameterSet::new();
        for (name, var) in &vars {
            let g = match back.get(var.as_tensor()) {
                Some(g) => g.flatten_all()?.to_vec1::<f32>()?,
                None => vec![0.0; var.elem_count()],
            };
            grads.insert(name.clone(), var.dims().to_vec(), g)?;
        }
        Ok((value, grads))
    }
}

/// Normalised weights `omega_k / sum_j omega_j = exp(l_k - logsumexp(l))` from log-weights,
/// computed in log space so that log-likelihoods of -1e4 do not underflow.
pub(crate) fn normalised_weights(log_weights: &[f64]) -> Result<Vec<f64>> {
    if log_weights.is_empty() {
        return Err(EngineError::NoUpdates);
    }
    if log_weights.iter().any(|l| !l.is_finite()) {
        return Err(EngineError::NonFinite("FedMAP log-weight".into()));
    }
    let max = log_weights
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    let lse = max
        + log_weights
            .iter()
            .map(|l| (l - max).exp())
            .sum::<f64>()
            .ln();
    Ok(log_weights.iter().map(|l| (l - lse).exp()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, v: Vec<f32>) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert(name, vec![v.len()], v).unwrap();
        p
    }

    fn prior(alpha: f32, eps: f32, hidden: Vec<usize>, cap: usize, buckets: usize) -> Prior {
        Prior {
            alpha,
            eps,
            hidden,
            exact_cap: cap,
            buckets,
        }
    }

    #[test]
    fn exact_form_forward_and_gradient_by_hand() {
        // tensor w with 2 values, hidden [2]; input z = [theta; mu] = [1, -1, 0.5, 0]
        // layer 0: W = [[1, 0, 0, 0], [0, 1, -1, 0]], b = [0, 0.5] -> pre = [1, -1]
        // h = [softplus(1), softplus(-1)] = [1.3132617, 0.3132617]; f = [1, 2] . h = 1.9397851
        // alpha = 0.5, eps = 0.25: (0.5/2)(0.5^2 + 1^2) = 0.3125, 0.25 (1 + 1 + 0.25) = 0.5625
        // R = 1.9397851 + 0.3125 + 0.5625 = 2.8147851
        // dR/dtheta_0 = 1 sigmoid(1) 1 + 0.5 (1 - 0.5) + 2 0.25 1 = 0.7310586 + 0.75 = 1.4810586
        // dR/dtheta_1 = 2 sigmoid(-1) 1 + 0.5 (-1 - 0) + 2 0.25 (-1) = 0.5378828 - 1 = -0.4621172
        let p = prior(0.5, 0.25, vec![2], 512, 16);
        let mut psi = ParameterSet::new();
        psi.insert(
            "fedmap.psi.w.0.weight",
            vec![2, 4],
            vec![1., 0., 0., 0., 0., 1., -1., 0.],
        )
        .unwrap();
        psi.insert("fedmap.psi.w.0.bias", vec![2], vec![0., 0.5])
            .unwrap();
        psi.insert("fedmap.psi.w.1.weight", vec![1, 2], vec![1., 2.])
            .unwrap();
        let mu = one("w", vec![0.5, 0.0]);
        p.check(&mu, &psi).unwrap();
        let (r, g) = p
            .value_and_grad(&psi, &one("w", vec![1.0, -1.0]), &mu)
            .unwrap();
        assert!((r - 2.8147851).abs() < 1e-5, "R = {r}");
        let g = &g.get("w").unwrap().values;
        assert!((g[0] - 1.4810586).abs() < 1e-5, "{g:?}");
        assert!((g[1] + 0.4621172).abs() < 1e-5, "{g:?}");
        // the layout is what init produces and what sites check
        assert_eq!(p.init(&mu, 3).unwrap().len(), 3);
        assert_eq!(p.psi_size(&mu), 8 + 2 + 2);
    }

    #[test]
    fn initial_prior_is_centred_on_mu() {
        // odd and even first-layer widths, two layers and one
        for hidden in [vec![5, 3], vec![4]] {
            let p = prior(0.0, 0.0, hidden, 512, 16);
            let mu = one("w", vec![0.3, -0.2, 0.7]);
            let psi = p.init(&mu, 11).unwrap();
            p.check(&mu, &psi).unwrap();
            let (_, g) = p.value_and_grad(&psi, &mu, &mu).unwrap();
            assert!(
                g.get("w").unwrap().values.iter().all(|v| v.abs() < 1e-6),
                "{g:?}"
            );
            let d = [0.5f32, -1.0, 0.25];
            let at = |sign: f32| {
                let v = mu
                    .get("w")
                    .unwrap()
                    .values
                    .iter()
                    .zip(d)
                    .map(|(m, d)| m + sign * d);
                p.value(&psi, &one("w", v.collect()), &mu).unwrap()
            };
            let f0 = p.value(&psi, &mu, &mu).unwrap();
            assert!((at(1.0) - at(-1.0)).abs() < 1e-5);
            assert!(at(1.0) > f0);
        }
    }

    #[test]
    fn summary_form_forward_by_hand() {
        // cap 0 forces the summary input; 3 values in 2 buckets: [0, 1) and [1, 3)
        // theta - mu = [1, 2, 4]: d = [1, (4 + 16) / 2] = [1, 10]
        // hidden [1]: pre = 0.5 * 1 + 0.1 * 10 - 2 = -0.5; f = 3 softplus(-0.5) = 1.4222310
        let p = prior(0.0, 0.0, vec![1], 0, 2);
        assert_eq!(p.form(3), Form::Summary(2));
        assert_eq!(p.form(1), Form::Summary(1));
        let mut psi = ParameterSet::new();
        psi.insert("fedmap.psi.w.0.weight", vec![1, 2], vec![0.5, 0.1])
            .unwrap();
        psi.insert("fedmap.psi.w.0.bias", vec![1], vec![-2.0])
            .unwrap();
        psi.insert("fedmap.psi.w.1.weight", vec![1, 1], vec![3.0])
            .unwrap();
        let mu = one("w", vec![0.0, 0.0, 0.0]);
        p.check(&mu, &psi).unwrap();
        let r = p.value(&psi, &one("w", vec![1.0, 2.0, 4.0]), &mu).unwrap();
        assert!((r - 1.4222310).abs() < 1e-5, "R = {r}");
        // every weight of the summary form is constrained, the first layer included
        let mut neg = psi.clone();
        neg.insert("fedmap.psi.w.0.weight", vec![1, 2], vec![-0.5, 0.1])
            .unwrap();
        assert!(p.check(&mu, &neg).is_err());
        p.clamp(&mu, &mut neg);
        assert_eq!(
            neg.get("fedmap.psi.w.0.weight").unwrap().values,
            vec![0.0, 0.1]
        );
        // a prior for another model is refused
        assert!(p.check(&one("v", vec![0.0; 3]), &psi).is_err());
    }

    /// Largest violation of `f((a+b)/2) <= (f(a) + f(b))/2` over random pairs.
    fn worst_midpoint_gap(p: &Prior, psi: &ParameterSet, n: usize, seed: u64) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mu = one("w", (0..n).map(|_| rng.random_range(-1.0..1.0)).collect());
        let mut worst = f64::NEG_INFINITY;
        for _ in 0..40 {
            let a: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
            let m: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (x + y) / 2.0).collect();
            let f = |v: Vec<f32>| p.value(psi, &one("w", v), &mu).unwrap();
            let gap = f(m) - (f(a) + f(b)) / 2.0;
            worst = worst.max(gap);
        }
        worst
    }

    /// Random psi (not just the initial one): free weights of either sign, constrained ones
    /// drawn in [-1, 1] and then clamped (or left negative when `clamp` is false).
    fn random_psi(p: &Prior, shared: &ParameterSet, seed: u64, clamp: bool) -> ParameterSet {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut psi = p.init(shared, seed).unwrap();
        for (_, t) in psi.iter_mut() {
            t.values
                .iter_mut()
                .for_each(|v| *v = rng.random_range(-1.0..1.0));
        }
        if clamp {
            p.clamp(shared, &mut psi);
        }
        psi
    }

    #[test]
    fn networks_are_convex_in_theta_after_clamping() {
        for (cap, n) in [(512, 3), (0, 7)] {
            let p = prior(0.0, 0.0, vec![8, 4], cap, 3);
            let shared = one("w", vec![0.0; n]);
            for seed in 0..4 {
                let psi = random_psi(&p, &shared, seed, true);
                p.check(&shared, &psi).unwrap();
                let gap = worst_midpoint_gap(&p, &psi, n, seed);
                assert!(gap <= 1e-4, "cap {cap}: midpoint gap {gap}");
            }
        }
        // the check has teeth: with the constrained weights left negative it fails
        let p = prior(0.0, 0.0, vec![8, 4], 512, 3);
        let shared = one("w", vec![0.0; 3]);
        let worst = (0..4)
            .map(|s| worst_midpoint_gap(&p, &random_psi(&p, &shared, s, false), 3, s))
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(
            worst > 1e-3,
            "unconstrained networks looked convex: {worst}"
        );
    }

    #[test]
    fn log_space_weights_survive_tiny_likelihoods_and_match_softmax() {
        // exp(-1e4) underflows to 0 in f64, so naive normalisation gives 0/0
        assert_eq!((-1e4f64).exp(), 0.0);
        // softmax of [0, -1, -2]: e^0, e^-1, e^-2 over their sum 1.5032147
        // = [0.6652410, 0.2447285, 0.0900306]; shifting every log-weight changes nothing
        let w = normalised_weights(&[-1e4, -1e4 - 1.0, -1e4 - 2.0]).unwrap();
        for (got, want) in w.iter().zip([0.6652410, 0.2447285, 0.0900306]) {
            assert!((got - want).abs() < 1e-6, "{w:?}");
        }
        assert!(normalised_weights(&[]).is_err());
        assert!(normalised_weights(&[0.0, f64::NAN]).is_err());
        assert!(normalised_weights(&[0.0, f64::NEG_INFINITY]).is_err());
    }

    #[test]
    fn server_gradient_matches_finite_differences() {
        let p = prior(0.01, 1e-4, vec![4, 3], 512, 2);
        let shared = one("w", vec![0.0; 2]);
        let psi = p.init(&shared, 5).unwrap();
        let mu = one("w", vec![0.2, -0.1]);
        let (a, b) = (one("w", vec![1.0, 0.5]), one("w", vec![-0.7, 0.3]));
        let weights = [0.3, 0.7];
        let (j, g) = p.server_objective(&psi, &[&a, &b], &weights, &mu).unwrap();
        let direct = 0.3 * p.value(&psi, &a, &mu).unwrap() + 0.7 * p.value(&psi, &b, &mu).unwrap();
        assert!((j - direct).abs() < 1e-5);
        let name = "fedmap.psi.w.1.weight";
        let h = 1e-2f32;
        for i in 0..3 {
            let mut plus = psi.clone();
            let mut minus = psi.clone();
            for (n, t) in plus.iter_mut() {
                if n == name {
                    t.values[i] += h;
                }
            }
            for (n, t) in minus.iter_mut() {
                if n == name {
                    t.values[i] -= h;
                }
            }
            let jp = p
                .server_objective(&plus, &[&a, &b], &weights, &mu)
                .unwrap()
                .0;
            let jm = p
                .server_objective(&minus, &[&a, &b], &weights, &mu)
                .unwrap()
                .0;
            let fd = (jp - jm) / (2.0 * h as f64);
            let an = g.get(name).unwrap().values[i] as f64;
            assert!((fd - an).abs() < 1e-3 * (1.0 + an.abs()), "{fd} vs {an}");
        }
    }
}
