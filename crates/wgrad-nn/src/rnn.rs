//! Recurrent layers: [`RNN`], [`LSTM`] and [`GRU`] (`torch.nn.RNN`,
//! `torch.nn.LSTM`, `torch.nn.GRU`), stacked and optionally bidirectional,
//! with PyTorch's parameter names (`weight_ih_l0`, `bias_hh_l1_reverse`,
//! ...), gate orders, shapes and defaults. The single-step cells
//! ([`RNNCell`](crate::RNNCell), [`LSTMCell`](crate::LSTMCell),
//! [`GRUCell`](crate::GRUCell)) share the step arithmetic.
//!
//! Each layer and direction first multiplies the whole input sequence by
//! `weight_ih` in one product (with `bias_ih` in its pass), then walks the
//! time steps with one `linear` of the hidden state by `weight_hh` (with
//! `bias_hh`) and the gate arithmetic per step, so they run on either
//! device and differentiate through the existing rules.

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;
use crate::dropout::Dropout;
use crate::rnn_cell::{CellKind, CellWeights};

/// The activation of an Elman [`RNN`] (`nonlinearity="tanh"` / `"relu"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RnnNonlinearity {
    /// `tanh` (PyTorch's default).
    Tanh,
    /// `relu`.
    Relu,
}

/// The sizes and switches of a recurrent layer: PyTorch's constructor
/// arguments with its defaults ([`RnnOptions::new`]).
#[derive(Clone, Copy, Debug)]
pub struct RnnOptions {
    /// `input_size`: features per time step of the input.
    pub input_size: usize,
    /// `hidden_size`: features of the hidden state.
    pub hidden_size: usize,
    /// `num_layers` (default 1): stacked layers, each fed the previous one's output.
    pub num_layers: usize,
    /// `bias` (default true): `bias_ih` and `bias_hh` in every layer.
    pub bias: bool,
    /// `batch_first` (default false): input and output `[N, L, H]`, not
    /// `[L, N, H]` (the hidden states stay `[layers * directions, N, H]`).
    pub batch_first: bool,
    /// `dropout` (default 0): dropout on every layer's output but the last,
    /// in training mode.
    pub dropout: f32,
    /// `bidirectional` (default false): a second pass from the last step to
    /// the first per layer, its output concatenated after the forward one.
    pub bidirectional: bool,
    /// `nonlinearity` of an [`RNN`] (default tanh; ignored by LSTM and GRU).
    pub nonlinearity: RnnNonlinearity,
}

impl RnnOptions {
    /// PyTorch's defaults for `input_size` and `hidden_size`.
    pub fn new(input_size: usize, hidden_size: usize) -> Self {
        RnnOptions {
            input_size,
            hidden_size,
            num_layers: 1,
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
            nonlinearity: RnnNonlinearity::Tanh,
        }
    }

    fn directions(&self) -> usize {
        if self.bidirectional { 2 } else { 1 }
    }
}

/// What [`RNN`], [`LSTM`] and [`GRU`] share: the options and the weights
/// of every layer and direction (layer-major).
struct Recurrent {
    kind: CellKind,
    options: RnnOptions,
    weights: Vec<CellWeights>,
    dropout: Dropout,
    training: bool,
}

impl Recurrent {
    fn new(kind: CellKind, options: RnnOptions, device: &Device) -> Result<Self> {
        let name = kind.name();
        if options.hidden_size == 0 {
            return Err(Error::invalid(
                name,
                "hidden_size must be greater than zero",
            ));
        }
        if options.num_layers == 0 {
            return Err(Error::invalid(name, "num_layers must be greater than zero"));
        }
        if !(0.0..=1.0).contains(&options.dropout) {
            return Err(Error::invalid(
                name,
                format!(
                    "dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got {}",
                    options.dropout
                ),
            ));
        }
        let dirs = options.directions();
        let mut weights = Vec::with_capacity(options.num_layers * dirs);
        for layer in 0..options.num_layers {
            let input = if layer == 0 {
                options.input_size
            } else {
                options.hidden_size * dirs
            };
            for _ in 0..dirs {
                weights.push(CellWeights::new(
                    kind,
                    input,
                    options.hidden_size,
                    options.bias,
                    device,
                )?);
            }
        }
        Ok(Recurrent {
            kind,
            options,
            weights,
            dropout: Dropout::new(options.dropout)?,
            training: true,
        })
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let dirs = self.options.directions();
        let mut out = Vec::new();
        for (i, w) in self.weights.iter().enumerate() {
            let reverse = if i % dirs == 1 { "_reverse" } else { "" };
            w.push_named(&format!("_l{}{reverse}", i / dirs), &mut out);
        }
        out
    }

    fn move_to(&mut self, device: &Device) -> Result<()> {
        self.weights.iter_mut().try_for_each(|w| w.move_to(device))
    }

    fn set_training(&mut self, on: bool) {
        self.training = on;
        self.dropout.train(on);
    }

    /// Checks an initial state against `[layers * directions, N, H]` (or
    /// `[layers * directions, H]` for an unbatched input) and returns it
    /// batched, or zeros when there is none.
    fn initial(
        &self,
        state: Option<&Tensor>,
        which: &str,
        batch: usize,
        batched: bool,
        like: &Tensor,
    ) -> Result<Tensor> {
        let name = self.kind.name();
        let want = [
            self.options.num_layers * self.options.directions(),
            batch,
            self.options.hidden_size,
        ];
        let Some(h) = state else {
            return Tensor::full(&want, 0.0, like.dtype(), &like.device());
        };
        let h = if batched {
            if h.rank() != 3 {
                return Err(Error::invalid(
                    name,
                    format!(
                        "for batched 3-D input, {which} should also be 3-D but got {}-D tensor",
                        h.rank()
                    ),
                ));
            }
            h.clone()
        } else {
            if h.rank() != 2 {
                return Err(Error::invalid(
                    name,
                    format!(
                        "for unbatched 2-D input, {which} should also be 2-D but got {}-D tensor",
                        h.rank()
                    ),
                ));
            }
            h.unsqueeze(1)?
        };
        if h.shape() != want.as_slice() {
            return Err(Error::invalid(
                name,
                format!(
                    "expected {which} size {want:?}, got {:?}",
                    h.shape().as_slice()
                ),
            ));
        }
        if !h.device().same(&like.device()) {
            return Err(Error::invalid(
                name,
                format!(
                    "{which} is on {} but the input is on {}",
                    h.device(),
                    like.device()
                ),
            ));
        }
        Ok(h)
    }

    /// The whole forward pass: `(output, h_n, c_n)` (`c_n` for an LSTM).
    fn run(
        &self,
        input: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let name = self.kind.name();
        let o = &self.options;
        let batched = match input.rank() {
            3 => true,
            2 => false,
            r => {
                return Err(Error::invalid(
                    name,
                    format!("expected input to be 2D or 3D, got {r}D instead"),
                ));
            }
        };
        if !input.dtype().is_float() {
            return Err(Error::invalid(
                name,
                format!("input must be a float tensor, got {}", input.dtype()),
            ));
        }
        // Time-major [L, N, H_in] from here on.
        let x = if !batched {
            input.unsqueeze(1)?
        } else if o.batch_first {
            input.transpose(0, 1)?
        } else {
            input.clone()
        };
        let (steps, batch, features) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        if features != o.input_size {
            return Err(Error::invalid(
                name,
                format!(
                    "input.size(-1) must be equal to input_size. Expected {}, got {features}",
                    o.input_size
                ),
            ));
        }
        if steps == 0 {
            return Err(Error::invalid(
                name,
                "expected sequence length to be larger than 0",
            ));
        }
        let lstm = self.kind == CellKind::Lstm;
        let (hx, cx) = if lstm {
            (
                self.initial(h0, "hidden[0]", batch, batched, &x)?,
                Some(self.initial(c0, "hidden[1]", batch, batched, &x)?),
            )
        } else {
            (self.initial(h0, "hidden", batch, batched, &x)?, None)
        };
        let dirs = o.directions();
        let mut layer_input = x;
        let (mut h_n, mut c_n) = (Vec::new(), Vec::new());
        for layer in 0..o.num_layers {
            let mut outputs = Vec::with_capacity(dirs);
            for dir in 0..dirs {
                let slot = layer * dirs + dir;
                let w = &self.weights[slot];
                // Every step's input product at once: [L, N, gates * H].
                let xw = layer_input.linear(&w.weight_ih, w.bias_ih.as_ref())?;
                let mut h = hx.select(0, slot as isize)?;
                let mut c = cx
                    .as_ref()
                    .map(|c| c.select(0, slot as isize))
                    .transpose()?;
                let mut per_step = vec![None; steps];
                for i in 0..steps {
                    let t = if dir == 0 { i } else { steps - 1 - i };
                    let (next_h, next_c) =
                        w.step(self.kind, &xw.select(0, t as isize)?, &h, c.as_ref())?;
                    per_step[t] = Some(next_h.clone());
                    h = next_h;
                    c = next_c;
                }
                let per_step: Vec<Tensor> = per_step.into_iter().flatten().collect();
                let refs: Vec<&Tensor> = per_step.iter().collect();
                outputs.push(Tensor::stack(&refs, 0)?);
                h_n.push(h);
                c_n.extend(c);
            }
            let refs: Vec<&Tensor> = outputs.iter().collect();
            let mut out = if dirs == 1 {
                outputs[0].clone()
            } else {
                Tensor::cat(&refs, 2)?
            };
            if layer + 1 < o.num_layers && self.training && o.dropout > 0.0 {
                out = self.dropout.forward(&out)?;
            }
            layer_input = out;
        }
        let mut output = layer_input;
        let stack = |states: &[Tensor]| -> Result<Tensor> {
            let refs: Vec<&Tensor> = states.iter().collect();
            let s = Tensor::stack(&refs, 0)?;
            if batched { Ok(s) } else { s.squeeze(1) }
        };
        if !batched {
            output = output.squeeze(1)?;
        } else if o.batch_first {
            output = output.transpose(0, 1)?;
        }
        let h_n = stack(&h_n)?;
        let c_n = if lstm { Some(stack(&c_n)?) } else { None };
        Ok((output, h_n, c_n))
    }
}

macro_rules! recurrent_module {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        pub struct $name {
            inner: Recurrent,
        }

        impl $name {
            /// The options this layer was built with.
            pub fn options(&self) -> &RnnOptions {
                &self.inner.options
            }
        }

        impl Module for $name {
            /// The output sequence for zero initial states (what
            /// `output, _ = layer(x)` gives in PyTorch).
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                Ok(self.inner.run(x, None, None)?.0)
            }
            fn named_parameters(&self) -> Vec<(String, Tensor)> {
                self.inner.named_parameters()
            }
            fn train(&mut self, on: bool) {
                self.inner.set_training(on);
            }
            fn is_training(&self) -> bool {
                self.inner.training
            }
            fn to_device(&mut self, device: &Device) -> Result<()> {
                self.inner.move_to(device)
            }
        }
    };
}

recurrent_module!(
    /// A multi-layer Elman RNN (`torch.nn.RNN`): `h_t = act(x_t W_ih^T +
    /// b_ih + h_{t-1} W_hh^T + b_hh)` with `act` tanh or relu
    /// ([`RnnOptions::nonlinearity`]).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{Module, RNN, RnnOptions};
    /// let rnn = RNN::new(RnnOptions::new(4, 8), &Device::Cpu)?;
    /// let (out, h_n) = rnn.forward_hidden(&Tensor::randn(&[5, 2, 4], &Device::Cpu)?, None)?;
    /// assert_eq!(out.shape(), [5, 2, 8]);
    /// assert_eq!(h_n.shape(), [1, 2, 8]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    RNN,
    CellKind::Rnn(RnnNonlinearity::Tanh)
);

recurrent_module!(
    /// A multi-layer long short-term memory (`torch.nn.LSTM`): gates
    /// `i, f, g, o` (in that order in the weights' rows), `c_t = f c_{t-1}
    /// + i g`, `h_t = o tanh(c_t)`.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{LSTM, Module, RnnOptions};
    /// let mut options = RnnOptions::new(4, 8);
    /// options.batch_first = true;
    /// let lstm = LSTM::new(options, &Device::Cpu)?;
    /// let (out, (h_n, c_n)) = lstm.forward_state(&Tensor::randn(&[2, 5, 4], &Device::Cpu)?, None)?;
    /// assert_eq!(out.shape(), [2, 5, 8]);
    /// assert_eq!(c_n.shape(), h_n.shape());
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    LSTM,
    CellKind::Lstm
);

recurrent_module!(
    /// A multi-layer gated recurrent unit (`torch.nn.GRU`): gates `r, z, n`
    /// (in that order in the weights' rows), `n = tanh(x W_in^T + b_in + r
    /// (h W_hn^T + b_hn))`, `h_t = (1 - z) n + z h_{t-1}`.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{GRU, Module, RnnOptions};
    /// let gru = GRU::new(RnnOptions::new(4, 8), &Device::Cpu)?;
    /// assert_eq!(gru.forward(&Tensor::randn(&[5, 4], &Device::Cpu)?)?.shape(), [5, 8]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    GRU,
    CellKind::Gru
);

impl RNN {
    /// A layer with PyTorch's initialisation (every parameter from
    /// `U(-1/sqrt(hidden), 1/sqrt(hidden))`, the default generator).
    pub fn new(options: RnnOptions, device: &Device) -> Result<Self> {
        let kind = CellKind::Rnn(options.nonlinearity);
        Ok(RNN {
            inner: Recurrent::new(kind, options, device)?,
        })
    }

    /// `output, h_n = rnn(x, h_0)`: `x` is `[L, N, H_in]` (`[N, L, H_in]`
    /// with `batch_first`, `[L, H_in]` unbatched); `h_0` and `h_n` are
    /// `[layers * directions, N, H]` (`[layers * directions, H]`
    /// unbatched), zeros when `h_0` is `None`; `output` has the input's
    /// layout with `directions * H` features.
    pub fn forward_hidden(&self, x: &Tensor, h0: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (out, h, _) = self.inner.run(x, h0, None)?;
        Ok((out, h))
    }
}

impl GRU {
    /// A layer with PyTorch's initialisation (see [`RNN::new`]).
    pub fn new(options: RnnOptions, device: &Device) -> Result<Self> {
        Ok(GRU {
            inner: Recurrent::new(CellKind::Gru, options, device)?,
        })
    }

    /// `output, h_n = gru(x, h_0)`, shapes as [`RNN::forward_hidden`].
    pub fn forward_hidden(&self, x: &Tensor, h0: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (out, h, _) = self.inner.run(x, h0, None)?;
        Ok((out, h))
    }
}

impl LSTM {
    /// A layer with PyTorch's initialisation (see [`RNN::new`]).
    pub fn new(options: RnnOptions, device: &Device) -> Result<Self> {
        Ok(LSTM {
            inner: Recurrent::new(CellKind::Lstm, options, device)?,
        })
    }

    /// `output, (h_n, c_n) = lstm(x, (h_0, c_0))`, shapes as
    /// [`RNN::forward_hidden`] for both states (zeros when `None`).
    pub fn forward_state(
        &self,
        x: &Tensor,
        state: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, (Tensor, Tensor))> {
        let (h0, c0) = match state {
            Some((h, c)) => (Some(h), Some(c)),
            None => (None, None),
        };
        let (out, h, c) = self.inner.run(x, h0, c0)?;
        let c = c.ok_or_else(|| Error::invalid("LSTM", "no cell state came out"))?;
        Ok((out, (h, c)))
    }
}

/// `torch.nn.utils.rnn.pad_sequence`: stacks sequences `[L_i, *]` of
/// equal trailing dims into `[L_max, B, *]` (`[B, L_max, *]` with
/// `batch_first`), each padded with `padding_value` after its end (or
/// before its start with `pad_left`, PyTorch's `padding_side="left"`).
/// Differentiable in every sequence.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let d = Device::Cpu;
/// let a = Tensor::ones(&[3, 2], &d)?;
/// let b = Tensor::ones(&[1, 2], &d)?;
/// let padded = wgrad_nn::rnn::pad_sequence(&[&a, &b], true, 0.0, false)?;
/// assert_eq!(padded.shape(), [2, 3, 2]);
/// assert_eq!(padded.to_vec_f32()?[6..], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn pad_sequence(
    sequences: &[&Tensor],
    batch_first: bool,
    padding_value: f32,
    pad_left: bool,
) -> Result<Tensor> {
    const OP: &str = "pad_sequence";
    let first = sequences
        .first()
        .ok_or_else(|| Error::invalid(OP, "received an empty list of sequences"))?;
    if first.rank() == 0 {
        return Err(Error::invalid(
            OP,
            "sequences must have at least one dim (the length)",
        ));
    }
    let trailing = first.shape()[1..].to_vec();
    let longest = sequences
        .iter()
        .map(|s| s.shape().first().copied().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let mut padded = Vec::with_capacity(sequences.len());
    for (i, s) in sequences.iter().enumerate() {
        if s.rank() == 0 || s.shape()[1..] != trailing[..] {
            return Err(Error::invalid(
                OP,
                format!(
                    "sequence {i} has shape {:?} but sequence 0 has trailing dims {trailing:?}",
                    s.shape().as_slice()
                ),
            ));
        }
        let missing = (longest - s.shape()[0]) as isize;
        // Pairs run from the last dim backwards: only the first dim's pair
        // is non-zero.
        let mut pad = vec![0isize; 2 * s.rank()];
        let last = pad.len() - 2;
        if pad_left {
            pad[last] = missing;
        } else {
            pad[last + 1] = missing;
        }
        padded.push(s.pad(&pad, wgrad_autograd::PadMode::Constant(padding_value))?);
    }
    let refs: Vec<&Tensor> = padded.iter().collect();
    Tensor::stack(&refs, if batch_first { 0 } else { 1 })
}
