//! `GpuDevice`: the handle every GPU tensor holds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, mpsc};

use futures::channel::oneshot;
use wgrad_core::{Error, Result};

use crate::adapter::{self, AdapterListing, AdapterSummary, Which};
use crate::buffer::GpuBuffer;
use crate::fault::{self, FAULT_BYTES};
use crate::pool::{BufferPool, FirstUse, Take};
use crate::profiler::{self, KernelTime, Profiler};
use crate::readback::Readback;
use crate::recorder::{MAX_PENDING_DISPATCHES, Recorder};
use crate::stats::{DeviceStats, StatCounters};

/// A GPU: wgpu device and queue plus wgrad's pool, recorder and stats.
/// Cloning is cheap; clones share everything.
#[derive(Clone)]
pub struct GpuDevice {
    inner: Arc<Inner>,
}

struct Inner {
    ordinal: u64,
    /// `gpu:N` (plus `#k` for the k-th extra device opened on that adapter).
    label: String,
    device: wgpu::Device,
    queue: wgpu::Queue,
    summary: AdapterSummary,
    pool: Arc<BufferPool>,
    recorder: Mutex<Recorder>,
    stats: Arc<StatCounters>,
    fault: wgpu::Buffer,
    poller: Mutex<mpsc::Sender<wgpu::SubmissionIndex>>,
    uncaptured: Arc<Mutex<Option<String>>>,
    profiler: Mutex<Option<Profiler>>,
}

static NEXT_ORDINAL: AtomicU64 = AtomicU64::new(0);

impl GpuDevice {
    /// Opens the adapter chosen by `WGRAD_ADAPTER` / `WGPU_BACKEND` (high
    /// performance by default) with the adapter's own limits and the useful
    /// features it has. Software adapters are accepted (this is an explicit
    /// request for a GPU); `Device::best()` is what avoids them.
    pub fn new() -> Result<Self> {
        GpuDevice::open(Which::Default)
    }

    /// Opens adapter `gpu:index`: the `index`-th adapter wgpu enumerates
    /// (see [`adapters`](Self::adapters)). An index past the end is an error
    /// that lists the adapters there are.
    pub fn with_adapter(index: usize) -> Result<Self> {
        GpuDevice::open(Which::Index(index))
    }

    /// Every adapter wgpu enumerates (under `WGPU_BACKEND`), in `gpu:N` order.
    pub fn adapters() -> Vec<AdapterListing> {
        adapter::list(&adapter::instance())
    }

    fn open(which: Which) -> Result<Self> {
        let instance = adapter::instance();
        let (index, adapter) = adapter::choose(&instance, which)?;
        let features = adapter.features() & adapter::wanted_features();
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgrad"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| {
            Error::Device(format!(
                "request_device on {:?} failed: {e}",
                adapter.get_info().name
            ))
        })?;

        // wgpu's default handler panics; keep the first error and report it at the next sync point.
        let uncaptured = Arc::new(Mutex::new(None::<String>));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut slot) = sink.lock() {
                slot.get_or_insert_with(|| e.to_string());
            }
        }));

        let summary = AdapterSummary::new(
            index,
            &adapter.get_info(),
            device.limits(),
            device.features(),
        );
        let stats = Arc::new(StatCounters::default());
        let pool = Arc::new(BufferPool::new(
            device.clone(),
            stats.clone(),
            &summary.limits,
        ));
        let fault = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgrad fault flags"),
            size: FAULT_BYTES,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let (tx, rx) = mpsc::channel::<wgpu::SubmissionIndex>();
        let poll_device = device.clone();
        std::thread::Builder::new()
            .name("wgrad-gpu-poller".into())
            .spawn(move || {
                // Drives map_async callbacks; ends when the GpuDevice is dropped.
                while let Ok(index) = rx.recv() {
                    let _ = poll_device.poll(wgpu::PollType::Wait {
                        submission_index: Some(index),
                        timeout: None,
                    });
                }
            })
            .map_err(|e| Error::Device(format!("cannot start the GPU poller thread: {e}")))?;

        let label = {
            static OPENED: Mutex<Option<HashMap<usize, u32>>> = Mutex::new(None);
            let extra = OPENED.lock().ok().map_or(0, |mut opened| {
                let count = opened
                    .get_or_insert_with(HashMap::new)
                    .entry(index)
                    .or_insert(0);
                *count += 1;
                *count - 1
            });
            if extra == 0 {
                format!("gpu:{index}")
            } else {
                format!("gpu:{index}#{extra}")
            }
        };
        Ok(GpuDevice {
            inner: Arc::new(Inner {
                ordinal: NEXT_ORDINAL.fetch_add(1, Ordering::Relaxed),
                label,
                device,
                queue,
                summary,
                pool,
                recorder: Mutex::new(Recorder::default()),
                stats,
                fault,
                poller: Mutex::new(tx),
                uncaptured,
                profiler: Mutex::new(None),
            }),
        })
    }

    /// The process-wide default GPU, opened on first use (like `cuda`).
    pub fn shared() -> Result<Self> {
        static SHARED: OnceLock<std::result::Result<GpuDevice, String>> = OnceLock::new();
        match SHARED.get_or_init(|| GpuDevice::new().map_err(|e| e.to_string())) {
            Ok(device) => Ok(device.clone()),
            Err(message) => Err(Error::NoAdapter {
                detail: message.clone(),
            }),
        }
    }

    /// The process-wide device on adapter `gpu:index` (like `cuda:N`),
    /// opened on first use; the same device as [`shared`](Self::shared)
    /// when that one is on this adapter.
    pub fn shared_at(index: usize) -> Result<Self> {
        static BY_INDEX: Mutex<Option<HashMap<usize, GpuDevice>>> = Mutex::new(None);
        let mut opened = BY_INDEX
            .lock()
            .map_err(|_| Error::Device("device registry lock poisoned".into()))?;
        let opened = opened.get_or_insert_with(HashMap::new);
        if let Some(device) = opened.get(&index) {
            return Ok(device.clone());
        }
        let device = match GpuDevice::shared() {
            Ok(shared) if shared.info().index == index => shared,
            _ => GpuDevice::with_adapter(index)?,
        };
        opened.insert(index, device.clone());
        Ok(device)
    }

    /// Adapter name, backend, type, driver, limits and features.
    pub fn info(&self) -> &AdapterSummary {
        &self.inner.summary
    }

    /// Limits the device was created with.
    pub fn limits(&self) -> &wgpu::Limits {
        &self.inner.summary.limits
    }

    /// Features the device was created with.
    pub fn features(&self) -> wgpu::Features {
        self.inner.summary.features
    }

    /// The wgpu device (for pipeline and bind-group creation in `wgrad-kernels`).
    pub fn wgpu_device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// A process-unique number for this device (caches key on it).
    pub fn ordinal(&self) -> u64 {
        self.inner.ordinal
    }

    /// Whether two handles refer to the same device.
    pub fn same_device(&self, other: &GpuDevice) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A short name for messages, e.g. `gpu:0 (llvmpipe)`: the adapter's
    /// `gpu:N`, plus `#k` for the k-th extra device opened on that adapter.
    pub fn label(&self) -> String {
        format!("{} ({})", self.inner.label, self.inner.summary.name)
    }

    /// The device's fault-flag buffer; index kernels bind it to report bad indices.
    pub fn fault_buffer(&self) -> &wgpu::Buffer {
        &self.inner.fault
    }

    /// Counters since the device was created.
    pub fn stats(&self) -> DeviceStats {
        self.inner.stats.snapshot()
    }

    /// Counts a bind group creation (called by the bind-group cache).
    pub fn note_bind_group_created(&self) {
        StatCounters::bump(&self.inner.stats.bind_groups_created, 1);
    }

    /// Counts a pipeline creation (called by the pipeline cache).
    pub fn note_pipeline_created(&self) {
        StatCounters::bump(&self.inner.stats.pipelines_created, 1);
    }

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

    fn recorder(&self) -> Result<MutexGuard<'_, Recorder>> {
        self.inner
            .recorder
            .lock()
            .map_err(|_| Error::Device("command recorder lock poisoned".into()))
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
        let mut recorder = self.recorder()?;
        let mut profiler = self
            .inner
            .profiler
            .lock()
            .map_err(|_| Error::Device("profiler lock poisoned".into()))?;
        let slots = profiler
            .as_mut()
            .and_then(|p| p.next_slot(label).map(|s| (s, p.query_set.clone())));
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
        if recorder.pending_dispatches >= MAX_PENDING_DISPATCHES {
            self.submit(&mut recorder);
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
        let mut recorder = self.recorder()?;
        recorder
            .encoder_outside_pass(&self.inner.device)
            .copy_buffer_to_buffer(src.raw(), src_offset, dst.raw(), dst_offset, bytes);
        Ok(())
    }

    fn submit(&self, recorder: &mut Recorder) -> Option<wgpu::SubmissionIndex> {
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
        let mut recorder = self.recorder()?;
        self.submit(&mut recorder);
        Ok(())
    }

    fn take_uncaptured(&self) -> Result<()> {
        match self
            .inner
            .uncaptured
            .lock()
            .ok()
            .and_then(|mut slot| slot.take())
        {
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
            let mut recorder = self.recorder()?;
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
            let mut recorder = self.recorder()?;
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
            let sender = self
                .inner
                .poller
                .lock()
                .map_err(|_| Error::Device("poller lock poisoned".into()))?;
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
        let mut profiler = self
            .inner
            .profiler
            .lock()
            .map_err(|_| Error::Device("profiler lock poisoned".into()))?;
        *profiler = Some(Profiler::new(&self.inner.device));
        Ok(())
    }

    /// Stops profiling and returns GPU time per kernel since
    /// [`start_profiling`](Self::start_profiling), largest first (one
    /// submit and readback). Dispatches beyond the query capacity
    /// (2048 per session) are not timed.
    pub fn profile_report(&self) -> Result<Vec<KernelTime>> {
        let taken = self
            .inner
            .profiler
            .lock()
            .map_err(|_| Error::Device("profiler lock poisoned".into()))?
            .take();
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
            let mut recorder = self.recorder()?;
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
        Ok(profiler::summarize(&profiler.labels, &ticks, period))
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

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}
