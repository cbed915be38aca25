//! The `GpuTensor` handle: accessors, construction from host data, readback, views.

use std::future::Future;
use std::sync::Arc;

use wgrad_core::{DType, Element, Error, Layout, Result, shape};
use wgrad_device::{GpuBuffer, GpuDevice};
use wgrad_kernels::{KernelCache, families};

use crate::params::{CopyParams, FillParams};

/// A tensor on a GPU: a strided view over a pooled device buffer.
/// Cloning is cheap and shares the buffer.
#[derive(Clone)]
pub struct GpuTensor {
    pub(crate) kernels: Arc<KernelCache>,
    pub(crate) buffer: GpuBuffer,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
}

impl std::fmt::Debug for GpuTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuTensor({:?}, {}, {})",
            self.shape(),
            self.dtype,
            self.device().label()
        )
    }
}

impl GpuTensor {
    wgrad_core::layout_methods!();

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// Whether the view is dense in row-major order.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }
    /// The device the data lives on.
    pub fn device(&self) -> &GpuDevice {
        self.kernels.device()
    }
    /// The underlying pooled buffer (shared by all views of it).
    pub fn buffer(&self) -> &GpuBuffer {
        &self.buffer
    }
    pub(crate) fn kernels(&self) -> &KernelCache {
        &self.kernels
    }

    /// A view with a new layout over the same buffer.
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        GpuTensor {
            kernels: self.kernels.clone(),
            buffer: self.buffer.clone(),
            layout,
            dtype: self.dtype,
        }
    }

    /// A fresh contiguous tensor whose contents a recorded dispatch will write.
    pub(crate) fn empty_on(
        kernels: &Arc<KernelCache>,
        op: &'static str,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Self> {
        let buffer = kernels
            .device()
            .alloc(op, storage_bytes(op, shape, dtype)?)?;
        Ok(GpuTensor {
            kernels: kernels.clone(),
            buffer,
            layout: Layout::contiguous(shape),
            dtype,
        })
    }

    /// Like [`empty_on`](Self::empty_on) on the same device as `self`.
    pub(crate) fn empty_like_device(
        &self,
        op: &'static str,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Self> {
        Self::empty_on(&self.kernels, op, shape, dtype)
    }

    /// Checks that `other` lives on the same device.
    pub(crate) fn same_device(&self, op: &'static str, other: &GpuTensor) -> Result<()> {
        if self.device().same_device(other.device()) {
            Ok(())
        } else {
            Err(Error::DeviceMismatch {
                op,
                lhs: self.device().label(),
                rhs: other.device().label(),
            })
        }
    }

    /// Checks the dtype.
    pub(crate) fn expect_dtype(&self, op: &'static str, dtype: DType) -> Result<()> {
        wgrad_core::checks::expect_dtype(op, dtype, self.dtype)
    }

    /// Refuses a 16-bit float operand of an op whose kernels read one
    /// element per 32-bit word (they would read pairs of halves as
    /// garbage). The autograd layer widens half operands to F32 first; the
    /// error names the op and the dtype it got.
    pub(crate) fn reject_half(&self, op: &'static str) -> Result<()> {
        if self.dtype.is_half() {
            return Err(Error::DTypeMismatch {
                op,
                expected: self.dtype.compute(),
                got: self.dtype,
            });
        }
        Ok(())
    }

    /// Copies host data to a new GPU tensor. `data.len()` must equal the
    /// number of elements of `shape`. Any [`Element`]: `half::f16` and
    /// `half::bf16` data is stored two elements per word (the upload pads
    /// an odd count to a whole word).
    pub fn from_vec<T: Element + bytemuck::Pod>(
        device: &GpuDevice,
        data: Vec<T>,
        shape: &[usize],
    ) -> Result<Self> {
        Self::from_slice(device, &data, shape)
    }

    /// Copies host data to a new GPU tensor.
    pub fn from_slice<T: Element + bytemuck::Pod>(
        device: &GpuDevice,
        data: &[T],
        shape: &[usize],
    ) -> Result<Self> {
        let numel = shape::checked_numel("from_vec", shape)?;
        if data.len() != numel {
            return Err(Error::invalid(
                "from_vec",
                format!(
                    "{} values cannot fill shape {shape:?} ({numel} elements)",
                    data.len()
                ),
            ));
        }
        let kernels = KernelCache::of(device)?;
        let buffer = device.upload("from_vec", bytemuck::cast_slice(data))?;
        Ok(GpuTensor {
            kernels,
            buffer,
            layout: Layout::contiguous(shape),
            dtype: T::DTYPE,
        })
    }

    /// A tensor of `shape` filled with `value` (converted to `dtype` as the
    /// CPU backend converts it: Rust `as`, or `half`'s `from_f64`).
    pub fn full(device: &GpuDevice, shape: &[usize], value: f64, dtype: DType) -> Result<Self> {
        let kernels = KernelCache::of(device)?;
        let out = Self::empty_on(&kernels, "full", shape, dtype)?;
        let bits = match dtype {
            DType::F32 => (value as f32).to_bits(),
            DType::I32 => (value as i32) as u32,
            DType::U32 => value as u32,
            DType::F16 => u32::from(half::f16::from_f64(value).to_bits()),
            DType::BF16 => u32::from(half::bf16::from_f64(value).to_bits()),
        };
        out.fill_words(bits)?;
        Ok(out)
    }

    /// A tensor of `shape` filled with zeros.
    pub fn zeros(device: &GpuDevice, shape: &[usize], dtype: DType) -> Result<Self> {
        Self::full(device, shape, 0.0, dtype)
    }

    /// A tensor of `shape` filled with ones.
    pub fn ones(device: &GpuDevice, shape: &[usize], dtype: DType) -> Result<Self> {
        Self::full(device, shape, 1.0, dtype)
    }

    /// Overwrites this (contiguous) tensor's elements with one bit pattern
    /// (for a 16-bit dtype, its low 16 bits). A half tensor is filled in
    /// whole words, two copies of the pattern each, so it must start at an
    /// even element and own the rest of its last word: a fresh tensor.
    pub(crate) fn fill_words(&self, bits: u32) -> Result<()> {
        let (numel, offset, bits) = if self.dtype.is_half() {
            let offset = self.layout.offset();
            if !offset.is_multiple_of(2) {
                return Err(Error::invalid(
                    "fill",
                    format!(
                        "a {} fill must start at an even element, not {offset}",
                        self.dtype
                    ),
                ));
            }
            let half = bits & 0xffff;
            (self.numel().div_ceil(2), offset / 2, half | (half << 16))
        } else {
            (self.numel(), self.layout.offset(), bits)
        };
        let p = FillParams::new("fill", numel, offset, bits)?;
        self.kernels.dispatch_1d(
            &families::elementwise::FILL,
            &[],
            &[&self.buffer],
            &p,
            u64::from(p.numel).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
        )
    }

    /// This view if it is dense in row-major order, at any offset in its
    /// buffer (what kernels that take an offset read directly), else a
    /// contiguous copy. [`contiguous`](Self::contiguous) also moves a dense
    /// view at an offset to a buffer of its own.
    pub fn dense(&self) -> Result<Self> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.contiguous()
    }

    /// A contiguous copy (or `self` if already contiguous and starting at 0).
    pub fn contiguous(&self) -> Result<Self> {
        if self.is_contiguous() && self.layout.offset() == 0 {
            return Ok(self.clone());
        }
        let out = self.empty_like_device("contiguous", self.shape(), self.dtype)?;
        self.copy_into(&out)?;
        Ok(out)
    }

    /// Records a copy of this view into the contiguous tensor `dst` (same
    /// shape and dtype; a half `dst` must be fresh, starting at element 0).
    pub(crate) fn copy_into(&self, dst: &GpuTensor) -> Result<()> {
        if self.dtype.is_half() {
            // Same dtype: `cast_half` copies the 16-bit patterns unchanged.
            return self.cast_into(dst);
        }
        let p = CopyParams::new("contiguous", &self.layout, dst.layout.offset())?;
        self.kernels.dispatch_1d(
            &families::movement::COPY_STRIDED,
            &[],
            &[&self.buffer, &dst.buffer],
            &p,
            self.numel() as u64,
        )
    }

    /// Reads the tensor back to the host, in row-major order. Recording
    /// happens now; the returned future resolves when the data arrives.
    pub fn to_vec<T: Element + bytemuck::Pod>(
        &self,
    ) -> impl Future<Output = Result<Vec<T>>> + Send + use<T> {
        let pending = (|| {
            self.expect_dtype("to_vec", T::DTYPE)?;
            // `contiguous` starts the data at element 0 (a copy otherwise),
            // so the read begins on a word boundary for every dtype.
            let dense = self.contiguous()?;
            let bytes = storage_bytes("to_vec", self.shape(), self.dtype)?;
            dense.device().read(&dense.buffer, 0, bytes)
        })();
        let len = self.numel() * self.dtype.size_in_bytes();
        async move {
            let bytes = pending?.await?;
            // Drop the pad half-word of an odd-length half tensor.
            let data = bytes.get(..len).ok_or_else(|| {
                Error::Device(format!("readback of {} bytes, expected {len}", bytes.len()))
            })?;
            Ok(bytemuck::pod_collect_to_vec(data))
        }
    }

    /// [`to_vec`](Self::to_vec), blocking the thread until the data arrives.
    pub fn to_vec_blocking<T: Element + bytemuck::Pod>(&self) -> Result<Vec<T>> {
        wgrad_device::block_on(self.to_vec())
    }

    /// Reshapes; a view when the layout is contiguous, else a copy (like `torch.reshape`).
    pub fn reshape(&self, shape: &[isize]) -> Result<Self> {
        match self.layout.reshape(shape)? {
            Some(layout) => Ok(self.with_layout(layout)),
            None => {
                let dense = self.contiguous()?;
                let layout = dense.layout.reshape(shape)?.ok_or_else(|| {
                    Error::invalid("reshape", "contiguous copy is not contiguous")
                })?;
                Ok(dense.with_layout(layout))
            }
        }
    }
}

/// Bytes of the buffer behind a contiguous tensor of `shape`: whole 32-bit
/// words, the unit every kernel reads and writes (a half tensor of `n`
/// elements takes `ceil(n / 2)` words).
fn storage_bytes(op: &'static str, shape: &[usize], dtype: DType) -> Result<u64> {
    Ok(shape::checked_bytes(op, shape, dtype.size_in_bytes())?.next_multiple_of(4))
}
