//! Allocation and upload: pool buffers for recorded work, host bytes into
//! them, and emptying the pool.

use wgrad_core::{Error, Result};

use crate::buffer::GpuBuffer;
use crate::device::GpuDevice;
use crate::pool::{FirstUse, Take};
use crate::stats::StatCounters;

impl GpuDevice {
    /// A pool buffer of at least `bytes` whose first writer is a recorded
    /// dispatch. Its contents are unspecified.
    pub fn alloc(&self, op: &'static str, bytes: u64) -> Result<GpuBuffer> {
        let take = self
            .inner
            .pool
            .acquire(op, bytes, FirstUse::Recorded, false)?;
        taken(take)
    }

    /// Uploads `data` into a pool buffer that no pending command uses (see the
    /// upload hazard in `pool.rs`).
    pub fn upload(&self, op: &'static str, data: &[u8]) -> Result<GpuBuffer> {
        let pool = &self.inner.pool;
        let bytes = data.len() as u64;
        let buffer = match pool.acquire(op, bytes, FirstUse::Upload, true)? {
            Take::Got(buffer) | Take::Created(buffer) => buffer,
            // The fitting free buffers were all released since the last
            // submit: submit the recorded work, after which they are safe.
            Take::Blocked => {
                self.flush()?;
                taken(pool.acquire(op, bytes, FirstUse::Upload, false)?)?
            }
        };
        if !data.is_empty() {
            let padded;
            let bytes = if data.len().is_multiple_of(4) {
                data
            } else {
                padded = [data, &[0u8; 3][..4 - data.len() % 4]].concat();
                &padded
            };
            self.inner.queue.write_buffer(buffer.raw(), 0, bytes);
            StatCounters::bump(&self.inner.stats.bytes_uploaded, data.len() as u64);
        }
        Ok(buffer)
    }

    /// Drops every cached pool buffer, tensor storage and readback staging
    /// alike (like `torch.cuda.empty_cache()`). Waits for the GPU, so that
    /// wgpu frees buffers that recorded commands were still using.
    pub fn empty_cache(&self) {
        let _ = self.flush();
        self.inner.pool.empty();
        let _ = self.inner.device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        });
    }
}

/// The buffer of a take that never blocks.
fn taken(take: Take<GpuBuffer>) -> Result<GpuBuffer> {
    match take {
        Take::Got(buffer) | Take::Created(buffer) => Ok(buffer),
        Take::Blocked => Err(Error::Device(
            "buffer pool: a non-blocking request was blocked".into(),
        )),
    }
}
