//! Asynchronous readback (GPU buffer -> host bytes) and `synchronize`; both
//! report device faults and validation errors raised since the last one.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use wgrad_core::{Error, Result};

use crate::buffer::GpuBuffer;
use crate::device::GpuDevice;
use crate::fault::{self, FAULT_BYTES};
use crate::stats::StatCounters;

/// A pending GPU -> host transfer. The copy is already submitted when this
/// exists; awaiting it waits for the GPU (a background thread drives
/// `device.poll`, so awaiting does not spin).
#[must_use = "a readback does nothing unless awaited"]
pub struct Readback {
    inner: Pin<Box<dyn Future<Output = Result<Vec<u8>>> + Send>>,
}

impl Readback {
    pub(crate) fn new(fut: impl Future<Output = Result<Vec<u8>>> + Send + 'static) -> Self {
        Readback {
            inner: Box::pin(fut),
        }
    }

    /// Blocks the current thread until the bytes arrive.
    pub fn wait(self) -> Result<Vec<u8>> {
        pollster::block_on(self)
    }
}

impl Future for Readback {
    type Output = Result<Vec<u8>>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

/// GPU -> host: readbacks, `synchronize`, and the fault and validation
/// errors they report.
impl GpuDevice {
    pub(crate) fn take_uncaptured(&self) -> Result<()> {
        match self.inner.uncaptured.lock().take() {
            Some(message) => Err(Error::Device(message)),
            None => Ok(()),
        }
    }

    /// Submits pending work and blocks until the GPU has finished it. A
    /// device fault raised by any kernel since the last readback (or
    /// synchronize) is returned here as an error, and cleared, just as a
    /// readback would report it. Checking costs a 16-byte copy in the same
    /// submit; it is not counted in `DeviceStats::readbacks`.
    pub fn synchronize(&self) -> Result<()> {
        let mut staging = self.inner.pool.acquire_staging(FAULT_BYTES)?;
        {
            let target = staging.raw()?;
            let mut recorder = self.recorder();
            let encoder = recorder.encoder_outside_pass(&self.inner.device);
            encoder.copy_buffer_to_buffer(&self.inner.fault, 0, target, 0, FAULT_BYTES);
            encoder.clear_buffer(&self.inner.fault, 0, None);
            self.submit(&mut recorder);
        }
        let (tx, rx) = mpsc::channel();
        staging
            .raw()?
            .map_async(wgpu::MapMode::Read, 0..FAULT_BYTES, move |result| {
                let _ = tx.send(result);
            });
        self.inner
            .device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| Error::Device(format!("poll failed: {e}")))?;
        rx.recv()
            .map_err(|_| Error::Device("fault check was cancelled (device lost?)".into()))?
            .map_err(|e| Error::Device(format!("mapping the fault words failed: {e}")))?;
        let raw = staging.raw()?;
        let words = {
            let view = raw
                .get_mapped_range(0..FAULT_BYTES)
                .map_err(|e| Error::Device(format!("mapped range unavailable: {e}")))?;
            fault::words(&view)
        };
        raw.unmap();
        staging.set_reusable();
        drop(staging);
        self.take_uncaptured()?;
        fault::check(words)
    }

    /// Reads `bytes` bytes at `offset` of `buffer` back to the host. Submits
    /// all pending work plus the copy at once (the only flush a training step
    /// needs); the returned future resolves when the data is on the host. A
    /// device fault raised by any kernel since the last readback turns into
    /// an error here.
    pub fn read(&self, buffer: &GpuBuffer, offset: u64, bytes: u64) -> Result<Readback> {
        if !offset.is_multiple_of(4) || !bytes.is_multiple_of(4) || offset + bytes > buffer.size() {
            return Err(Error::Device(format!(
                "readback of {bytes} bytes at offset {offset} from a {}-byte buffer is misaligned or out of bounds",
                buffer.size()
            )));
        }
        let mut staging = self.inner.pool.acquire_staging(bytes + FAULT_BYTES)?;
        let index = {
            let target = staging.raw()?;
            let mut recorder = self.recorder();
            let encoder = recorder.encoder_outside_pass(&self.inner.device);
            if bytes > 0 {
                encoder.copy_buffer_to_buffer(buffer.raw(), offset, target, 0, bytes);
            }
            encoder.copy_buffer_to_buffer(&self.inner.fault, 0, target, bytes, FAULT_BYTES);
            encoder.clear_buffer(&self.inner.fault, 0, None);
            self.submit(&mut recorder)
        };
        StatCounters::bump(&self.inner.stats.readbacks, 1);
        StatCounters::bump(&self.inner.stats.bytes_downloaded, bytes);

        let (tx, rx) = oneshot::channel();
        staging
            .raw()?
            .map_async(wgpu::MapMode::Read, 0..bytes + FAULT_BYTES, move |result| {
                let _ = tx.send(result);
            });
        if let Some(index) = index {
            let sender = self.inner.poller.lock();
            sender
                .send(index)
                .map_err(|_| Error::Device("the GPU poller thread has stopped".into()))?;
        }
        let device = self.clone();
        Ok(Readback::new(async move {
            let mapped = rx
                .await
                .map_err(|_| Error::Device("readback was cancelled (device lost?)".into()))?;
            mapped
                .map_err(|e| Error::Device(format!("mapping the readback buffer failed: {e}")))?;
            let raw = staging.raw()?;
            let (data, words) = {
                let view = raw
                    .get_mapped_range(0..bytes + FAULT_BYTES)
                    .map_err(|e| Error::Device(format!("mapped range unavailable: {e}")))?;
                let data = view[..bytes as usize].to_vec();
                (data, fault::words(&view[bytes as usize..]))
            };
            raw.unmap();
            staging.set_reusable();
            drop(staging); // back to the pool
            device.take_uncaptured()?;
            fault::check(words)?;
            Ok(data)
        }))
    }
}
