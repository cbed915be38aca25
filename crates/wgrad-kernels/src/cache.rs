//! Pipeline, layout and bind-group caches, and the dispatch entry point.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use wgrad_core::{Error, Result};
use wgrad_device::wgpu;
use wgrad_device::{GpuBuffer, GpuDevice};

use crate::grid::{WORKGROUP_SIZE, grid_for};
use crate::runtime_checks;
use crate::sources;
use crate::spec::{Access, Elem, KernelSpec};

/// Bind groups kept before the cache is cleared. Steady-state training reuses
/// a bounded set of pool buffers, so this is only reached by unusual programs.
const MAX_BIND_GROUPS: usize = 16_384;

/// Most override constants any kernel takes, and most buffers it binds.
const MAX_CONSTANTS: usize = 10;
const MAX_BINDINGS: usize = 32;

/// (spec address, constants as (name address, value bits)): built without
/// allocating, since it is looked up on every dispatch. A name that happens to
/// live at two addresses only costs a duplicate pipeline, never a wrong one.
type PipelineKey = (usize, [(usize, u64); MAX_CONSTANTS]);
/// (layout id, buffer ids; unused slots 0 — real ids start at 1).
type BindKey = (usize, [u64; MAX_BINDINGS]);
type LayoutKey = (Vec<Access>, u32);
/// Layouts by key, and the layouts themselves indexed by the id the key maps to.
type LayoutTable = (HashMap<LayoutKey, usize>, Vec<Arc<Layout>>);

struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout_id: usize,
}

struct Layout {
    bind_group_layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
}

/// Per-device kernel state. Obtain it with [`KernelCache::of`].
pub struct KernelCache {
    device: GpuDevice,
    modules: Mutex<HashMap<(&'static str, Elem), wgpu::ShaderModule>>,
    layouts: Mutex<LayoutTable>,
    pipelines: Mutex<HashMap<PipelineKey, Arc<Pipeline>>>,
    bind_groups: Mutex<HashMap<BindKey, wgpu::BindGroup>>,
}

fn lock<'a, T>(m: &'a Mutex<T>, what: &str) -> Result<MutexGuard<'a, T>> {
    m.lock()
        .map_err(|_| Error::Device(format!("kernel {what} cache lock poisoned")))
}

impl KernelCache {
    /// The cache of `device` (created on first use; one per device).
    pub fn of(device: &GpuDevice) -> Result<Arc<KernelCache>> {
        static CACHES: OnceLock<Mutex<HashMap<u64, Arc<KernelCache>>>> = OnceLock::new();
        let mut caches = lock(CACHES.get_or_init(Default::default), "registry")?;
        Ok(caches
            .entry(device.ordinal())
            .or_insert_with(|| {
                Arc::new(KernelCache {
                    device: device.clone(),
                    modules: Mutex::default(),
                    layouts: Mutex::default(),
                    pipelines: Mutex::default(),
                    bind_groups: Mutex::default(),
                })
            })
            .clone())
    }

    /// The device this cache records on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    fn layout(&self, spec: &KernelSpec) -> Result<(usize, Arc<Layout>)> {
        let mut access = spec.bindings.to_vec();
        if spec.uses_fault {
            access.push(Access::ReadWrite);
        }
        let key = (access, spec.immediate_bytes);
        let mut guard = lock(&self.layouts, "layout")?;
        let (index, list) = &mut *guard;
        if let Some(&id) = index.get(&key) {
            return Ok((id, list[id].clone()));
        }
        let device = self.device.wgpu_device();
        let entries: Vec<wgpu::BindGroupLayoutEntry> = key
            .0
            .iter()
            .enumerate()
            .map(|(i, access)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage {
                        read_only: *access == Access::Read,
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(spec.entry),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(spec.entry),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: spec.immediate_bytes,
        });
        let layout = Arc::new(Layout {
            bind_group_layout,
            pipeline_layout,
        });
        list.push(layout.clone());
        index.insert(key, list.len() - 1);
        Ok((list.len() - 1, layout))
    }

    fn pipeline(
        &self,
        spec: &'static KernelSpec,
        constants: &[(&'static str, f64)],
    ) -> Result<Arc<Pipeline>> {
        if constants.len() > MAX_CONSTANTS {
            return Err(Error::Device(format!(
                "kernel {}::{} got {} override constants; at most {MAX_CONSTANTS}",
                spec.file,
                spec.entry,
                constants.len()
            )));
        }
        let mut values = [(0usize, 0u64); MAX_CONSTANTS];
        for (slot, &(name, value)) in values.iter_mut().zip(constants) {
            *slot = (name.as_ptr() as usize, value.to_bits());
        }
        let key: PipelineKey = (spec as *const KernelSpec as usize, values);
        if let Some(p) = lock(&self.pipelines, "pipeline")?.get(&key) {
            return Ok(p.clone());
        }
        let limit = self.device.limits().max_immediate_size;
        if spec.immediate_bytes > limit {
            return Err(Error::Device(format!(
                "kernel {}::{} needs {} bytes of immediates; this adapter allows {limit}",
                spec.file, spec.entry, spec.immediate_bytes
            )));
        }
        let device = self.device.wgpu_device();
        let (layout_id, layout) = self.layout(spec)?;
        let module = {
            let mut modules = lock(&self.modules, "module")?;
            match modules.get(&(spec.file, spec.elem)) {
                Some(m) => m.clone(),
                None => {
                    let source = sources::instantiate(spec.file, spec.elem)?;
                    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
                    let module = runtime_checks::create_module(
                        device,
                        wgpu::ShaderModuleDescriptor {
                            label: Some(spec.file),
                            source: wgpu::ShaderSource::Wgsl(source.into()),
                        },
                    );
                    if let Some(e) = pollster_block(scope.pop()) {
                        return Err(Error::Device(format!(
                            "kernels/{} failed to compile: {e}",
                            spec.file
                        )));
                    }
                    modules.insert((spec.file, spec.elem), module.clone());
                    module
                }
            }
        };
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(spec.entry),
            layout: Some(&layout.pipeline_layout),
            module: &module,
            entry_point: Some(spec.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        if let Some(e) = pollster_block(scope.pop()) {
            return Err(Error::Device(format!(
                "pipeline {}::{} failed: {e}",
                spec.file, spec.entry
            )));
        }
        self.device.note_pipeline_created();
        let p = Arc::new(Pipeline {
            pipeline,
            layout_id,
        });
        lock(&self.pipelines, "pipeline")?.insert(key, p.clone());
        Ok(p)
    }

    /// Records one dispatch of `spec` over `workgroups`, binding `buffers` in
    /// order (plus the fault buffer if the kernel uses it) and passing
    /// `immediates` as the kernel's `var<immediate>` block.
    ///
    /// `P` is a `#[repr(C)]` struct mirroring the kernel's immediate struct
    /// field for field; its size must equal the spec's `immediate_bytes`
    /// (checked on every call: a mismatch is an error naming the kernel).
    pub fn dispatch<P: bytemuck::Pod>(
        &self,
        spec: &'static KernelSpec,
        constants: &[(&'static str, f64)],
        buffers: &[&GpuBuffer],
        immediates: &P,
        workgroups: [u32; 3],
    ) -> Result<()> {
        self.dispatch_bytes(
            spec,
            constants,
            buffers,
            bytemuck::bytes_of(immediates),
            workgroups,
        )
    }

    /// [`dispatch`](Self::dispatch) with the immediates already as bytes.
    fn dispatch_bytes(
        &self,
        spec: &'static KernelSpec,
        constants: &[(&'static str, f64)],
        buffers: &[&GpuBuffer],
        immediates: &[u8],
        workgroups: [u32; 3],
    ) -> Result<()> {
        if buffers.len() != spec.bindings.len() {
            return Err(Error::Device(format!(
                "kernel {}::{} takes {} buffers, got {}",
                spec.file,
                spec.entry,
                spec.bindings.len(),
                buffers.len()
            )));
        }
        if immediates.len() != spec.immediate_bytes as usize {
            return Err(Error::Device(format!(
                "kernel {}::{} takes {} bytes of immediates, got {}",
                spec.file,
                spec.entry,
                spec.immediate_bytes,
                immediates.len()
            )));
        }
        let pipeline = self.pipeline(spec, constants)?;
        if buffers.len() > MAX_BINDINGS {
            return Err(Error::Device(format!(
                "kernel {}::{} binds {} buffers; at most {MAX_BINDINGS}",
                spec.file,
                spec.entry,
                buffers.len()
            )));
        }
        let mut ids = [0u64; MAX_BINDINGS];
        for (slot, b) in ids.iter_mut().zip(buffers) {
            *slot = b.id();
        }
        let key: BindKey = (pipeline.layout_id, ids);
        let mut groups = lock(&self.bind_groups, "bind group")?;
        if !groups.contains_key(&key) {
            if groups.len() >= MAX_BIND_GROUPS {
                groups.clear();
            }
            let layout = lock(&self.layouts, "layout")?.1[pipeline.layout_id].clone();
            let mut entries: Vec<wgpu::BindGroupEntry> = buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: b.raw().as_entire_binding(),
                })
                .collect();
            if spec.uses_fault {
                entries.push(wgpu::BindGroupEntry {
                    binding: buffers.len() as u32,
                    resource: self.device.fault_buffer().as_entire_binding(),
                });
            }
            let group = self
                .device
                .wgpu_device()
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(spec.entry),
                    layout: &layout.bind_group_layout,
                    entries: &entries,
                });
            self.device.note_bind_group_created();
            groups.insert(key, group);
        }
        let group = groups
            .get(&key)
            .ok_or_else(|| Error::Device("bind group cache lost an entry".into()))?;
        self.device.dispatch(
            spec.entry,
            &pipeline.pipeline,
            group,
            immediates,
            workgroups,
        )
    }

    /// [`dispatch`](Self::dispatch) with one thread per element for a 1-D
    /// kernel of `@workgroup_size(WORKGROUP_SIZE)`.
    pub fn dispatch_1d<P: bytemuck::Pod>(
        &self,
        spec: &'static KernelSpec,
        constants: &[(&'static str, f64)],
        buffers: &[&GpuBuffer],
        immediates: &P,
        threads: u64,
    ) -> Result<()> {
        let groups = threads.div_ceil(u64::from(WORKGROUP_SIZE));
        let grid = grid_for(
            groups,
            self.device.limits().max_compute_workgroups_per_dimension,
        );
        self.dispatch(spec, constants, buffers, immediates, grid)
    }

    /// [`dispatch`](Self::dispatch) with `groups` workgroups folded into a grid.
    pub fn dispatch_groups<P: bytemuck::Pod>(
        &self,
        spec: &'static KernelSpec,
        constants: &[(&'static str, f64)],
        buffers: &[&GpuBuffer],
        immediates: &P,
        groups: u64,
    ) -> Result<()> {
        let grid = grid_for(
            groups,
            self.device.limits().max_compute_workgroups_per_dimension,
        );
        self.dispatch(spec, constants, buffers, immediates, grid)
    }
}

/// Error scopes resolve immediately on native backends; block on them.
fn pollster_block<F: std::future::Future>(f: F) -> F::Output {
    wgrad_device::block_on(f)
}
