//! Choosing an adapter and describing it.

use std::fmt;

use wgrad_core::{Error, Result};

/// What [`GpuDevice::info`](crate::GpuDevice::info) reports about the chosen adapter.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    /// Its position in wgpu's enumeration: the `N` of `gpu:N`.
    pub index: usize,
    /// The adapter's name (e.g. "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)").
    pub name: String,
    /// The graphics API wgpu opened it through (Vulkan, Metal, Dx12, Gl).
    pub backend: String,
    /// Discrete/integrated GPU, virtual GPU or CPU (a software adapter).
    pub device_type: String,
    /// The driver's name.
    pub driver: String,
    /// The driver's version details.
    pub driver_info: String,
    /// Subgroup (warp) size range the adapter reports.
    pub subgroup_sizes: (u32, u32),
    /// The limits the device was created with (the adapter's own).
    pub limits: wgpu::Limits,
    /// The features the device was created with.
    pub features: wgpu::Features,
    /// The tensor-core tile shapes and element types the adapter reports
    /// through `VK_KHR_cooperative_matrix` (wgpu's
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`), whether or not wgrad requested
    /// the feature: what a cooperative-matrix kernel could use here.
    /// Empty on adapters without it (lavapipe, Metal before Apple7).
    pub cooperative_matrix: Vec<wgpu::CooperativeMatrixProperties>,
}

impl AdapterSummary {
    pub(crate) fn new(
        index: usize,
        info: &wgpu::AdapterInfo,
        limits: wgpu::Limits,
        features: wgpu::Features,
        cooperative_matrix: Vec<wgpu::CooperativeMatrixProperties>,
    ) -> Self {
        AdapterSummary {
            index,
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
            limits,
            features,
            cooperative_matrix,
        }
    }
}

impl AdapterSummary {
    /// Whether this is a software rasterizer (adapter type CPU: lavapipe,
    /// llvmpipe, SwiftShader, WARP), usually slower than wgrad's CPU backend.
    pub fn is_software(&self) -> bool {
        self.device_type == format!("{:?}", wgpu::DeviceType::Cpu)
    }
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "adapter: gpu:{} {} ({}, {})",
            self.index, self.name, self.backend, self.device_type
        )?;
        writeln!(f, "driver: {} {}", self.driver, self.driver_info)?;
        let l = &self.limits;
        writeln!(f, "max_buffer_size: {} bytes", l.max_buffer_size)?;
        writeln!(
            f,
            "max_storage_buffer_binding_size: {} bytes",
            l.max_storage_buffer_binding_size
        )?;
        writeln!(
            f,
            "max_storage_buffers_per_shader_stage: {}",
            l.max_storage_buffers_per_shader_stage
        )?;
        writeln!(
            f,
            "max_compute_workgroup_storage_size: {} bytes",
            l.max_compute_workgroup_storage_size
        )?;
        writeln!(
            f,
            "max_compute_invocations_per_workgroup: {}",
            l.max_compute_invocations_per_workgroup
        )?;
        writeln!(
            f,
            "max_compute_workgroup_size: {}x{}x{}",
            l.max_compute_workgroup_size_x,
            l.max_compute_workgroup_size_y,
            l.max_compute_workgroup_size_z
        )?;
        writeln!(
            f,
            "max_compute_workgroups_per_dimension: {}",
            l.max_compute_workgroups_per_dimension
        )?;
        writeln!(f, "max_immediate_size: {} bytes", l.max_immediate_size)?;
        writeln!(
            f,
            "subgroup_size: {}..={}",
            self.subgroup_sizes.0, self.subgroup_sizes.1
        )?;
        writeln!(f, "features: {:?}", self.features)?;
        write!(f, "cooperative matrix (MxNxK A/B -> C):")?;
        if self.cooperative_matrix.is_empty() {
            write!(f, " none")?;
        }
        for p in &self.cooperative_matrix {
            write!(
                f,
                " {}x{}x{} {:?}->{:?}",
                p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type
            )?;
        }
        Ok(())
    }
}

/// Features wgrad uses when the adapter has them.
pub(crate) fn wanted_features() -> wgpu::Features {
    wgpu::Features::IMMEDIATES
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_F16
}

/// Whether `adapter` can run wgrad's tensor-core matmul
/// (`kernels/matmul/matmul_coop.wgsl`): cooperative matrices with a
/// 16 x 16 x 16 f16 -> f32 configuration, f16 shaders, and subgroups that
/// are always 32 lanes wide (the kernel lays 8 subgroups over 256 threads).
pub(crate) fn has_f16_tensor_cores(adapter: &wgpu::Adapter) -> bool {
    let needed = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SHADER_F16
        | wgpu::Features::SUBGROUP;
    let info = adapter.get_info();
    adapter.features().contains(needed)
        && info.subgroup_min_size == 32
        && info.subgroup_max_size == 32
        && adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                && p.ab_type == wgpu::CooperativeScalarType::F16
                && p.cr_type == wgpu::CooperativeScalarType::F32
        })
}

/// One adapter wgpu enumerates, as [`GpuDevice::adapters`](crate::GpuDevice::adapters)
/// lists it; `gpu:N` names the one with `index` N.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterListing {
    /// Its position in wgpu's enumeration: the `N` of `gpu:N`.
    pub index: usize,
    /// The adapter's name.
    pub name: String,
    /// The graphics API wgpu opened it through.
    pub backend: String,
    /// Discrete/integrated GPU, virtual GPU or CPU (a software adapter).
    pub device_type: String,
    /// A software rasterizer (adapter type CPU: lavapipe, llvmpipe,
    /// SwiftShader, WARP).
    pub software: bool,
}

impl fmt::Display for AdapterListing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gpu:{} {} ({}, {}{})",
            self.index,
            self.name,
            self.backend,
            self.device_type,
            if self.software { ", software" } else { "" }
        )
    }
}

/// The wgpu instance wgrad uses: primary backends (Vulkan, Metal, DX12)
/// unless `WGPU_BACKEND` says otherwise (probing GL as well only adds noise
/// and a less capable adapter).
pub(crate) fn instance() -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    descriptor.backends = backends();
    wgpu::Instance::new(descriptor)
}

fn backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

fn enumerate(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    pollster::block_on(instance.enumerate_adapters(backends()))
}

/// Every adapter wgpu enumerates, in order (`gpu:0`, `gpu:1`, ...).
pub(crate) fn list(instance: &wgpu::Instance) -> Vec<AdapterListing> {
    enumerate(instance)
        .iter()
        .enumerate()
        .map(|(index, adapter)| {
            let info = adapter.get_info();
            AdapterListing {
                index,
                name: info.name.clone(),
                backend: format!("{:?}", info.backend),
                device_type: format!("{:?}", info.device_type),
                software: info.device_type == wgpu::DeviceType::Cpu,
            }
        })
        .collect()
}

/// "1 adapter (gpu:0 llvmpipe (Vulkan, Cpu, software))", for messages.
pub(crate) fn describe(listings: &[AdapterListing]) -> String {
    let names: Vec<String> = listings.iter().map(ToString::to_string).collect();
    format!(
        "{} adapter{} ({})",
        listings.len(),
        if listings.len() == 1 { "" } else { "s" },
        names.join("; ")
    )
}

/// Which adapter to open.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Which {
    /// `WGRAD_ADAPTER` if set, else the high-performance one.
    Default,
    /// `gpu:N`: the N-th adapter wgpu enumerates.
    Index(usize),
}

/// Picks the adapter and returns it with its index in the enumeration.
/// [`Which::Default`]: `WGRAD_ADAPTER` (an index into the enumerated list,
/// or a case-insensitive substring of the name) if set, else the
/// high-performance one.
pub(crate) fn choose(instance: &wgpu::Instance, which: Which) -> Result<(usize, wgpu::Adapter)> {
    let adapters = enumerate(instance);
    if adapters.is_empty() {
        return Err(Error::NoAdapter {
            detail: format!("wgpu enumerated no adapters for backends {:?}", backends()),
        });
    }
    let index_of = |adapter: &wgpu::Adapter| {
        let info = adapter.get_info();
        adapters
            .iter()
            .position(|a| a.get_info() == info)
            .unwrap_or(0)
    };
    if let Which::Index(n) = which {
        if n >= adapters.len() {
            return Err(Error::invalid(
                "GPU adapter",
                format!(
                    "gpu:{n} does not exist: wgpu enumerates {}",
                    describe(&list(instance))
                ),
            ));
        }
        let adapter = adapters.into_iter().nth(n);
        return adapter
            .map(|a| (n, a))
            .ok_or_else(|| Error::invalid("GPU adapter", format!("gpu:{n} does not exist")));
    }
    if let Ok(wanted) = std::env::var("WGRAD_ADAPTER") {
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        let found = match wanted.parse::<usize>() {
            Ok(i) => adapters.get(i).cloned().map(|a| (i, a)),
            Err(_) => {
                let needle = wanted.to_lowercase();
                adapters
                    .iter()
                    .position(|a| a.get_info().name.to_lowercase().contains(&needle))
                    .and_then(|i| adapters.get(i).cloned().map(|a| (i, a)))
            }
        };
        return found.ok_or_else(|| Error::NoAdapter {
            detail: format!("WGRAD_ADAPTER={wanted:?} matches none of {names:?}"),
        });
    }
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    };
    let adapter =
        pollster::block_on(instance.request_adapter(&options)).map_err(|e| Error::NoAdapter {
            detail: e.to_string(),
        })?;
    Ok((index_of(&adapter), adapter))
}
