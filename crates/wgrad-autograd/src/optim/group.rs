//! Parameter groups (PyTorch's `optimizer.param_groups`): each group is a
//! list of parameters with its own hyper-parameters, e.g. AdamW with weight
//! decay on the matrices and none on biases and norms (the nanoGPT recipe):
//!
//! ```
//! use wgrad_autograd::optim::{AdamW, AdamWConfig, Optimizer, ParamGroup};
//! use wgrad_autograd::{Device, Tensor};
//! let w = Tensor::zeros(&[4, 4], &Device::Cpu)?.with_requires_grad(true)?;
//! let b = Tensor::zeros(&[4], &Device::Cpu)?.with_requires_grad(true)?;
//! let base = AdamWConfig { lr: 6e-4, betas: (0.9, 0.95), ..Default::default() };
//! let mut opt = AdamW::with_groups(vec![
//!     ParamGroup::new(vec![w], AdamWConfig { weight_decay: 0.1, ..base }),
//!     ParamGroup::new(vec![b], AdamWConfig { weight_decay: 0.0, ..base }),
//! ])?;
//! opt.param_groups_mut()[1].config.lr = 1e-4; // as `param_groups[1]["lr"] = 1e-4`
//! assert_eq!(opt.group_lrs(), vec![6e-4, 1e-4]);
//! # Ok::<(), wgrad_core::Error>(())
//! ```
//!
//! Every optimizer keeps one flat parameter list (the groups' parameters in
//! order: the indices of its per-parameter state and of checkpoints, as in
//! PyTorch's `state_dict`) next to the groups.

use wgrad_core::{Error, Result};

use super::check_params;
use crate::Tensor;

/// The hyper-parameters of one group: what schedulers read and write.
pub trait GroupConfig: Clone + std::fmt::Debug {
    /// The learning rate (`group["lr"]`).
    fn lr(&self) -> f64;
    /// Sets the learning rate.
    fn set_lr(&mut self, lr: f64);
    /// The momentum that `OneCycleLR` cycles: SGD's and RMSprop's
    /// `momentum`, Adam's `beta1`; `None` for an optimizer without one.
    fn momentum(&self) -> Option<f64> {
        None
    }
    /// Sets that momentum (ignored by an optimizer without one).
    fn set_momentum(&mut self, _momentum: f64) {}
}

/// One parameter group (an entry of PyTorch's `optimizer.param_groups`):
/// its parameters, fixed at construction, and hyper-parameters that may
/// change between steps (schedulers change `lr`; a change reaches the next
/// step, which validates it as the constructor does).
#[derive(Clone, Debug)]
pub struct ParamGroup<C> {
    params: Vec<Tensor>,
    /// The group's hyper-parameters.
    pub config: C,
    /// The learning rate the first scheduler found (PyTorch's
    /// `group["initial_lr"]`): the base of every scheduler's schedule.
    pub initial_lr: Option<f64>,
}

impl<C> ParamGroup<C> {
    /// A group of `params` (F32 leaves) with hyper-parameters `config`.
    pub fn new(params: Vec<Tensor>, config: C) -> Self {
        ParamGroup {
            params,
            config,
            initial_lr: None,
        }
    }

    /// The group's parameters.
    pub fn params(&self) -> &[Tensor] {
        &self.params
    }
}

/// A hyper-parameter check of an optimizer (`op` names it in errors).
pub(crate) type ConfigCheck<C> = fn(&'static str, &C) -> Result<()>;

/// Names the group in an error about its hyper-parameters, when there are
/// several groups.
fn in_group(e: Error, group: usize, groups: usize) -> Error {
    match e {
        Error::InvalidArgument { op, message } if groups > 1 => Error::InvalidArgument {
            op,
            message: format!("param group {group}: {message}"),
        },
        other => other,
    }
}

/// The groups of one optimizer and their parameters as one flat list.
#[derive(Clone, Debug)]
pub(crate) struct Groups<C> {
    groups: Vec<ParamGroup<C>>,
    flat: Vec<Tensor>,
}

impl<C: GroupConfig> Groups<C> {
    /// Validates `groups` the way `torch.optim.Optimizer` does (at least one
    /// parameter, each once, F32 leaves) and each group's hyper-parameters.
    pub(crate) fn new(
        op: &'static str,
        groups: Vec<ParamGroup<C>>,
        check: ConfigCheck<C>,
    ) -> Result<Self> {
        let flat: Vec<Tensor> = groups.iter().flat_map(|g| g.params.clone()).collect();
        check_params(op, &flat)?;
        let n = groups.len();
        for (i, g) in groups.iter().enumerate() {
            check(op, &g.config).map_err(|e| in_group(e, i, n))?;
        }
        Ok(Groups { groups, flat })
    }

    /// Appends a group (PyTorch's `add_param_group`): its parameters must
    /// be new to the optimizer. Returns how many parameters it added.
    pub(crate) fn add(
        &mut self,
        op: &'static str,
        group: ParamGroup<C>,
        check: ConfigCheck<C>,
    ) -> Result<usize> {
        let mut flat = self.flat.clone();
        flat.extend(group.params.iter().cloned());
        check_params(op, &flat)?;
        check(op, &group.config).map_err(|e| in_group(e, self.groups.len(), 2))?;
        let added = group.params.len();
        self.flat = flat;
        self.groups.push(group);
        Ok(added)
    }

    /// Re-validates every group's hyper-parameters (they may have changed
    /// through `param_groups_mut` since construction).
    pub(crate) fn check(&self, op: &'static str, check: ConfigCheck<C>) -> Result<()> {
        let n = self.groups.len();
        for (i, g) in self.groups.iter().enumerate() {
            check(op, &g.config).map_err(|e| in_group(e, i, n))?;
        }
        Ok(())
    }

    /// Every parameter with its group's hyper-parameters, in flat order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&C, &Tensor)> {
        self.groups
            .iter()
            .flat_map(|g| g.params.iter().map(move |p| (&g.config, p)))
    }

    /// The parameters of every group, in order.
    pub(crate) fn params(&self) -> &[Tensor] {
        &self.flat
    }

    /// The groups.
    pub(crate) fn groups(&self) -> &[ParamGroup<C>] {
        &self.groups
    }

    /// The groups, mutable (their parameter lists stay fixed).
    pub(crate) fn groups_mut(&mut self) -> &mut [ParamGroup<C>] {
        &mut self.groups
    }

    /// The first group's hyper-parameters (there is always one).
    pub(crate) fn first(&self) -> Option<&C> {
        self.groups.first().map(|g| &g.config)
    }

    pub(crate) fn zero_grad(&self) {
        for p in &self.flat {
            p.zero_grad();
        }
    }

    pub(crate) fn lrs(&self) -> Vec<f64> {
        self.groups.iter().map(|g| g.config.lr()).collect()
    }

    pub(crate) fn set_lrs(&mut self, lrs: &[f64]) {
        for (g, &lr) in self.groups.iter_mut().zip(lrs) {
            g.config.set_lr(lr);
        }
    }

    pub(crate) fn set_all_lrs(&mut self, lr: f64) {
        for g in &mut self.groups {
            g.config.set_lr(lr);
        }
    }

    pub(crate) fn initial_lrs(&self) -> Vec<Option<f64>> {
        self.groups.iter().map(|g| g.initial_lr).collect()
    }

    pub(crate) fn set_initial_lrs(&mut self, lrs: &[f64]) {
        for (g, &lr) in self.groups.iter_mut().zip(lrs) {
            g.initial_lr = Some(lr);
        }
    }

    pub(crate) fn momentums(&self) -> Option<Vec<f64>> {
        self.groups.iter().map(|g| g.config.momentum()).collect()
    }

    pub(crate) fn set_momentums(&mut self, momentums: &[f64]) {
        for (g, &m) in self.groups.iter_mut().zip(momentums) {
            g.config.set_momentum(m);
        }
    }
}

/// Implements the [`Optimizer`](super::Optimizer) methods about rates and
/// parameters for an optimizer whose `groups` field is a [`Groups`].
macro_rules! group_methods {
    () => {
        fn zero_grad(&mut self) {
            self.groups.zero_grad();
        }
        fn lr(&self) -> f64 {
            self.groups.first().map_or(0.0, |c| c.lr())
        }
        fn set_lr(&mut self, lr: f64) {
            self.groups.set_all_lrs(lr);
        }
        fn initial_lr(&self) -> Option<f64> {
            self.groups.groups().first().and_then(|g| g.initial_lr)
        }
        fn set_initial_lr(&mut self, lr: f64) {
            let n = self.groups.groups().len();
            self.groups.set_initial_lrs(&vec![lr; n]);
        }
        fn params(&self) -> &[Tensor] {
            self.groups.params()
        }
        fn num_param_groups(&self) -> usize {
            self.groups.groups().len()
        }
        fn group_lrs(&self) -> Vec<f64> {
            self.groups.lrs()
        }
        fn set_group_lrs(&mut self, lrs: &[f64]) {
            self.groups.set_lrs(lrs);
        }
        fn group_initial_lrs(&self) -> Vec<Option<f64>> {
            self.groups.initial_lrs()
        }
        fn set_group_initial_lrs(&mut self, lrs: &[f64]) {
            self.groups.set_initial_lrs(lrs);
        }
        fn group_momentums(&self) -> Option<Vec<f64>> {
            self.groups.momentums()
        }
        fn set_group_momentums(&mut self, momentums: &[f64]) {
            self.groups.set_momentums(momentums);
        }
    };
}
pub(crate) use group_methods;

/// Implements the inherent group accessors (`param_groups`,
/// `param_groups_mut`, `add_param_group`) of an optimizer with a `groups`
/// field and a `state` vector of per-parameter slots made by `$fresh`.
macro_rules! group_accessors {
    ($config:ty, $op:expr, $check:expr, $fresh:expr) => {
        /// The parameter groups (PyTorch's `optimizer.param_groups`).
        pub fn param_groups(&self) -> &[$crate::optim::ParamGroup<$config>] {
            self.groups.groups()
        }

        /// The parameter groups, to change their hyper-parameters between
        /// steps (the next step validates them as the constructor does).
        pub fn param_groups_mut(&mut self) -> &mut [$crate::optim::ParamGroup<$config>] {
            self.groups.groups_mut()
        }

        /// Adds a group of parameters new to this optimizer (PyTorch's
        /// `add_param_group`); its state starts empty.
        pub fn add_param_group(
            &mut self,
            group: $crate::optim::ParamGroup<$config>,
        ) -> wgrad_core::Result<()> {
            let added = self.groups.add($op, group, $check)?;
            self.state.extend((0..added).map(|_| $fresh));
            Ok(())
        }
    };
}
pub(crate) use group_accessors;
