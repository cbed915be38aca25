//! The command recorder: one open compute pass, flushed on demand.
//!
//! Every dispatch goes into the same compute pass of the same encoder; the
//! pass is ended and the encoder submitted when something needs the
//! results (a readback, a buffer copy, `synchronize()`), and on its own in
//! growing chunks as work is recorded: after 16 dispatches, then 32, then
//! every 64. The first chunk starts the GPU while the host records the
//! rest, and the chunks grow so that a long step pays few submits (each
//! ends a command buffer, a gap on the GPU). On the H200 a dispatch costs
//! ~3.8 µs recorded into an open pass against ~71 µs with a submit of its
//! own (see docs/ARCHITECTURE.md). H100, docs/BENCHMARKS.md (seventh
//! session): submitting only at the readback left the GPU idle while the
//! host recorded a whole batch; chunks of 16-64 took the MLP step from
//! 0.20 to 0.12 ms and the CNN's from 1.03 to 0.81.

use std::sync::atomic::Ordering;

use parking_lot::MutexGuard;
use wgrad_core::Result;

use crate::buffer::GpuBuffer;
use crate::device::GpuDevice;
use crate::stats::StatCounters;

/// Pending dispatches after which the recorder first submits on its own
/// (after a readback or any other submit), and the most it lets pend: the
/// bound doubles from the first to the last with each submit of its own.
pub(crate) const FIRST_AUTO_SUBMIT: u32 = 16;
pub(crate) const MAX_PENDING_DISPATCHES: u32 = 64;

#[derive(Default)]
pub(crate) struct Recorder {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    pub pending_dispatches: u32,
    /// Pending dispatches at which the next submit of the recorder's own
    /// happens (0: [`FIRST_AUTO_SUBMIT`]).
    auto_submit_at: u32,
}

impl Recorder {
    fn encoder(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("wgrad"),
            })
        })
    }

    /// The open compute pass, beginning one if needed.
    pub fn pass(&mut self, device: &wgpu::Device) -> &mut wgpu::ComputePass<'static> {
        let pass = match self.pass.take() {
            Some(pass) => pass,
            None => self
                .encoder(device)
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("wgrad ops"),
                    timestamp_writes: None,
                })
                .forget_lifetime(),
        };
        self.pass.insert(pass)
    }

    /// The encoder with no pass open (for copies and clears, which must sit
    /// outside a compute pass). Recording order is preserved.
    pub fn encoder_outside_pass(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.pass = None; // dropping the pass ends it
        self.encoder(device)
    }

    /// Ends the pass and finishes the encoder, if anything was recorded.
    /// The next submit of the recorder's own comes after
    /// [`FIRST_AUTO_SUBMIT`] dispatches again.
    pub fn finish(&mut self) -> Option<wgpu::CommandBuffer> {
        self.pass = None;
        self.pending_dispatches = 0;
        self.auto_submit_at = FIRST_AUTO_SUBMIT;
        self.encoder.take().map(wgpu::CommandEncoder::finish)
    }

    /// Pending dispatches at which to submit without being asked.
    fn auto_submit_at(&self) -> u32 {
        if self.auto_submit_at == 0 {
            FIRST_AUTO_SUBMIT
        } else {
            self.auto_submit_at
        }
    }
}

/// Recording and submitting (the only place that calls `queue.submit`).
impl GpuDevice {
    pub(crate) fn recorder(&self) -> MutexGuard<'_, Recorder> {
        self.inner.recorder.lock()
    }

    /// Records one dispatch into the open compute pass. `immediates` are the
    /// per-dispatch parameters (at most `limits().max_immediate_size` bytes).
    /// `label` names the kernel in profiles.
    pub fn dispatch(
        &self,
        label: &'static str,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        immediates: &[u8],
        workgroups: [u32; 3],
    ) -> Result<()> {
        if workgroups.contains(&0) {
            return Ok(());
        }
        let mut recorder = self.recorder();
        let mut profiler = self.inner.profiler.lock();
        let slots = profiler.as_mut().and_then(|p| {
            p.next_slot(label, workgroups)
                .map(|s| (s, p.query_set.clone()))
        });
        let pass = recorder.pass(&self.inner.device);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        if !immediates.is_empty() {
            pass.set_immediates(0, immediates);
        }
        if let Some(((start, _), set)) = &slots {
            pass.write_timestamp(set, *start);
        }
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        if let Some(((_, end), set)) = &slots {
            pass.write_timestamp(set, *end);
        }
        recorder.pending_dispatches += 1;
        StatCounters::bump(&self.inner.stats.dispatches, 1);
        let at = recorder.auto_submit_at();
        if recorder.pending_dispatches >= at {
            self.submit(&mut recorder);
            recorder.auto_submit_at = (2 * at).min(MAX_PENDING_DISPATCHES);
        }
        Ok(())
    }

    /// Records a buffer-to-buffer copy in stream order (ends the open pass).
    pub fn copy_buffer(
        &self,
        src: &GpuBuffer,
        src_offset: u64,
        dst: &GpuBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let mut recorder = self.recorder();
        recorder
            .encoder_outside_pass(&self.inner.device)
            .copy_buffer_to_buffer(src.raw(), src_offset, dst.raw(), dst_offset, bytes);
        Ok(())
    }

    pub(crate) fn submit(&self, recorder: &mut Recorder) -> Option<wgpu::SubmissionIndex> {
        let index = recorder.finish().map(|commands| {
            StatCounters::bump(&self.inner.stats.submits, 1);
            self.inner.queue.submit([commands])
        });
        // Nothing recorded is pending now (even when there was nothing to
        // submit), so every buffer released so far is safe for an upload.
        self.inner.pool.epoch.fetch_add(1, Ordering::AcqRel);
        index
    }

    /// Submits everything recorded so far without waiting.
    pub fn flush(&self) -> Result<()> {
        let mut recorder = self.recorder();
        self.submit(&mut recorder);
        Ok(())
    }
}
