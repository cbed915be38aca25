//! `coop_probe`: can WGSL reach the tensor cores? Lists the adapter's
//! cooperative-matrix configurations (wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`,
//! Vulkan's `VK_KHR_cooperative_matrix`) and times square matmuls written
//! with `coop_mat16x16<f16>` tiles and f32 accumulators, for several block
//! and subgroup tile shapes.
//!
//! This is the measurement behind the f16/tensor-core issue's first step
//! (docs/BENCHMARKS.md, "Tensor cores from WGSL"), kept so the figures can be
//! reproduced and the next kernel started from it; wgrad's matmul does not
//! use these kernels yet. Inputs are f16 buffers, or f32 buffers rounded to
//! f16 while they are staged in workgroup memory (what an autocast matmul
//! over f32 storage would do). Sizes must be multiples of the block shape.
//!
//! ```text
//! cargo build --release -p wgrad-bench --bin coop_probe
//! coop_probe [N ...]        # default: 1024 4096
//! ```

use std::time::Instant;

use anyhow::{Context, anyhow};
use wgpu::util::DeviceExt;

/// One kernel variant: a `block_m x block_n` output block per workgroup,
/// split into `warp_m x warp_n` blocks, one per subgroup of 32 lanes; K is
/// staged `block_k` at a time, double-buffered when `double_buffer`.
#[derive(Clone, Copy, Debug)]
struct TileConfig {
    f16_inputs: bool,
    block_m: u32,
    block_n: u32,
    warp_m: u32,
    warp_n: u32,
    block_k: u32,
    double_buffer: bool,
}

impl TileConfig {
    fn threads(&self) -> u32 {
        (self.block_m / self.warp_m) * (self.block_n / self.warp_n) * 32
    }

    fn label(&self) -> String {
        format!(
            "{} in, block {}x{}, subgroup {}x{}, k {}{}",
            if self.f16_inputs { "f16" } else { "f32" },
            self.block_m,
            self.block_n,
            self.warp_m,
            self.warp_n,
            self.block_k,
            if self.double_buffer { ", 2 stages" } else { "" }
        )
    }
}

/// The variants timed on the H100 (2026-11-24); the first is the fastest.
const CONFIGS: &[TileConfig] = &[
    cfg(true, 128, 256, 64, 64, 32, false),
    cfg(true, 128, 256, 32, 128, 32, false),
    cfg(true, 256, 128, 64, 64, 32, false),
    cfg(true, 128, 256, 64, 64, 16, true),
    cfg(true, 128, 128, 32, 64, 32, true),
    cfg(false, 128, 256, 64, 64, 32, false),
    cfg(false, 128, 256, 64, 64, 16, true),
    cfg(false, 128, 128, 32, 64, 32, false),
];

const fn cfg(
    f16_inputs: bool,
    block_m: u32,
    block_n: u32,
    warp_m: u32,
    warp_n: u32,
    block_k: u32,
    double_buffer: bool,
) -> TileConfig {
    TileConfig {
        f16_inputs,
        block_m,
        block_n,
        warp_m,
        warp_n,
        block_k,
        double_buffer,
    }
}

/// The WGSL of one variant. Row-major A [M, K], B [K, N], C [M, N]; each
/// thread stages vec4s of A and B through registers into padded f16 tiles
/// (8 extra columns against bank conflicts), and each subgroup multiplies
/// its fragments with `coopMultiplyAdd`.
fn kernel_source(c: &TileConfig) -> String {
    let threads = c.threads();
    let subgroups_n = c.block_n / c.warp_n;
    let (frags_m, frags_n) = (c.warp_m / 16, c.warp_n / 16);
    let a_stride = c.block_k + 8;
    let b_stride = c.block_n + 8;
    let a_tile = c.block_m * a_stride;
    let b_tile = c.block_k * b_stride;
    let stages = if c.double_buffer { 2 } else { 1 };
    let elem = if c.f16_inputs {
        "vec4<f16>"
    } else {
        "vec4<f32>"
    };
    let a_per_thread = c.block_m * c.block_k / 4 / threads;
    let b_per_thread = c.block_k * c.block_n / 4 / threads;
    let (bk4, bn4) = (c.block_k / 4, c.block_n / 4);
    let mut s = format!(
        "enable f16;\nenable wgpu_cooperative_matrix;\n\
         @group(0) @binding(0) var<storage, read> a: array<{elem}>;\n\
         @group(0) @binding(1) var<storage, read> b: array<{elem}>;\n\
         @group(0) @binding(2) var<storage, read_write> c: array<f32>;\n\
         struct Dims {{ m: u32, n: u32, k: u32, pad: u32 }}\n\
         @group(0) @binding(3) var<uniform> dims: Dims;\n\
         var<workgroup> a_sh: array<f16, {}>;\n\
         var<workgroup> b_sh: array<f16, {}>;\n\
         @compute @workgroup_size({threads})\n\
         fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,\n\
         @builtin(subgroup_id) sg: u32) {{\n\
         let m0 = wg.y * {}u; let n0 = wg.x * {}u;\n\
         let sm = sg / {subgroups_n}u; let sn = sg % {subgroups_n}u;\n\
         let K = dims.k; let N = dims.n;\n",
        stages * a_tile,
        stages * b_tile,
        c.block_m,
        c.block_n,
    );
    for i in 0..frags_m {
        for j in 0..frags_n {
            s += &format!("var acc{i}_{j} = coop_mat16x16<f32, C>();\n");
        }
    }
    for q in 0..a_per_thread {
        s += &format!("var ra{q}: {elem};\n");
    }
    for q in 0..b_per_thread {
        s += &format!("var rb{q}: {elem};\n");
    }
    let load = |s: &mut String, k0: &str| {
        for q in 0..a_per_thread {
            *s += &format!(
                "{{ let i = lid + {}u; let r = i / {bk4}u; let c4 = i % {bk4}u; \
                 ra{q} = a[((m0 + r) * K + {k0}) / 4u + c4]; }}\n",
                q * threads
            );
        }
        for q in 0..b_per_thread {
            *s += &format!(
                "{{ let i = lid + {}u; let r = i / {bn4}u; let c4 = i % {bn4}u; \
                 rb{q} = b[(({k0} + r) * N + n0) / 4u + c4]; }}\n",
                q * threads
            );
        }
    };
    let store = |s: &mut String, stage: &str| {
        let halves = |tile: &str, o: &str, v: &str| {
            format!(
                "{tile}[{o}] = f16({v}.x); {tile}[{o} + 1u] = f16({v}.y); \
                 {tile}[{o} + 2u] = f16({v}.z); {tile}[{o} + 3u] = f16({v}.w);"
            )
        };
        for q in 0..a_per_thread {
            *s += &format!(
                "{{ let i = lid + {}u; let r = i / {bk4}u; let c4 = i % {bk4}u; \
                 let o = {stage} * {a_tile}u + r * {a_stride}u + c4 * 4u; {} }}\n",
                q * threads,
                halves("a_sh", "o", &format!("ra{q}"))
            );
        }
        for q in 0..b_per_thread {
            *s += &format!(
                "{{ let i = lid + {}u; let r = i / {bn4}u; let c4 = i % {bn4}u; \
                 let o = {stage} * {b_tile}u + r * {b_stride}u + c4 * 4u; {} }}\n",
                q * threads,
                halves("b_sh", "o", &format!("rb{q}"))
            );
        }
    };
    let multiply = |s: &mut String, stage: &str| {
        *s += &format!("for (var kk = 0u; kk < {}u; kk += 16u) {{\n", c.block_k);
        for i in 0..frags_m {
            *s += &format!(
                "let ia{i} = {stage} * {a_tile}u + (sm * {}u + {}u) * {a_stride}u + kk;\n\
                 let fa{i} = coopLoadT<coop_mat16x16<f16, A>>(&a_sh[ia{i}], {a_stride}u);\n",
                c.warp_m,
                i * 16
            );
        }
        for j in 0..frags_n {
            *s += &format!(
                "let ib{j} = {stage} * {b_tile}u + kk * {b_stride}u + sn * {}u + {}u;\n\
                 let fb{j} = coopLoadT<coop_mat16x16<f16, B>>(&b_sh[ib{j}], {b_stride}u);\n",
                c.warp_n,
                j * 16
            );
        }
        for i in 0..frags_m {
            for j in 0..frags_n {
                *s += &format!("acc{i}_{j} = coopMultiplyAdd(fa{i}, fb{j}, acc{i}_{j});\n");
            }
        }
        *s += "}\n";
    };
    if c.double_buffer {
        load(&mut s, "0u");
        store(&mut s, "0u");
        s += &format!(
            "workgroupBarrier();\nlet nt = K / {bk}u;\n\
             for (var t = 0u; t < nt; t += 1u) {{\n\
             let cur = t % 2u; let nxt = 1u - cur; let more = t + 1u < nt; let k1 = (t + 1u) * {bk}u;\n\
             if (more) {{\n",
            bk = c.block_k
        );
        load(&mut s, "k1");
        s += "}\n";
        multiply(&mut s, "cur");
        s += "if (more) {\n";
        store(&mut s, "nxt");
        s += "}\nworkgroupBarrier();\n}\n";
    } else {
        s += &format!("for (var k0 = 0u; k0 < K; k0 += {}u) {{\n", c.block_k);
        load(&mut s, "k0");
        store(&mut s, "0u");
        s += "workgroupBarrier();\n";
        multiply(&mut s, "0u");
        s += "workgroupBarrier();\n}\n";
    }
    for i in 0..frags_m {
        for j in 0..frags_n {
            s += &format!(
                "coopStoreT(acc{i}_{j}, &c[(m0 + sm * {}u + {}u) * N + n0 + sn * {}u + {}u], N);\n",
                c.warp_m,
                i * 16,
                c.warp_n,
                j * 16
            );
        }
    }
    s += "}\n";
    s
}

/// A deterministic pseudo-random matrix in [-1, 1) (no constants or zeros:
/// a kernel that skips work must show up in the error).
fn matrix(rows: u32, cols: u32, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..rows as usize * cols as usize)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .with_context(|| format!("sizes are integers, not {a:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    let sizes = if sizes.is_empty() {
        vec![1024, 4096]
    } else {
        sizes
    };

    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let adapter = adapters
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("no GPU adapter"))?;
    let info = adapter.get_info();
    println!(
        "adapter: {} ({:?}, {} {})",
        info.name, info.backend, info.driver, info.driver_info
    );
    for p in adapter.cooperative_matrix_properties() {
        println!(
            "cooperative matrix: {}x{}x{} {:?} -> {:?}",
            p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type
        );
    }
    let needed = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SHADER_F16
        | wgpu::Features::SUBGROUP;
    if !adapter.features().contains(needed) {
        println!("the adapter lacks cooperative matrices, f16 or subgroups: nothing to time");
        return Ok(());
    }
    let adapter_limits = adapter.limits();
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: adapter_limits.max_storage_buffer_binding_size,
        max_buffer_size: adapter_limits.max_buffer_size,
        max_compute_invocations_per_workgroup: 1024,
        max_compute_workgroup_size_x: 1024,
        max_compute_workgroup_storage_size: adapter_limits.max_compute_workgroup_storage_size,
        ..wgpu::Limits::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("coop_probe"),
        required_features: needed,
        required_limits: limits,
        // SAFETY: the cooperative-matrix feature is experimental in wgpu 30;
        // this probe accepts that (it is not part of the library).
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    }))
    .context("request_device")?;

    for &n in &sizes {
        run_size(&device, &queue, n)?;
    }
    Ok(())
}

fn run_size(device: &wgpu::Device, queue: &wgpu::Queue, n: u32) -> anyhow::Result<()> {
    let a = matrix(n, n, 1 + n as u64);
    let b = matrix(n, n, 2 + n as u64);
    let a16: Vec<u16> = a
        .iter()
        .map(|&x| half::f16::from_f32(x).to_bits())
        .collect();
    let b16: Vec<u16> = b
        .iter()
        .map(|&x| half::f16::from_f32(x).to_bits())
        .collect();
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let init = |contents: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents,
            usage,
        })
    };
    let (a32_buf, b32_buf) = (
        init(bytemuck::cast_slice(&a), usage),
        init(bytemuck::cast_slice(&b), usage),
    );
    let (a16_buf, b16_buf) = (
        init(bytemuck::cast_slice(&a16), usage),
        init(bytemuck::cast_slice(&b16), usage),
    );
    let bytes = (n as u64) * (n as u64) * 4;
    let poison = vec![f32::NAN; (n * n) as usize];
    let c_buf = init(
        bytemuck::cast_slice(&poison),
        usage | wgpu::BufferUsages::COPY_DST,
    );
    let dims = init(
        bytemuck::cast_slice(&[n, n, n, 0u32]),
        wgpu::BufferUsages::UNIFORM,
    );
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });

    for config in CONFIGS {
        if [config.block_m, config.block_n, config.block_k]
            .iter()
            .any(|&b| !n.is_multiple_of(b))
        {
            continue;
        }
        queue.write_buffer(&c_buf, 0, bytemuck::cast_slice(&poison));
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(kernel_source(config).into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            println!("n={n} {}: rejected: {e}", config.label());
            continue;
        }
        let (a_buf, b_buf) = if config.f16_inputs {
            (&a16_buf, &b16_buf)
        } else {
            (&a32_buf, &b32_buf)
        };
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: a_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: b_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: c_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: dims.as_entire_binding(),
                },
            ],
        });
        let run = |iters: u32| {
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                for _ in 0..iters {
                    pass.dispatch_workgroups(n / config.block_n, n / config.block_m, 1);
                }
            }
            queue.submit([encoder.finish()]);
            device
                .poll(wgpu::PollType::wait_indefinitely())
                .context("poll")
        };
        run(2)?;
        let iters = if n >= 2048 { 20 } else { 50 };
        let start = Instant::now();
        run(iters)?;
        let seconds = start.elapsed().as_secs_f64() / iters as f64;
        let tflops = 2.0 * (n as f64).powi(3) / seconds / 1e12;

        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&c_buf, 0, &readback, 0, bytes);
        queue.submit([encoder.finish()]);
        readback.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .context("poll")?;
        let mapped = readback.slice(..).get_mapped_range().context("mapped")?;
        let out: Vec<f32> = bytemuck::cast_slice(&mapped).to_vec();
        drop(mapped);
        readback.unmap();
        // Relative error over 256 sampled entries against an f64 product of
        // the f16-rounded inputs (the exact answer for f16 operands).
        let (mut err2, mut ref2) = (0f64, 0f64);
        for s in 0..256u32 {
            let (i, j) = ((s * 977 + 3) % n, (s * 331 + 17) % n);
            let exact: f64 = (0..n)
                .map(|k| {
                    half::f16::from_bits(a16[(i * n + k) as usize]).to_f64()
                        * half::f16::from_bits(b16[(k * n + j) as usize]).to_f64()
                })
                .sum();
            err2 += (exact - out[(i * n + j) as usize] as f64).powi(2);
            ref2 += exact * exact;
        }
        println!(
            "n={n} {}: {:.3} ms, {:.1} TFLOP/s, relative error {:.1e}",
            config.label(),
            seconds * 1e3,
            tflops,
            (err2 / ref2).sqrt()
        );
    }
    Ok(())
}
