//! What the Vulkan driver made of each GEMM, convolution and attention
//! kernel: its pipeline statistics (VK_KHR_pipeline_executable_properties),
//! which on NVIDIA include the register count per thread, local memory and
//! shared memory, so occupancy can be read off (65536 registers per SM).
//! wgpu exposes none of this, so the kernels go through naga to SPIR-V (as
//! wgpu compiles them: naga's index checks off) and into a pipeline made
//! with ash directly. lavapipe lacks the extension; run it on the GPU.
//!
//! ```text
//! cargo build --release -p wgrad-kernels --example pipeline_stats
//! WGRAD_PROBE_ONLY=matmul target/release/examples/pipeline_stats
//! WGRAD_PROBE_KERNELS=path/to/kernels ...   # variants of the kernel files
//! WGRAD_PROBE_IR=dir ...   # also write the driver's internal representations
//! ```
use ash::vk;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use wgrad_kernels::{Elem, KernelSpec, families};

fn spirv(spec: &KernelSpec, consts: &HashMap<String, f64>) -> Vec<u32> {
    let consts: naga::back::PipelineConstants =
        consts.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let src = match std::env::var("WGRAD_PROBE_KERNELS") {
        Ok(dir) => {
            let mut seen = Vec::new();
            let mut out = wgrad_kernels::sources::header(spec.elem);
            expand_disk(&dir, spec.file, &mut seen, &mut out);
            out
        }
        Err(_) => wgrad_kernels::sources::instantiate(spec.file, spec.elem).unwrap(),
    };
    let module = naga::front::wgsl::parse_str(&src).unwrap();
    let mut v = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    );
    let info = v.validate(&module).unwrap();
    let (m, i) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, spec.entry)),
        &consts,
    )
    .unwrap();
    // As wgpu compiles the library (wgrad_kernels::runtime_checks): no
    // index clamps, no loop bounding.
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    let mut opts = naga::back::spv::Options {
        lang_version: (1, 3),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: unchecked,
            buffer: unchecked,
            ..Default::default()
        },
        force_loop_bounding: false,
        ..Default::default()
    };
    opts.flags.remove(naga::back::spv::WriterFlags::DEBUG);
    naga::back::spv::write_vec(
        &m,
        &i,
        &opts,
        Some(&naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: spec.entry.into(),
        }),
    )
    .unwrap()
}

fn main() {
    unsafe {
        let entry = ash::Entry::load().unwrap();
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = entry
            .create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
            .unwrap();
        let pd = instance.enumerate_physical_devices().unwrap()[0];
        let props = instance.get_physical_device_properties(pd);
        println!("device: {:?}", CStr::from_ptr(props.device_name.as_ptr()));
        let qf = instance
            .get_physical_device_queue_family_properties(pd)
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .unwrap() as u32;
        let prio = [1.0f32];
        let qci = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(qf)
            .queue_priorities(&prio)];
        let exts = [ash::khr::pipeline_executable_properties::NAME.as_ptr()];
        let mut pe_feat = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(true);
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut f11)
            .push_next(&mut f12)
            .push_next(&mut f13);
        instance.get_physical_device_features2(pd, &mut f2);
        let base = f2.features;
        let mut f11b = f11;
        f11b.p_next = std::ptr::null_mut();
        let mut f12b = f12;
        f12b.p_next = std::ptr::null_mut();
        let mut f13b = f13;
        f13b.p_next = std::ptr::null_mut();
        let dci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qci)
            .enabled_extension_names(&exts)
            .enabled_features(&base)
            .push_next(&mut pe_feat)
            .push_next(&mut f11b)
            .push_next(&mut f12b)
            .push_next(&mut f13b);
        let device = instance.create_device(pd, &dci, None).unwrap();
        let pe = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
        let only = std::env::var("WGRAD_PROBE_ONLY").unwrap_or_default();
        let mut specs: Vec<(&KernelSpec, Vec<(&str, f64)>)> = Vec::new();
        for s in families::matmul::ALL
            .iter()
            .chain(families::conv::ALL)
            .chain(families::attention::ALL)
            .chain(families::probe::ALL)
        {
            if s.elem != Elem::F32 || s.entry.contains("coop") {
                continue;
            }
            specs.push((s, vec![]));
        }
        specs.push((&families::matmul::MATMUL_128, vec![("A_M_FAST", 1.0)]));
        specs.push((&families::matmul::MATMUL_128, vec![("B_K_FAST", 1.0)]));
        specs.push((&families::matmul::MATMUL_64, vec![("HAS_BIAS", 1.0)]));
        specs.push((
            &families::conv::CONV2D_WEIGHT_GRAD,
            vec![("ONES_COLUMN", 1.0)],
        ));
        for (spec, consts) in specs {
            if !spec.entry.contains(only.as_str()) {
                continue;
            }
            let cmap: HashMap<String, f64> =
                consts.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let words = spirv(spec, &cmap);
            let module = device
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
                .unwrap();
            let n = spec.bindings.len() + usize::from(spec.uses_fault);
            let binds: Vec<_> = (0..n as u32)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let dsl = device
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds),
                    None,
                )
                .unwrap();
            let pcr = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .offset(0)
                .size(spec.immediate_bytes.max(4).next_multiple_of(4))];
            let sets = [dsl];
            let mut plci = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets);
            if spec.immediate_bytes > 0 {
                plci = plci.push_constant_ranges(&pcr);
            }
            let layout = device.create_pipeline_layout(&plci, None).unwrap();
            let name = CString::new(spec.entry).unwrap();
            let ci = vk::ComputePipelineCreateInfo::default()
                .flags(
                    vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                        | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR,
                )
                .stage(
                    vk::PipelineShaderStageCreateInfo::default()
                        .stage(vk::ShaderStageFlags::COMPUTE)
                        .module(module)
                        .name(&name),
                )
                .layout(layout);
            let p = match device.create_compute_pipelines(vk::PipelineCache::null(), &[ci], None) {
                Ok(p) => p[0],
                Err((_, e)) => {
                    println!("{} {:?}: pipeline failed {e:?}", spec.entry, consts);
                    continue;
                }
            };
            let exes = pe
                .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(p))
                .unwrap();
            for idx in 0..exes.len() as u32 {
                let stats = pe
                    .get_pipeline_executable_statistics(
                        &vk::PipelineExecutableInfoKHR::default()
                            .pipeline(p)
                            .executable_index(idx),
                    )
                    .unwrap();
                let mut line = format!("{:<34} {:<28}", spec.entry, format!("{consts:?}"));
                for s in &stats {
                    let n = CStr::from_ptr(s.name.as_ptr()).to_string_lossy();
                    let v = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32 as f64,
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64 as f64,
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64 as f64,
                        _ => s.value.f64,
                    };
                    line += &format!(" | {n}={v}");
                }
                println!("{line}");
                if let Ok(dir) = std::env::var("WGRAD_PROBE_IR") {
                    let info = vk::PipelineExecutableInfoKHR::default()
                        .pipeline(p)
                        .executable_index(idx);
                    dump_ir(&pe, device.handle(), &info, &dir, spec.entry);
                }
            }
        }
    }
}

/// Writes each internal representation the driver offers (names and sizes
/// come from a first call; the text from a second one into buffers of
/// those sizes) to `dir/<entry>.<n>.txt`.
unsafe fn dump_ir(
    pe: &ash::khr::pipeline_executable_properties::Device,
    device: vk::Device,
    info: &vk::PipelineExecutableInfoKHR,
    dir: &str,
    entry: &str,
) {
    unsafe {
        let mut reps = match pe.get_pipeline_executable_internal_representations(info) {
            Ok(r) => r,
            Err(e) => {
                println!("  internal representations: {e:?}");
                return;
            }
        };
        let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, b) in reps.iter_mut().zip(bufs.iter_mut()) {
            r.p_data = b.as_mut_ptr().cast();
        }
        let mut count = reps.len() as u32;
        let res = (pe.fp().get_pipeline_executable_internal_representations_khr)(
            device,
            info,
            &mut count,
            reps.as_mut_ptr(),
        );
        println!("  internal representations: {} ({res:?})", reps.len());
        std::fs::create_dir_all(dir).unwrap();
        for (n, (r, b)) in reps.iter().zip(&bufs).enumerate() {
            let name = CStr::from_ptr(r.name.as_ptr()).to_string_lossy();
            println!(
                "    {n}: {name} ({} bytes, text {})",
                r.data_size, r.is_text
            );
            std::fs::write(format!("{dir}/{entry}.{n}.txt"), b).unwrap();
        }
    }
}

fn expand_disk(dir: &str, path: &str, seen: &mut Vec<String>, out: &mut String) {
    if seen.iter().any(|s| s == path) {
        return;
    }
    seen.push(path.to_string());
    let text = std::fs::read_to_string(format!("{dir}/{path}")).unwrap();
    for line in text.lines() {
        match line.trim_start().strip_prefix("//! include ") {
            Some(inc) => expand_disk(dir, inc.trim(), seen, out),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}
