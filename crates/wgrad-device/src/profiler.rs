//! GPU timestamp profiler: per-kernel GPU time from timestamp queries
//! written inside the open compute pass around every dispatch.
//!
//! Off by default (timestamps cost a little per dispatch). Turn it on with
//! [`GpuDevice::start_profiling`](crate::GpuDevice::start_profiling), run the
//! work, then [`GpuDevice::profile_report`](crate::GpuDevice::profile_report)
//! resolves the queries (one submit + readback) and sums time per kernel;
//! [`GpuDevice::profile_timeline`](crate::GpuDevice::profile_timeline)
//! gives every dispatch in order with its grid instead.

use std::collections::HashMap;

use wgrad_core::{Error, Result};

use crate::device::GpuDevice;

/// Query slots per session (two per dispatch); wgpu's maximum.
pub(crate) const MAX_QUERIES: u32 = wgpu::QUERY_SET_MAX_QUERIES;

/// Time spent in one kernel over a profiling session.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTime {
    /// Kernel entry point (e.g. `matmul`, `binary`).
    pub kernel: &'static str,
    /// Dispatches timed.
    pub dispatches: u64,
    /// Total GPU time in microseconds.
    pub total_us: f64,
}

/// One timed dispatch of a profiling session.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchTime {
    /// Kernel entry point.
    pub kernel: &'static str,
    /// Workgroups dispatched, x by y by z.
    pub workgroups: [u32; 3],
    /// GPU time in microseconds.
    pub us: f64,
}

pub(crate) struct Profiler {
    pub query_set: wgpu::QuerySet,
    pub labels: Vec<&'static str>,
    /// The grid of each timed dispatch, in `labels` order.
    pub grids: Vec<[u32; 3]>,
    /// Dispatches recorded but not timed because the query set was full.
    pub dropped: u64,
}

impl Profiler {
    pub fn new(device: &wgpu::Device) -> Self {
        let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("wgrad profiler"),
            ty: wgpu::QueryType::Timestamp,
            count: MAX_QUERIES,
        });
        Profiler {
            query_set,
            labels: Vec::new(),
            grids: Vec::new(),
            dropped: 0,
        }
    }

    /// Query indices for the next dispatch, or `None` when full.
    pub fn next_slot(&mut self, label: &'static str, grid: [u32; 3]) -> Option<(u32, u32)> {
        let i = self.labels.len() as u32;
        if 2 * i + 1 >= MAX_QUERIES {
            self.dropped += 1;
            return None;
        }
        self.labels.push(label);
        self.grids.push(grid);
        Some((2 * i, 2 * i + 1))
    }
}

/// Each dispatch's `(end - start) * period`, in recording order.
fn timeline(
    labels: &[&'static str],
    grids: &[[u32; 3]],
    ticks: &[u64],
    period_ns: f64,
) -> Vec<DispatchTime> {
    labels
        .iter()
        .zip(grids)
        .zip(ticks.chunks_exact(2))
        .map(|((&kernel, &workgroups), t)| DispatchTime {
            kernel,
            workgroups,
            us: t[1].saturating_sub(t[0]) as f64 * period_ns / 1e3,
        })
        .collect()
}

/// The dispatches' times summed per kernel, largest total first.
pub(crate) fn summarize(dispatches: &[DispatchTime]) -> Vec<KernelTime> {
    let mut by_kernel: HashMap<&'static str, (u64, f64)> = HashMap::new();
    for d in dispatches {
        let entry = by_kernel.entry(d.kernel).or_default();
        entry.0 += 1;
        entry.1 += d.us;
    }
    let mut out: Vec<KernelTime> = by_kernel
        .into_iter()
        .map(|(kernel, (dispatches, total_us))| KernelTime {
            kernel,
            dispatches,
            total_us,
        })
        .collect();
    out.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
    out
}

/// The profiling session.
impl GpuDevice {
    /// Starts timing every dispatch with GPU timestamps (needs the
    /// `TIMESTAMP_QUERY_INSIDE_PASSES` feature). Pending work is flushed
    /// first so the profile holds only what follows.
    pub fn start_profiling(&self) -> Result<()> {
        if !self
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
        {
            return Err(Error::Device(format!(
                "{} cannot write timestamps inside compute passes; profiling is unavailable",
                self.label()
            )));
        }
        self.flush()?;
        *self.inner.profiler.lock() = Some(Profiler::new(&self.inner.device));
        Ok(())
    }

    /// Stops profiling and returns GPU time per kernel since
    /// [`start_profiling`](Self::start_profiling), largest first (one
    /// submit and readback). Dispatches beyond the query capacity
    /// (2048 per session) are not timed.
    pub fn profile_report(&self) -> Result<Vec<KernelTime>> {
        Ok(summarize(&self.profile_timeline()?))
    }

    /// Ends the profiling session like [`profile_report`](Self::profile_report)
    /// but returns every timed dispatch in recording order, with its grid
    /// (to tell which product or pass a time belongs to).
    pub fn profile_timeline(&self) -> Result<Vec<DispatchTime>> {
        let taken = self.inner.profiler.lock().take();
        let Some(profiler) = taken else {
            return Err(Error::Device(
                "profile_report called without start_profiling".into(),
            ));
        };
        let queries = 2 * profiler.labels.len() as u32;
        if queries == 0 {
            return Ok(Vec::new());
        }
        let bytes = u64::from(queries) * 8;
        let resolve = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgrad profiler resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgrad profiler staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        {
            let mut recorder = self.recorder();
            let encoder = recorder.encoder_outside_pass(&self.inner.device);
            encoder.resolve_query_set(&profiler.query_set, 0..queries, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &staging, 0, bytes);
            self.submit(&mut recorder);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.inner
            .device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| Error::Device(format!("poll failed: {e}")))?;
        rx.recv()
            .map_err(|_| Error::Device("profiler readback cancelled".into()))?
            .map_err(|e| Error::Device(format!("mapping profiler results failed: {e}")))?;
        let ticks: Vec<u64> = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| Error::Device(format!("mapped range unavailable: {e}")))?;
            view.chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect()
        };
        staging.unmap();
        let period = f64::from(self.inner.queue.get_timestamp_period());
        Ok(timeline(&profiler.labels, &profiler.grids, &ticks, period))
    }
}
