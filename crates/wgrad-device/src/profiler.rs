//! GPU timestamp profiler: per-kernel GPU time from timestamp queries
//! written inside the open compute pass around every dispatch.
//!
//! Off by default (timestamps cost a little per dispatch). Turn it on with
//! [`GpuDevice::start_profiling`](crate::GpuDevice::start_profiling), run the
//! work, then [`GpuDevice::profile_report`](crate::GpuDevice::profile_report)
//! resolves the queries (one submit + readback) and sums time per kernel.

use std::collections::HashMap;

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

pub(crate) struct Profiler {
    pub query_set: wgpu::QuerySet,
    pub labels: Vec<&'static str>,
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
            dropped: 0,
        }
    }

    /// Query indices for the next dispatch, or `None` when full.
    pub fn next_slot(&mut self, label: &'static str) -> Option<(u32, u32)> {
        let i = self.labels.len() as u32;
        if 2 * i + 1 >= MAX_QUERIES {
            self.dropped += 1;
            return None;
        }
        self.labels.push(label);
        Some((2 * i, 2 * i + 1))
    }
}

/// Sums `(end - start) * period` per label, largest total first.
pub(crate) fn summarize(labels: &[&'static str], ticks: &[u64], period_ns: f64) -> Vec<KernelTime> {
    let mut by_kernel: HashMap<&'static str, (u64, f64)> = HashMap::new();
    for (i, label) in labels.iter().enumerate() {
        let (start, end) = (ticks[2 * i], ticks[2 * i + 1]);
        let us = end.saturating_sub(start) as f64 * period_ns / 1e3;
        let entry = by_kernel.entry(label).or_default();
        entry.0 += 1;
        entry.1 += us;
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
