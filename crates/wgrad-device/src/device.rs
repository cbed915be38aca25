//! `GpuDevice`: the handle every GPU tensor holds: the struct, opening a
//! device (adapter choice, limits, features, the poller thread), the
//! process-wide shared devices, and what it says about itself (info, limits,
//! stats).
//!
//! The rest of its methods live by concern: allocation and upload in
//! `upload.rs`, recording dispatches and copies and submitting in
//! `recorder.rs`, readback and `synchronize` in `readback.rs`, the timestamp
//! profiler session in `profiler.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, mpsc};

use parking_lot::Mutex;
use wgrad_core::{Error, Result};

use crate::adapter::{self, AdapterListing, AdapterSummary, Which};
use crate::fault::FAULT_BYTES;
use crate::pool::BufferPool;
use crate::profiler::Profiler;
use crate::recorder::Recorder;
use crate::stats::{DeviceStats, StatCounters};

/// A GPU: wgpu device and queue plus wgrad's pool, recorder and stats.
/// Cloning is cheap; clones share everything.
#[derive(Clone)]
pub struct GpuDevice {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) ordinal: u64,
    /// `gpu:N` (plus `#k` for the k-th extra device opened on that adapter).
    pub(crate) label: String,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) summary: AdapterSummary,
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) recorder: Mutex<Recorder>,
    pub(crate) stats: Arc<StatCounters>,
    pub(crate) fault: wgpu::Buffer,
    pub(crate) poller: Mutex<mpsc::Sender<wgpu::SubmissionIndex>>,
    /// The poller thread, joined when the device drops (see `Drop`).
    pub(crate) poller_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    pub(crate) uncaptured: Arc<Mutex<Option<String>>>,
    pub(crate) profiler: Mutex<Option<Profiler>>,
}

static NEXT_ORDINAL: AtomicU64 = AtomicU64::new(0);

impl Drop for Inner {
    /// Closes the poller's channel and waits for its thread to end, so the
    /// thread's handle on the wgpu device (possibly the last one, whose
    /// drop destroys the driver's device) is released before this returns:
    /// a poller still tearing the device down while the process exits ran
    /// into the driver's exit handlers (lavapipe: an occasional SIGSEGV at
    /// the end of a test binary). Not joined from the poller thread itself
    /// (a map callback there can hold the last `GpuDevice`).
    fn drop(&mut self) {
        let (closed, _) = mpsc::channel();
        drop(std::mem::replace(self.poller.get_mut(), closed));
        if let Some(thread) = self.poller_thread.get_mut().take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

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
        let mut features = adapter.features() & adapter::wanted_features();
        let tensor_cores = adapter::has_f16_tensor_cores(&adapter);
        let experimental = if tensor_cores {
            features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
            // SAFETY: wgpu marks cooperative matrices experimental (its
            // SPIR-V may hit driver bugs). Only matmul_coop.wgsl uses them,
            // and only under set_float32_matmul_precision("medium"); every
            // other module is compiled as before (naga switches a module to
            // the Vulkan memory model only when it uses the types).
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgrad"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: experimental,
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
            sink.lock().get_or_insert_with(|| e.to_string());
        }));

        let summary = AdapterSummary::new(
            index,
            &adapter.get_info(),
            device.limits(),
            device.features(),
            adapter.cooperative_matrix_properties(),
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
        let poller_thread = std::thread::Builder::new()
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
            let extra = {
                let mut opened = OPENED.lock();
                let count = opened
                    .get_or_insert_with(HashMap::new)
                    .entry(index)
                    .or_insert(0);
                *count += 1;
                *count - 1
            };
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
                poller_thread: Mutex::new(Some(poller_thread)),
                uncaptured,
                profiler: Mutex::new(None),
            }),
        })
    }

    /// The process-wide default GPU, opened on first use (like `cuda`).
    ///
    /// A failure is remembered and returned again on every later call, as
    /// the same kind of error: no adapter stays `NoAdapter` with its own
    /// detail (not wrapped in a second copy of the message), any other
    /// failure to open the device is `Error::Device` with its text.
    pub fn shared() -> Result<Self> {
        /// Why opening the shared device failed, kept so it can be rebuilt
        /// (`Error` holds sources that are not `Clone`).
        enum Failure {
            NoAdapter(String),
            Other(String),
        }
        static SHARED: OnceLock<std::result::Result<GpuDevice, Failure>> = OnceLock::new();
        let opened = SHARED.get_or_init(|| {
            GpuDevice::new().map_err(|e| match e {
                Error::NoAdapter { detail } => Failure::NoAdapter(detail),
                other => Failure::Other(other.to_string()),
            })
        });
        match opened {
            Ok(device) => Ok(device.clone()),
            Err(Failure::NoAdapter(detail)) => Err(Error::NoAdapter {
                detail: detail.clone(),
            }),
            Err(Failure::Other(message)) => Err(Error::Device(message.clone())),
        }
    }

    /// The process-wide device on adapter `gpu:index` (like `cuda:N`),
    /// opened on first use; the same device as [`shared`](Self::shared)
    /// when that one is on this adapter.
    pub fn shared_at(index: usize) -> Result<Self> {
        static BY_INDEX: Mutex<Option<HashMap<usize, GpuDevice>>> = Mutex::new(None);
        let mut opened = BY_INDEX.lock();
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

    /// Whether f32 products may run on the tensor cores
    /// (`kernels/matmul/matmul_coop.wgsl`, f16 operands with f32 sums) under
    /// `set_float32_matmul_precision("medium")`: the adapter has
    /// cooperative matrices with a 16 x 16 x 16 f16 -> f32 configuration and
    /// 32-lane subgroups, and the device was created with them.
    pub fn has_f16_tensor_cores(&self) -> bool {
        self.inner
            .summary
            .features
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
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
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}
