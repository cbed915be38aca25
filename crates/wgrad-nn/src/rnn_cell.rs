//! The single-step recurrent cells [`RNNCell`], [`LSTMCell`] and
//! [`GRUCell`] (`torch.nn.RNNCell`, `LSTMCell`, `GRUCell`): one time step
//! of the layers in [`rnn`](crate::rnn), with PyTorch's parameter names
//! (`weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{BinaryOp, Error, Result};

use crate::Module;
use crate::init;
use crate::module::derive_support::TensorSlots;
use crate::rnn::RnnNonlinearity;

/// Which recurrence a layer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CellKind {
    Rnn(RnnNonlinearity),
    Lstm,
    Gru,
}

impl CellKind {
    /// Gate blocks stacked in the weights' rows.
    pub(crate) fn gates(self) -> usize {
        match self {
            CellKind::Rnn(_) => 1,
            CellKind::Lstm => 4,
            CellKind::Gru => 3,
        }
    }

    /// The module's PyTorch name, for errors.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CellKind::Rnn(_) => "RNN",
            CellKind::Lstm => "LSTM",
            CellKind::Gru => "GRU",
        }
    }
}

/// One layer-direction's (or one cell's) parameters.
#[derive(Clone)]
pub(crate) struct CellWeights {
    /// `[gates * hidden, input]`.
    pub(crate) weight_ih: Tensor,
    /// `[gates * hidden, hidden]`.
    pub(crate) weight_hh: Tensor,
    /// `[gates * hidden]`.
    pub(crate) bias_ih: Option<Tensor>,
    /// `[gates * hidden]`.
    pub(crate) bias_hh: Option<Tensor>,
}

impl CellWeights {
    /// PyTorch's initialisation: every parameter from `U(-k, k)`,
    /// `k = 1 / sqrt(hidden)`.
    pub(crate) fn new(
        kind: CellKind,
        input: usize,
        hidden: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Self> {
        let rows = kind.gates() * hidden;
        let k = 1.0 / (hidden as f32).sqrt();
        let param = |shape: &[usize]| -> Result<Tensor> {
            let t = Tensor::zeros(shape, device)?;
            init::uniform_(&t, -k, k)?;
            t.with_requires_grad(true)
        };
        Ok(CellWeights {
            weight_ih: param(&[rows, input])?,
            weight_hh: param(&[rows, hidden])?,
            bias_ih: bias.then(|| param(&[rows])).transpose()?,
            bias_hh: bias.then(|| param(&[rows])).transpose()?,
        })
    }

    /// Appends the four tensors under PyTorch's names with `suffix`
    /// (`_l0`, `_l1_reverse`, or nothing for a cell).
    pub(crate) fn push_named(&self, suffix: &str, out: &mut Vec<(String, Tensor)>) {
        self.weight_ih
            .push_named(&format!("weight_ih{suffix}"), out);
        self.weight_hh
            .push_named(&format!("weight_hh{suffix}"), out);
        self.bias_ih.push_named(&format!("bias_ih{suffix}"), out);
        self.bias_hh.push_named(&format!("bias_hh{suffix}"), out);
    }

    pub(crate) fn move_to(&mut self, device: &Device) -> Result<()> {
        self.weight_ih.move_to(device)?;
        self.weight_hh.move_to(device)?;
        self.bias_ih.move_to(device)?;
        self.bias_hh.move_to(device)
    }

    /// One time step: the new hidden state (and, for an LSTM, cell state)
    /// from `xw`, the input's product with `weight_ih` plus `bias_ih` for
    /// this step (`[N, gates * H]`), and the previous states `[N, H]`.
    pub(crate) fn step(
        &self,
        kind: CellKind,
        xw: &Tensor,
        h: &Tensor,
        c: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let hw = h.linear(&self.weight_hh, self.bias_hh.as_ref())?;
        match kind {
            CellKind::Rnn(act) => {
                let pre = xw.add(&hw)?;
                let h = match act {
                    RnnNonlinearity::Tanh => pre.tanh()?,
                    RnnNonlinearity::Relu => pre.relu()?,
                };
                Ok((h, None))
            }
            CellKind::Lstm => {
                let c = c.ok_or_else(|| Error::invalid("LSTM", "missing cell state"))?;
                // Gate order i, f, g, o, as PyTorch's weight rows.
                let gates = xw.add(&hw)?.chunk(4, 1)?;
                let i = gates[0].sigmoid()?;
                let f = gates[1].sigmoid()?;
                let g = gates[2].tanh()?;
                let o = gates[3].sigmoid()?;
                let c = f.mul(c)?.add(&i.mul(&g)?)?;
                let h = o.mul(&c.tanh()?)?;
                Ok((h, Some(c)))
            }
            CellKind::Gru => {
                // Gate order r, z, n; the candidate's hidden part is reset
                // after its bias, as PyTorch computes it.
                let x = xw.chunk(3, 1)?;
                let hh = hw.chunk(3, 1)?;
                let r = x[0].add(&hh[0])?.sigmoid()?;
                let z = x[1].add(&hh[1])?.sigmoid()?;
                let n = x[2].add(&r.mul(&hh[2])?)?.tanh()?;
                // (1 - z) * n + z * h.
                let keep = z.binary_scalar(BinaryOp::Sub, 1.0, true)?;
                Ok((keep.mul(&n)?.add(&z.mul(h)?)?, None))
            }
        }
    }
}

/// What the three cells share.
struct Cell {
    kind: CellKind,
    input_size: usize,
    hidden_size: usize,
    weights: CellWeights,
    training: bool,
}

impl Cell {
    fn new(
        kind: CellKind,
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Self> {
        let name = cell_name(kind);
        if hidden_size == 0 {
            return Err(Error::invalid(
                name,
                "hidden_size must be greater than zero",
            ));
        }
        Ok(Cell {
            kind,
            input_size,
            hidden_size,
            weights: CellWeights::new(kind, input_size, hidden_size, bias, device)?,
            training: true,
        })
    }

    /// Checks `x` (`[N, input]` or `[input]`) and a state (`[N, hidden]`
    /// or `[hidden]`, named `which`), and returns both batched (the state
    /// zeros when `None`) and whether the input was.
    fn batched(
        &self,
        x: &Tensor,
        state: Option<&Tensor>,
        which: &str,
    ) -> Result<(Tensor, Tensor, bool)> {
        let name = cell_name(self.kind);
        let batched = match x.rank() {
            2 => true,
            1 => false,
            r => {
                return Err(Error::invalid(
                    name,
                    format!("expected input to be 1D or 2D, got {r}D instead"),
                ));
            }
        };
        if !x.dtype().is_float() {
            return Err(Error::invalid(
                name,
                format!("input must be a float tensor, got {}", x.dtype()),
            ));
        }
        let in_rank = x.rank();
        let x = if batched { x.clone() } else { x.unsqueeze(0)? };
        let (batch, features) = (x.shape()[0], x.shape()[1]);
        if features != self.input_size {
            return Err(Error::invalid(
                name,
                format!(
                    "input has inconsistent input_size: got {features} expected {}",
                    self.input_size
                ),
            ));
        }
        let h = match state {
            None => Tensor::full(&[batch, self.hidden_size], 0.0, x.dtype(), &x.device())?,
            Some(h) => {
                if h.rank() != in_rank {
                    return Err(Error::invalid(
                        name,
                        format!(
                            "{which} must be {in_rank}-D like the input, got {}-D",
                            h.rank()
                        ),
                    ));
                }
                let h = if batched { h.clone() } else { h.unsqueeze(0)? };
                if h.shape()[0] != batch {
                    return Err(Error::invalid(
                        name,
                        format!(
                            "input batch size {batch} doesn't match {which} batch size {}",
                            h.shape()[0]
                        ),
                    ));
                }
                if h.shape()[1] != self.hidden_size {
                    return Err(Error::invalid(
                        name,
                        format!(
                            "{which} has inconsistent hidden_size: got {}, expected {}",
                            h.shape()[1],
                            self.hidden_size
                        ),
                    ));
                }
                if !h.device().same(&x.device()) {
                    return Err(Error::invalid(
                        name,
                        format!(
                            "{which} is on {} but the input is on {}",
                            h.device(),
                            x.device()
                        ),
                    ));
                }
                h
            }
        };
        Ok((x, h, batched))
    }

    /// `(h', c')`, unbatched again when the input was.
    fn step(
        &self,
        x: &Tensor,
        h: Option<&Tensor>,
        c: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let c = if self.kind == CellKind::Lstm {
            Some(self.batched(x, c, "cx")?.1)
        } else {
            None
        };
        let (x, h, batched) = self.batched(x, h, "hx")?;
        let xw = x.linear(&self.weights.weight_ih, self.weights.bias_ih.as_ref())?;
        let (h, c) = self.weights.step(self.kind, &xw, &h, c.as_ref())?;
        if batched {
            Ok((h, c))
        } else {
            Ok((h.squeeze(0)?, c.map(|c| c.squeeze(0)).transpose()?))
        }
    }
}

fn cell_name(kind: CellKind) -> &'static str {
    match kind {
        CellKind::Rnn(_) => "RNNCell",
        CellKind::Lstm => "LSTMCell",
        CellKind::Gru => "GRUCell",
    }
}

macro_rules! cell_module {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name {
            inner: Cell,
        }

        impl Module for $name {
            /// The new hidden state from a zero state (`cell(x)` in PyTorch;
            /// for an LSTM cell, the `h'` of its `(h', c')`).
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                Ok(self.inner.step(x, None, None)?.0)
            }
            fn named_parameters(&self) -> Vec<(String, Tensor)> {
                let mut out = Vec::new();
                self.inner.weights.push_named("", &mut out);
                out
            }
            fn train(&mut self, on: bool) {
                self.inner.training = on;
            }
            fn is_training(&self) -> bool {
                self.inner.training
            }
            fn to_device(&mut self, device: &Device) -> Result<()> {
                self.inner.weights.move_to(device)
            }
        }
    };
}

cell_module!(
    /// One step of an Elman RNN (`torch.nn.RNNCell`): `h' = act(x W_ih^T +
    /// b_ih + h W_hh^T + b_hh)`.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{RNNCell, RnnNonlinearity};
    /// let cell = RNNCell::new(4, 8, true, RnnNonlinearity::Tanh, &Device::Cpu)?;
    /// let h = cell.forward_hidden(&Tensor::randn(&[3, 4], &Device::Cpu)?, None)?;
    /// assert_eq!(cell.forward_hidden(&Tensor::randn(&[3, 4], &Device::Cpu)?, Some(&h))?.shape(), [3, 8]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    RNNCell
);

cell_module!(
    /// One LSTM step (`torch.nn.LSTMCell`), gates `i, f, g, o` as [`LSTM`](crate::LSTM).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::LSTMCell;
    /// let cell = LSTMCell::new(4, 8, true, &Device::Cpu)?;
    /// let (h, c) = cell.forward_state(&Tensor::randn(&[4], &Device::Cpu)?, None)?;
    /// assert_eq!(h.shape(), [8]);
    /// assert_eq!(c.shape(), [8]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    LSTMCell
);

cell_module!(
    /// One GRU step (`torch.nn.GRUCell`), gates `r, z, n` as [`GRU`](crate::GRU).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::GRUCell;
    /// let cell = GRUCell::new(4, 8, true, &Device::Cpu)?;
    /// assert_eq!(cell.forward_hidden(&Tensor::randn(&[2, 4], &Device::Cpu)?, None)?.shape(), [2, 8]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    GRUCell
);

impl RNNCell {
    /// `torch.nn.RNNCell(input_size, hidden_size, bias, nonlinearity)`,
    /// PyTorch's initialisation (`U(-1/sqrt(hidden), 1/sqrt(hidden))`).
    pub fn new(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        nonlinearity: RnnNonlinearity,
        device: &Device,
    ) -> Result<Self> {
        let kind = CellKind::Rnn(nonlinearity);
        Ok(RNNCell {
            inner: Cell::new(kind, input_size, hidden_size, bias, device)?,
        })
    }

    /// `h' = cell(x, h)`: `x` `[N, input]` or `[input]`, `h` the same
    /// rank with `hidden` features (zeros when `None`).
    pub fn forward_hidden(&self, x: &Tensor, h: Option<&Tensor>) -> Result<Tensor> {
        Ok(self.inner.step(x, h, None)?.0)
    }
}

impl GRUCell {
    /// `torch.nn.GRUCell(input_size, hidden_size, bias)` (see [`RNNCell::new`]).
    pub fn new(input_size: usize, hidden_size: usize, bias: bool, device: &Device) -> Result<Self> {
        Ok(GRUCell {
            inner: Cell::new(CellKind::Gru, input_size, hidden_size, bias, device)?,
        })
    }

    /// `h' = cell(x, h)`, shapes as [`RNNCell::forward_hidden`].
    pub fn forward_hidden(&self, x: &Tensor, h: Option<&Tensor>) -> Result<Tensor> {
        Ok(self.inner.step(x, h, None)?.0)
    }
}

impl LSTMCell {
    /// `torch.nn.LSTMCell(input_size, hidden_size, bias)` (see [`RNNCell::new`]).
    pub fn new(input_size: usize, hidden_size: usize, bias: bool, device: &Device) -> Result<Self> {
        Ok(LSTMCell {
            inner: Cell::new(CellKind::Lstm, input_size, hidden_size, bias, device)?,
        })
    }

    /// `(h', c') = cell(x, (h, c))`, both states shaped as
    /// [`RNNCell::forward_hidden`]'s (zeros when `None`).
    pub fn forward_state(
        &self,
        x: &Tensor,
        state: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, Tensor)> {
        let (h, c) = match state {
            Some((h, c)) => (Some(h), Some(c)),
            None => (None, None),
        };
        let (h, c) = self.inner.step(x, h, c)?;
        let c = c.ok_or_else(|| Error::invalid("LSTMCell", "no cell state came out"))?;
        Ok((h, c))
    }
}
