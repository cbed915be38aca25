//! `Tensor`: a cheap handle over device storage plus its place in the graph.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use wgrad_core::{DType, Dims, Element, Error, Generator, Result};

use crate::Device;
use crate::grad_mode::is_grad_enabled;
use crate::graph::{GradFn, Node, Op};
use crate::ops::inplace::DataCell;
use crate::storage::Storage;

mod hooks;
mod readback;

pub(crate) use hooks::GradHook;
pub use hooks::HookHandle;

/// A tensor on the CPU or a GPU that can take part in reverse-mode autograd.
/// Cloning is cheap and shares data, grad and graph position (like a
/// PyTorch tensor reference).
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub id: u64,
    /// Replaced (not mutated) by optimizers on the CPU; GPU optimizers update
    /// the buffer in place.
    pub storage: RwLock<Storage>,
    pub requires_grad: AtomicBool,
    pub grad: Mutex<Option<Storage>>,
    pub node: Option<GradFn>,
    /// Counts changes to the data, shared by every view of the same data
    /// (and by `detach()`), like PyTorch's version counter: a backward rule
    /// whose saved tensor moved on since the forward pass refuses to run.
    pub version: Arc<AtomicU64>,
    /// Shared with the same tensors as `version`: where an in-place write
    /// on the CPU (copy-on-write) leaves the new buffer for the other views
    /// of the old one (`ops/inplace.rs`).
    pub cell: Arc<DataCell>,
    /// The storage's shape, dtype and device, kept outside the lock so
    /// reading them takes no lock and allocates nothing. `set_storage`
    /// refuses storage that differs in any of them, so they never go stale;
    /// only [`Tensor::set_data`] changes the dtype (of a leaf, `module.half()`),
    /// hence the atomic (the dtype's index in `DType::ALL`).
    pub shape: Dims,
    pub dtype: AtomicU8,
    pub device: Device,
    /// `retain_grad()` on a result: backward keeps its gradient in `grad`.
    pub retains_grad: AtomicBool,
    /// `register_hook` functions, run in order on the tensor's gradient.
    pub hooks: Mutex<Vec<(u64, GradHook)>>,
}

/// Dropping a long chain of results would recurse once per node; unlink the
/// graph iteratively instead so deep graphs (RNN-style loops) cannot
/// overflow the stack.
impl Drop for Inner {
    fn drop(&mut self) {
        let Some(node) = self.node.take().and_then(|f| f.take()) else {
            return;
        };
        let mut pending = node.inputs;
        while let Some(Tensor { inner }) = pending.pop() {
            if let Ok(mut sole) = Arc::try_unwrap(inner)
                && let Some(node) = sole.node.take().and_then(|f| f.take())
            {
                pending.extend(node.inputs);
            }
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn generator() -> &'static Mutex<Generator> {
    static GENERATOR: OnceLock<Mutex<Generator>> = OnceLock::new();
    GENERATOR.get_or_init(|| Mutex::new(Generator::new(0x5eed)))
}

/// Seeds the default generator used by `rand`/`randn`/init/dropout (like `torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    *generator().lock() = Generator::new(seed);
}

/// The next seed from the default generator.
pub fn next_seed() -> u64 {
    generator().lock().next_seed()
}

impl Tensor {
    pub(crate) fn from_storage(storage: Storage, node: Option<GradFn>) -> Tensor {
        Tensor::with_version(storage, node, Arc::new(AtomicU64::new(0)), Arc::default())
    }

    fn with_version(
        storage: Storage,
        node: Option<GradFn>,
        version: Arc<AtomicU64>,
        cell: Arc<DataCell>,
    ) -> Tensor {
        Tensor {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                shape: storage.shape().into(),
                dtype: AtomicU8::new(dtype_code(storage.dtype())),
                device: storage.device(),
                storage: RwLock::new(storage),
                requires_grad: AtomicBool::new(false),
                grad: Mutex::new(None),
                node,
                version,
                cell,
                retains_grad: AtomicBool::new(false),
                hooks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A leaf tensor over existing storage (no graph).
    pub fn from_storage_leaf(storage: Storage) -> Tensor {
        Tensor::from_storage(storage, None)
    }

    /// Records `op` on `inputs` producing `storage`, attaching a graph node
    /// when grad mode is on and any input requires grad.
    pub(crate) fn record(storage: Storage, op: Op, inputs: &[&Tensor]) -> Tensor {
        Tensor::record_with_version(
            storage,
            op,
            inputs,
            Arc::new(AtomicU64::new(0)),
            Arc::default(),
        )
    }

    /// Like [`record`](Self::record) for an op whose output is a view of
    /// `input`'s data: the two share one version counter, so changing the
    /// data through either is seen by backward rules that saved the other.
    pub(crate) fn record_view(storage: Storage, op: Op, input: &Tensor) -> Tensor {
        Tensor::record_with_version(
            storage,
            op,
            &[input],
            input.inner.version.clone(),
            input.inner.cell.clone(),
        )
    }

    fn record_with_version(
        storage: Storage,
        op: Op,
        inputs: &[&Tensor],
        version: Arc<AtomicU64>,
        cell: Arc<DataCell>,
    ) -> Tensor {
        let track = is_grad_enabled() && inputs.iter().any(|t| t.requires_grad());
        let node = track.then(|| {
            GradFn::new(Node {
                op,
                inputs: inputs.iter().map(|&t| t.clone()).collect(),
                input_versions: inputs.iter().map(|t| t.version()).collect(),
                output_version: version.load(Ordering::Acquire),
            })
        });
        Tensor::with_version(storage, node, version, cell)
    }

    /// How many times this tensor's data has been changed in place or
    /// replaced (`set_storage`, an optimizer step), counted over every view
    /// of the same data (PyTorch's `_version`).
    pub fn version(&self) -> u64 {
        self.inner.version.load(Ordering::Acquire)
    }

    /// Records that this tensor's data changed in place.
    pub(crate) fn bump_version(&self) {
        self.inner.version.fetch_add(1, Ordering::AcqRel);
    }

    /// A snapshot of the storage (cheap: an `Arc` clone).
    pub fn storage(&self) -> Storage {
        let s = self.inner.storage.read().clone();
        // After an in-place CPU write through another view, this view
        // moves to the rewritten buffer (one atomic load otherwise).
        match self.inner.cell.follow(&s) {
            Some(newer) => {
                self.put_storage(newer.clone());
                newer
            }
            None => s,
        }
    }

    /// Swaps in storage of the same shape, dtype and device (no checks, no
    /// version bump: the callers do both).
    pub(crate) fn put_storage(&self, storage: Storage) {
        *self.inner.storage.write() = storage;
    }

    /// Replaces the data (used by optimizers and `load`); shape, dtype and
    /// device must match.
    pub fn set_storage(&self, storage: Storage) -> Result<()> {
        if self.shape() != storage.shape() {
            return Err(Error::ShapeMismatch {
                op: "set_data",
                lhs: self.shape().to_vec(),
                rhs: storage.shape().to_vec(),
            });
        }
        if self.dtype() != storage.dtype() {
            return Err(Error::DTypeMismatch {
                op: "set_data",
                expected: self.dtype(),
                got: storage.dtype(),
            });
        }
        if !self.inner.device.same(&storage.device()) {
            return Err(Error::DeviceMismatch {
                op: "set_data",
                lhs: self.device().to_string(),
                rhs: storage.device().to_string(),
            });
        }
        *self.inner.storage.write() = storage;
        self.bump_version();
        Ok(())
    }

    /// A process-unique id (stable for the tensor's lifetime; clones share it).
    pub fn id(&self) -> u64 {
        self.inner.id
    }
    /// The size of each dimension (PyTorch's `shape`/`size()`); `[]` for a
    /// 0-d tensor. Takes no lock and allocates nothing: [`Dims`] is a
    /// shared handle that reads like a `&[usize]` and compares equal to
    /// slices, arrays and `Vec`s.
    pub fn shape(&self) -> Dims {
        self.inner.shape.clone()
    }
    /// Same as [`shape`](Self::shape).
    pub fn dims(&self) -> Dims {
        self.inner.shape.clone()
    }
    /// The number of dimensions (PyTorch's `dim()`).
    pub fn rank(&self) -> usize {
        self.inner.shape.len()
    }
    /// The number of elements (1 for a 0-d tensor).
    pub fn numel(&self) -> usize {
        self.inner.shape.iter().product()
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        DType::ALL[usize::from(self.inner.dtype.load(Ordering::Acquire))]
    }
    /// Where the data lives (a cheap handle clone).
    pub fn device(&self) -> Device {
        self.inner.device.clone()
    }
    /// Whether no recorded op made this tensor (`torch.Tensor.is_leaf`):
    /// created directly or [`detach`](Self::detach)ed. Only leaves get `.grad`.
    pub fn is_leaf(&self) -> bool {
        self.inner.node.is_none()
    }
    pub(crate) fn grad_fn(&self) -> Option<&GradFn> {
        self.inner.node.as_ref()
    }
    /// The name of the op that made this tensor (`None` for a leaf), like
    /// PyTorch's `grad_fn`.
    pub fn grad_fn_name(&self) -> Option<&'static str> {
        self.grad_fn().map(GradFn::name)
    }

    /// Whether gradients flow to (a leaf) or through (a result) this tensor.
    pub fn requires_grad(&self) -> bool {
        self.inner.node.is_some() || self.inner.requires_grad.load(Ordering::Relaxed)
    }

    /// Marks a leaf as needing `.grad` (builder form of `requires_grad_`).
    pub fn with_requires_grad(self, requires_grad: bool) -> Result<Tensor> {
        self.requires_grad_(requires_grad)?;
        Ok(self)
    }

    /// Marks a leaf as needing `.grad`. Only float leaves can require grad.
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<()> {
        if !self.is_leaf() {
            return Err(Error::invalid(
                "requires_grad_",
                "only leaf tensors can change requires_grad; use detach() first",
            ));
        }
        if requires_grad && !self.dtype().is_float() {
            return Err(Error::DTypeMismatch {
                op: "requires_grad_",
                expected: DType::F32,
                got: self.dtype(),
            });
        }
        self.inner
            .requires_grad
            .store(requires_grad, Ordering::Relaxed);
        Ok(())
    }

    /// The accumulated gradient of a leaf, if any. In-place ops on it are
    /// refused (gradients may share storage): use `set_grad`/`zero_grad`.
    pub fn grad(&self) -> Option<Tensor> {
        let grad = self.inner.grad.lock().clone();
        grad.map(|g| {
            // Read-only for in-place ops: gradients may share buffers.
            let version = Arc::new(AtomicU64::new(0));
            Tensor::with_version(g, None, version, Arc::new(DataCell::read_only()))
        })
    }

    /// Drops the gradient (like `set_to_none=True`).
    pub fn zero_grad(&self) {
        *self.inner.grad.lock() = None;
    }

    /// Replaces a leaf's data with `data` of the same shape and device whose
    /// dtype may be another float dtype (`param.data = param.data.half()`,
    /// what `module.half()` does to each parameter and float buffer); a
    /// gradient it holds converts too. A dtype change of a non-float
    /// tensor, or of a tensor with a `grad_fn`, is an error naming both
    /// dtypes.
    pub fn set_data(&self, data: Storage) -> Result<()> {
        const OP: &str = "set_data";
        let (from, to) = (self.dtype(), data.dtype());
        if from == to {
            return self.set_storage(data);
        }
        if !from.is_float() || !to.is_float() {
            return Err(Error::invalid(
                OP,
                format!(
                    "only a float tensor's data changes dtype, and only to a float dtype, got {from} -> {to}"
                ),
            ));
        }
        if self.grad_fn().is_some() {
            return Err(Error::invalid(
                OP,
                "can't change the dtype of a non-leaf tensor (it has a grad_fn)",
            ));
        }
        if self.shape() != data.shape() || !self.inner.device.same(&data.device()) {
            return Err(Error::invalid(
                OP,
                format!(
                    "data of shape {:?} on {} can't replace shape {:?} on {}",
                    data.shape(),
                    data.device(),
                    self.shape(),
                    self.device()
                ),
            ));
        }
        let grad = self
            .inner
            .grad
            .lock()
            .clone()
            .map(|g| g.cast(to))
            .transpose()?;
        *self.inner.storage.write() = data;
        self.inner.dtype.store(dtype_code(to), Ordering::Release);
        *self.inner.grad.lock() = grad;
        self.bump_version();
        Ok(())
    }

    /// Replaces the gradient (`x.grad = g`; used by clipping and tests).
    /// As in PyTorch, `g` must have this tensor's shape, dtype and device
    /// (errors name both).
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        const OP: &str = "set_grad";
        let storage = grad.map(|g| g.storage());
        if let Some(s) = &storage {
            if s.shape() != self.shape() {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: self.shape().to_vec(),
                    rhs: s.shape().to_vec(),
                });
            }
            if s.dtype() != self.dtype() {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    expected: self.dtype(),
                    got: s.dtype(),
                });
            }
            if !self.inner.device.same(&s.device()) {
                return Err(Error::DeviceMismatch {
                    op: OP,
                    lhs: self.device().to_string(),
                    rhs: s.device().to_string(),
                });
            }
        }
        *self.inner.grad.lock() = storage;
        Ok(())
    }

    pub(crate) fn accumulate_grad(&self, delta: Storage) -> Result<()> {
        let mut slot = self.inner.grad.lock();
        *slot = Some(match slot.take() {
            // Dense at any offset is kept: `linear`'s weight and bias
            // gradients are two dense views of one product's buffer.
            None => match delta {
                Storage::Gpu(g) => Storage::Gpu(g.dense()?),
                cpu => cpu.contiguous()?,
            },
            Some(existing) => existing.binary(&delta, wgrad_core::BinaryOp::Add)?,
        });
        Ok(())
    }

    /// A new leaf sharing this tensor's data (and its version counter), cut
    /// from the graph.
    pub fn detach(&self) -> Tensor {
        Tensor::with_version(
            self.storage(),
            None,
            self.inner.version.clone(),
            self.inner.cell.clone(),
        )
    }

    // ---- creation ----

    /// A leaf on `device` from row-major `data` (`torch.tensor(..).reshape`);
    /// `data.len()` must equal the product of `shape` (else
    /// [`Error::InvalidArgument`]). The dtype follows `T` (f32, i32 or u32).
    ///
    /// Creation at a glance (`torch.tensor`, `zeros`, `full`, `arange`,
    /// `rand`, `randn`):
    ///
    /// ```
    /// use wgrad_autograd::{DType, Device, Tensor, manual_seed};
    /// let cpu = Device::Cpu;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], &cpu)?;
    /// assert_eq!(x.shape(), [2, 2]);
    /// assert_eq!(x.dtype(), DType::F32);
    /// let labels = Tensor::from_vec(vec![3i32, 1], &[2], &cpu)?;
    /// assert_eq!(labels.dtype(), DType::I32);
    /// assert_eq!(Tensor::zeros(&[3], &cpu)?.to_vec_f32()?, [0.0; 3]);
    /// assert_eq!(Tensor::full(&[2], 7.0, DType::I32, &cpu)?.to_vec::<i32>()?, [7, 7]);
    /// let r = Tensor::arange(0.0, 1.0, 0.25, DType::F32, &cpu)?;
    /// assert_eq!(r.to_vec_f32()?, [0.0, 0.25, 0.5, 0.75]);
    /// assert_eq!(x.ones_like()?.to_vec_f32()?, [1.0; 4]);
    /// // Random: the default generator (seeded by manual_seed) or a seed.
    /// manual_seed(0);
    /// let u = Tensor::rand(&[100], &cpu)?.to_vec_f32()?;
    /// assert!(u.iter().all(|v| (0.0..1.0).contains(v)));
    /// let a = Tensor::randn_with(&[4], 0.0, 1.0, 42, &cpu)?;
    /// assert_eq!(a.to_vec_f32()?, Tensor::randn_with(&[4], 0.0, 1.0, 42, &cpu)?.to_vec_f32()?);
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn from_vec<T: Element + bytemuck::Pod>(
        data: Vec<T>,
        shape: &[usize],
        device: &Device,
    ) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::from_vec(
            data, shape, device,
        )?))
    }
    /// A 0-dimensional f32 tensor.
    pub fn scalar(value: f32, device: &Device) -> Result<Tensor> {
        Tensor::from_vec(vec![value], &[], device)
    }
    /// `torch.full`: every element `value` converted to `dtype` (`as` casts).
    pub fn full(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::full(
            shape, value, dtype, device,
        )?))
    }
    /// F32 zeros of `shape` (`torch.zeros`).
    pub fn zeros(shape: &[usize], device: &Device) -> Result<Tensor> {
        Tensor::full(shape, 0.0, DType::F32, device)
    }
    /// F32 ones of `shape` (`torch.ones`).
    pub fn ones(shape: &[usize], device: &Device) -> Result<Tensor> {
        Tensor::full(shape, 1.0, DType::F32, device)
    }
    /// Zeros with this tensor's shape, dtype and device (`torch.zeros_like`);
    /// a new leaf.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(self.storage().zeros_like()?))
    }
    /// Ones with this tensor's shape, dtype and device (`torch.ones_like`);
    /// a new leaf.
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::full(&self.shape(), 1.0, self.dtype(), &self.device())
    }
    /// `torch.arange`: the 1-D range `start, start + step, ...` excluding
    /// `end`, in `dtype`. A zero or non-finite step, or one pointing away
    /// from `end`, is [`Error::InvalidArgument`].
    pub fn arange(
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::arange(
            start, end, step, dtype, device,
        )?))
    }
    /// Uniform `[0, 1)` from the default generator (see [`manual_seed`]).
    pub fn rand(shape: &[usize], device: &Device) -> Result<Tensor> {
        Tensor::rand_with(shape, 0.0, 1.0, next_seed(), device)
    }
    /// Standard normal from the default generator.
    pub fn randn(shape: &[usize], device: &Device) -> Result<Tensor> {
        Tensor::randn_with(shape, 0.0, 1.0, next_seed(), device)
    }
    /// Uniform `[low, high)` with an explicit seed (same values on every device).
    pub fn rand_with(
        shape: &[usize],
        low: f32,
        high: f32,
        seed: u64,
        device: &Device,
    ) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::rand(
            shape, low, high, seed, device,
        )?))
    }
    /// Normal with an explicit seed (same values on every device, to f32 rounding).
    pub fn randn_with(
        shape: &[usize],
        mean: f32,
        std: f32,
        seed: u64,
        device: &Device,
    ) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::randn(
            shape, mean, std, seed, device,
        )?))
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={}",
            self.shape(),
            self.dtype(),
            self.device()
        )?;
        if self.requires_grad() {
            f.write_str(", requires_grad")?;
        }
        f.write_str(")")
    }
}

/// `dtype`'s index in [`DType::ALL`] (how [`Inner`] stores it).
fn dtype_code(dtype: DType) -> u8 {
    DType::ALL
        .iter()
        .position(|&d| d == dtype)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(0)
}
