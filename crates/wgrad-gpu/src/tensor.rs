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
        let bytes = shape::checked_bytes(op, shape, dtype.size_in_bytes())?;
        let buffer = kernels.device().alloc(op, bytes)?;
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

    /// Copies host data to a new GPU tensor. `data.len()` must equal the
    /// number of elements of `shape`.
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

    /// A tensor of `shape` filled with `value` (converted to `dtype`).
    pub fn full(device: &GpuDevice, shape: &[usize], value: f64, dtype: DType) -> Result<Self> {
        let kernels = KernelCache::of(device)?;
        let out = Self::empty_on(&kernels, "full", shape, dtype)?;
        let bits = match dtype {
            DType::F32 => (value as f32).to_bits(),
            DType::I32 => (value as i32) as u32,
            DType::U32 => value as u32,
            DType::F16 | DType::BF16 => {
                return Err(Error::invalid(
                    "full",
                    format!("dtype {dtype} is not supported on the GPU yet"),
                ));
            }
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

    /// Overwrites this (contiguous) tensor's elements with one bit pattern.
    pub(crate) fn fill_words(&self, bits: u32) -> Result<()> {
        let p = FillParams::new("fill", self.numel(), self.layout.offset(), bits)?;
        self.kernels.dispatch_1d(
            &families::elementwise::FILL,
            &[],
            &[&self.buffer],
            &p,
            u64::from(p.numel).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
        )
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

    /// Records a copy of this view into the contiguous tensor `dst` (same shape).
    pub(crate) fn copy_into(&self, dst: &GpuTensor) -> Result<()> {
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
            let dense = self.contiguous()?;
            let bytes = (self.numel() * self.dtype.size_in_bytes()) as u64;
            let offset = (dense.layout.offset() * self.dtype.size_in_bytes()) as u64;
            dense.device().read(&dense.buffer, offset, bytes)
        })();
        async move {
            let bytes = pending?.await?;
            Ok(bytemuck::pod_collect_to_vec(&bytes))
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
