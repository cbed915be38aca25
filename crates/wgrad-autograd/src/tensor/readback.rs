//! Getting a tensor's data out: blocking and asynchronous readback, and
//! the one-element `item`.

use wgrad_core::{DType, Element, Error, Result};

use crate::storage::Storage;
use crate::tensor::Tensor;

impl Tensor {
    /// Data in row-major order; a GPU tensor is read back (blocks).
    ///
    /// Getting data out: `to_vec`, `item`, printing (PyTorch's layout);
    /// files are `wgrad_nn::state_dict::save_file`/`load_file`.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let x = Tensor::from_vec(vec![0.5f32, -2.0], &[2], &Device::Cpu)?;
    /// assert_eq!(x.to_vec::<f32>()?, [0.5, -2.0]);
    /// assert_eq!(x.sum_all()?.item()?, -1.5);
    /// assert_eq!(x.to_string(), "tensor([ 0.5000, -2.0000])");
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn to_vec<T: Element + bytemuck::Pod>(&self) -> Result<Vec<T>> {
        self.storage().to_vec()
    }
    /// [`to_vec`](Self::to_vec) as `f32`: 16-bit floats widen exactly, I32
    /// and U32 masks convert as numbers (exact below 2^24).
    pub fn to_vec_f32(&self) -> Result<Vec<f32>> {
        match self.dtype() {
            // Exact: every F16/BF16 value is an f32 value.
            DType::F16 | DType::BF16 => self.storage().cast(DType::F32)?.to_vec::<f32>(),
            // Integers and masks as numbers (exact below 2^24), so that
            // `(pred == y).sum()?.item()?` reads a count as PyTorch's does.
            DType::I32 => Ok(self
                .to_vec::<i32>()?
                .into_iter()
                .map(|v| v as f32)
                .collect()),
            DType::U32 => Ok(self
                .to_vec::<u32>()?
                .into_iter()
                .map(|v| v as f32)
                .collect()),
            DType::F32 => self.to_vec::<f32>(),
        }
    }
    /// The value of a one-element tensor as an f32 (a readback on the GPU;
    /// integers and masks convert, exactly below 2^24; `to_vec::<i32>()`
    /// reads integers exactly).
    pub fn item(&self) -> Result<f32> {
        let v = self.to_vec_f32()?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(Error::invalid(
                "item",
                format!(
                    "needs exactly one element, tensor has shape {:?}",
                    self.shape()
                ),
            )),
        }
    }
    /// Asynchronous readback (GPU work is submitted now; the future waits for it).
    pub fn to_vec_async<T: Element + bytemuck::Pod>(
        &self,
    ) -> impl std::future::Future<Output = Result<Vec<T>>> + Send + use<T> {
        let storage = self.storage();
        let gpu_future = match &storage {
            Storage::Gpu(t) => Some(t.to_vec::<T>()),
            Storage::Cpu(_) => None,
        };
        async move {
            match gpu_future {
                Some(f) => f.await,
                None => storage.to_vec::<T>(),
            }
        }
    }
}
