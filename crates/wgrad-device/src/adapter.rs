//! Choosing an adapter and describing it.

use std::fmt;

use wgrad_core::{Error, Result};

/// What [`GpuDevice::info`](crate::GpuDevice::info) reports about the chosen adapter.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    /// Subgroup (warp) size range the adapter reports.
    pub subgroup_sizes: (u32, u32),
    /// The limits the device was created with (the adapter's own).
    pub limits: wgpu::Limits,
    /// The features the device was created with.
    pub features: wgpu::Features,
}

impl AdapterSummary {
    pub(crate) fn new(
        info: &wgpu::AdapterInfo,
        limits: wgpu::Limits,
        features: wgpu::Features,
    ) -> Self {
        AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
            limits,
            features,
        }
    }
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "adapter: {} ({}, {})",
            self.name, self.backend, self.device_type
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
        write!(f, "features: {:?}", self.features)
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

/// Picks the adapter: `WGRAD_ADAPTER` (an index into the enumerated list, or a
/// case-insensitive substring of the name) if set, else the high-performance one.
pub(crate) fn choose(instance: &wgpu::Instance) -> Result<wgpu::Adapter> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    if adapters.is_empty() {
        return Err(Error::NoAdapter {
            detail: format!("wgpu enumerated no adapters for backends {backends:?}"),
        });
    }
    if let Ok(wanted) = std::env::var("WGRAD_ADAPTER") {
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        let found = match wanted.parse::<usize>() {
            Ok(i) => adapters.into_iter().nth(i),
            Err(_) => {
                let needle = wanted.to_lowercase();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&needle))
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
    pollster::block_on(instance.request_adapter(&options)).map_err(|e| Error::NoAdapter {
        detail: e.to_string(),
    })
}
