//! Asynchronous readback: GPU buffer -> host bytes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use wgrad_core::Result;

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
