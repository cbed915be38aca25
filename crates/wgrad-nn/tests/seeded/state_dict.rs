//! `state_dict`: safetensors files with PyTorch's names, strict and
//! all-or-nothing loading with errors that name the file and the tensor, the
//! in-memory equivalents, and interchange with PyTorch through the fixtures
//! written by `tests/fixtures/torch_roundtrip.py` (no Python needed here).

use std::path::{Path, PathBuf};
use wgrad_test_support::{gpu, seed_lock};

use safetensors::Dtype;
use safetensors::tensor::TensorView;
use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
use wgrad_autograd::{Device, Error, Tensor, manual_seed};
use wgrad_nn::{Linear, Module, ReLU, Sequential, state_dict};

/// An MLP `sizes[0] -> ... -> sizes[n]` with ReLUs between the layers (at
/// odd indices, as torch's `nn.Sequential` in the fixture script), drawn
/// from `seed`.
fn mlp(sizes: &[usize], seed: u64, device: &Device) -> Sequential {
    let _guard = seed_lock();
    manual_seed(seed);
    let mut model = Sequential::new();
    for (i, pair) in sizes.windows(2).enumerate() {
        if i > 0 {
            model.push(ReLU::new());
        }
        model.push(Linear::new(pair[0], pair[1], true, device).unwrap());
    }
    model
}

/// A fresh path under the integration-test scratch directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("state_dict_tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Every parameter's bits, by name.
fn bits(model: &dyn Module) -> Vec<(String, Vec<u32>)> {
    model
        .named_parameters()
        .into_iter()
        .map(|(n, p)| {
            let v = p.to_vec_f32().unwrap();
            (n, v.iter().map(|x| x.to_bits()).collect())
        })
        .collect()
}

/// The message of an `InvalidArgument` from `op` (panics on anything else).
fn invalid(result: wgrad_core::Result<()>, op: &str) -> String {
    match result {
        Err(Error::InvalidArgument { op: got, message }) => {
            assert_eq!(got, op, "wrong op in error: {message}");
            message
        }
        other => panic!("expected InvalidArgument from {op}, got {other:?}"),
    }
}

/// One Adam step on a squared-output loss: moves every parameter.
fn train_step(model: &Sequential, opt: &mut Adam, device: &Device) {
    let x = Tensor::rand_with(&[3, model_in(model)], -1.0, 1.0, 7, device).unwrap();
    let loss = model
        .forward(&x)
        .unwrap()
        .square()
        .unwrap()
        .mean_all()
        .unwrap();
    opt.zero_grad();
    loss.backward().unwrap();
    opt.step().unwrap();
}

fn model_in(model: &Sequential) -> usize {
    model.named_parameters()[0].1.shape()[1]
}

fn write_raw(path: &Path, tensors: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)>) {
    let views: Vec<(&str, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (*n, TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

fn f32_bytes(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| (i as f32 * 0.25).to_le_bytes())
        .collect()
}

#[test]
fn save_then_load_restores_every_parameter_bit_for_bit() {
    let device = Device::Cpu;
    let a = mlp(&[5, 7, 3], 1, &device);
    let b = mlp(&[5, 7, 3], 2, &device);
    assert_ne!(bits(&a), bits(&b));
    let path = scratch("roundtrip.safetensors");
    state_dict::save(&a, &path).unwrap();
    state_dict::load(&b, &path).unwrap();
    assert_eq!(bits(&a), bits(&b));
    let x = Tensor::rand_with(&[4, 5], -1.0, 1.0, 3, &device).unwrap();
    assert_eq!(
        a.forward(&x).unwrap().to_vec_f32().unwrap(),
        b.forward(&x).unwrap().to_vec_f32().unwrap()
    );
}

#[test]
fn file_holds_f32_tensors_under_pytorch_names() {
    let model = mlp(&[4, 6, 2], 3, &Device::Cpu);
    let path = scratch("layout.safetensors");
    state_dict::save(&model, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    assert_eq!(
        meta.metadata()
            .as_ref()
            .and_then(|m| m.get("format"))
            .map(String::as_str),
        Some("pt")
    );
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names = file.names();
    names.sort();
    assert_eq!(names, ["0.bias", "0.weight", "2.bias", "2.weight"]);
    let w = file.tensor("2.weight").unwrap();
    assert_eq!((w.dtype(), w.shape()), (Dtype::F32, &[2usize, 6][..]));
    let want: Vec<u8> = model.named_parameters()[2]
        .1
        .to_vec_f32()
        .unwrap()
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(w.data(), &want[..]);
}

/// The message of an `Error::Io` from `op`, after checking that its
/// `source()` is the operating system's error.
fn io_error(result: wgrad_core::Result<()>, op: &str) -> String {
    let err = result.expect_err("expected an I/O error");
    let Error::Io { op: got, .. } = &err else {
        panic!("expected Error::Io from {op}, got {err:?}");
    };
    assert_eq!(*got, op, "wrong op in error: {err}");
    let source = std::error::Error::source(&err).expect("Error::Io has a source");
    assert!(
        source.downcast_ref::<std::io::Error>().is_some(),
        "{source:?}"
    );
    err.to_string()
}

/// The message of an `Error::Serialization` from `op`, after checking that
/// its `source()` is the safetensors crate's error.
fn corrupt(result: wgrad_core::Result<()>, op: &str) -> String {
    let err = result.expect_err("expected a corrupt-file error");
    let Error::Serialization { op: got, .. } = &err else {
        panic!("expected Error::Serialization from {op}, got {err:?}");
    };
    assert_eq!(*got, op, "wrong op in error: {err}");
    let source = std::error::Error::source(&err).expect("Error::Serialization has a source");
    assert!(
        source
            .downcast_ref::<safetensors::SafeTensorError>()
            .is_some(),
        "{source:?}"
    );
    err.to_string()
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let model = mlp(&[2, 2], 0, &Device::Cpu);
    let path = scratch("does_not_exist.safetensors");
    let msg = io_error(state_dict::load(&model, &path), "load");
    assert!(msg.contains("does_not_exist.safetensors"), "{msg}");
    assert!(msg.contains("cannot read"), "{msg}");
    let Err(Error::Io {
        path: named,
        source,
        ..
    }) = state_dict::load(&model, &path)
    else {
        panic!("expected Error::Io");
    };
    assert_eq!(named, path);
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn truncated_file_is_rejected() {
    let model = mlp(&[3, 4], 0, &Device::Cpu);
    let path = scratch("truncated.safetensors");
    state_dict::save(&model, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let before = bits(&model);
    // Cut inside the data, inside the header, and inside the length word.
    for keep in [bytes.len() - 5, 20, 5] {
        std::fs::write(&path, &bytes[..keep]).unwrap();
        let msg = corrupt(state_dict::load(&model, &path), "load");
        assert!(msg.contains("truncated.safetensors"), "{msg}");
        assert!(msg.contains("not a valid safetensors file"), "{msg}");
    }
    assert_eq!(bits(&model), before, "a failed load changed the model");
}

#[test]
fn corrupted_header_is_rejected() {
    let model = mlp(&[3, 4], 0, &Device::Cpu);
    let path = scratch("corrupted.safetensors");
    state_dict::save(&model, &path).unwrap();
    let clean = std::fs::read(&path).unwrap();
    // Garbage in the JSON.
    let mut bytes = clean.clone();
    bytes[8] = b'#';
    std::fs::write(&path, &bytes).unwrap();
    let msg = corrupt(state_dict::load(&model, &path), "load");
    assert!(
        msg.contains("corrupted.safetensors") && msg.contains("JSON"),
        "{msg}"
    );
    // A header length pointing past the end of the file.
    let mut bytes = clean.clone();
    bytes[..8].copy_from_slice(&(clean.len() as u64 * 2).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let msg = corrupt(state_dict::load(&model, &path), "load");
    assert!(msg.contains("not a valid safetensors file"), "{msg}");
    // Offsets that disagree with the shape.
    let mut bytes = clean.clone();
    let at = bytes
        .windows(5)
        .position(|w| w == b"[4,3]")
        .expect("the weight's shape in the header");
    bytes[at + 3] = b'4';
    std::fs::write(&path, &bytes).unwrap();
    let msg = corrupt(state_dict::load(&model, &path), "load");
    assert!(msg.contains("not a valid safetensors file"), "{msg}");
}

#[test]
fn missing_tensors_are_named() {
    let small = mlp(&[3, 4], 0, &Device::Cpu);
    let big = mlp(&[3, 4, 2], 0, &Device::Cpu);
    let path = scratch("missing.safetensors");
    state_dict::save(&small, &path).unwrap();
    let msg = invalid(state_dict::load(&big, &path), "load");
    assert!(msg.contains("missing.safetensors"), "{msg}");
    assert!(
        msg.contains("missing tensor(s): '2.weight', '2.bias'"),
        "{msg}"
    );
}

#[test]
fn extra_tensors_are_named() {
    let small = mlp(&[3, 4], 0, &Device::Cpu);
    let big = mlp(&[3, 4, 2], 0, &Device::Cpu);
    let path = scratch("extra.safetensors");
    state_dict::save(&big, &path).unwrap();
    let msg = invalid(state_dict::load(&small, &path), "load");
    assert!(msg.contains("extra.safetensors"), "{msg}");
    assert!(
        msg.contains("unexpected tensor(s): '2.bias', '2.weight'"),
        "{msg}"
    );
}

#[test]
fn wrong_shape_names_the_tensor_and_both_shapes() {
    let saved = mlp(&[3, 8], 0, &Device::Cpu);
    let model = mlp(&[3, 6], 0, &Device::Cpu);
    let path = scratch("shape.safetensors");
    state_dict::save(&saved, &path).unwrap();
    let msg = invalid(state_dict::load(&model, &path), "load");
    assert!(msg.contains("shape.safetensors"), "{msg}");
    assert!(
        msg.contains("tensor '0.weight' has shape [8, 3], the parameter has shape [6, 3]"),
        "{msg}"
    );
    assert!(
        msg.contains("tensor '0.bias' has shape [8], the parameter has shape [6]"),
        "{msg}"
    );
}

/// Little-endian bytes of 16-bit words.
fn u16_bytes(words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Bits of the loaded parameters, NaNs made canonical (the conversion must
/// keep NaN a NaN; its payload is not part of the contract).
fn canonical_bits(values: &[f32]) -> Vec<u32> {
    values
        .iter()
        .map(|x| {
            if x.is_nan() {
                f32::NAN.to_bits()
            } else {
                x.to_bits()
            }
        })
        .collect()
}

/// F16, BF16 and F64 tensors load into F32 parameters converted as
/// PyTorch's `param.copy_(t)` converts them: F16 and BF16 exactly
/// (subnormals, infinities, NaN), F64 rounded to nearest, overflowing to
/// infinity. Expected values are written out as f32 bits.
fn half_and_double_tensors_load_converted_to_f32(device: &Device) {
    let model = mlp(&[2, 3, 2], 0, device);
    let path = scratch(&format!("converted_{}.safetensors", device.is_gpu()));
    // 0.weight [3, 2] as F16.
    let f16_words = [
        0x3C00, // 1.0
        0xC100, // -2.5
        0x7BFF, // 65504, the largest finite
        0x0001, // 2^-24, the smallest subnormal
        0xFC00, // -inf
        0x7E00, // NaN
    ];
    let f16_want = [
        0x3F80_0000,
        0xC020_0000,
        0x477F_E000,
        0x3380_0000,
        0xFF80_0000,
        f32::NAN.to_bits(),
    ];
    // 0.bias [3] as BF16: the high half of the f32 bits.
    let bf16_words = [
        0x3FC0, /* 1.5 */
        0x8001, /* -2^-133, subnormal */
        0x7F80, /* inf */
    ];
    let bf16_want = [0x3FC0_0000, 0x8001_0000, 0x7F80_0000];
    // 2.weight [2, 3] as F64.
    let f64_values = [
        0.1,                                    // rounds to 0.1f32
        1.0 + f64::powi(2.0, -24),              // a tie: to even, 1.0
        1.0 + 3.0 * f64::powi(2.0, -24),        // a tie: to even, 1 + 2^-22
        1e300,                                  // overflows to inf
        -1e-50,                                 // underflows to -0.0
        f64::from(f32::from_bits(0x0000_0001)), // the smallest f32 subnormal
    ];
    let f64_want = [
        0.1f32.to_bits(),
        0x3F80_0000,
        0x3F80_0002,
        0x7F80_0000,
        0x8000_0000,
        0x0000_0001,
    ];
    // 2.bias [2] as F64 NaN and F32 would not mix; keep it F32.
    write_raw(
        &path,
        vec![
            ("0.weight", Dtype::F16, vec![3, 2], u16_bytes(&f16_words)),
            ("0.bias", Dtype::BF16, vec![3], u16_bytes(&bf16_words)),
            (
                "2.weight",
                Dtype::F64,
                vec![2, 3],
                f64_values.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            ("2.bias", Dtype::F32, vec![2], f32_bytes(2)),
        ],
    );
    state_dict::load(&model, &path).unwrap();
    let params = model.named_parameters();
    let got = |i: usize| canonical_bits(&params[i].1.to_vec_f32().unwrap());
    assert_eq!(params[0].0, "0.weight");
    assert_eq!(got(0), f16_want, "F16");
    assert_eq!(got(1), bf16_want, "BF16");
    assert_eq!(got(2), f64_want, "F64");
    assert_eq!(got(3), [0.0f32.to_bits(), 0.25f32.to_bits()]);
    for (_, p) in &params {
        assert_eq!(p.dtype(), wgrad_core::DType::F32);
        assert_eq!(p.device().is_gpu(), device.is_gpu());
    }
}

#[test]
fn half_and_double_tensors_load_converted_to_f32_cpu() {
    half_and_double_tensors_load_converted_to_f32(&Device::Cpu);
}

#[test]
fn half_and_double_tensors_load_converted_to_f32_gpu() {
    if let Some(device) = gpu() {
        half_and_double_tensors_load_converted_to_f32(&device);
    }
}

/// Every F16 bit pattern widens to the f32 with the same value (NaNs stay
/// NaN), checked against a decoding written out from the IEEE definition.
#[test]
fn every_f16_value_loads_exactly() {
    let words: Vec<u16> = (0..=u16::MAX).collect();
    let model = {
        let _seed = seed_lock();
        Sequential::new().add(Linear::new(1, words.len(), false, &Device::Cpu).unwrap())
    };
    let path = scratch("all_f16.safetensors");
    write_raw(
        &path,
        vec![(
            "0.weight",
            Dtype::F16,
            vec![words.len(), 1],
            u16_bytes(&words),
        )],
    );
    state_dict::load(&model, &path).unwrap();
    let got = model.parameters()[0].to_vec_f32().unwrap();
    for (&w, &g) in words.iter().zip(&got) {
        let sign = if w & 0x8000 != 0 { -1.0f64 } else { 1.0 };
        let (exp, frac) = (i32::from((w >> 10) & 0x1F), f64::from(w & 0x3FF));
        let want = match exp {
            0 => sign * frac * f64::powi(2.0, -24),
            31 if frac == 0.0 => sign * f64::INFINITY,
            31 => f64::NAN,
            _ => sign * (1.0 + frac / 1024.0) * f64::powi(2.0, exp - 15),
        };
        if want.is_nan() {
            assert!(g.is_nan(), "{w:#06x} gave {g}");
        } else {
            assert_eq!(g.to_bits(), (want as f32).to_bits(), "{w:#06x}");
        }
    }
}

#[test]
fn unconvertible_dtypes_name_the_tensor_and_both_dtypes() {
    let model = mlp(&[2, 3], 0, &Device::Cpu);
    let before = bits(&model);
    let path = scratch("dtype.safetensors");
    for (dtype, width) in [
        (Dtype::I8, 1),
        (Dtype::U8, 1),
        (Dtype::BOOL, 1),
        (Dtype::F8_E4M3, 1),
        (Dtype::I16, 2),
        (Dtype::I32, 4),
        (Dtype::U32, 4),
        (Dtype::I64, 8),
    ] {
        // The other tensor converts: the load still fails as a whole.
        write_raw(
            &path,
            vec![
                ("0.weight", dtype, vec![3, 2], vec![1; 6 * width]),
                ("0.bias", Dtype::F16, vec![3], u16_bytes(&[0x3C00; 3])),
            ],
        );
        let msg = invalid(state_dict::load(&model, &path), "load");
        assert!(msg.contains("dtype.safetensors"), "{msg}");
        let want = format!(
            "tensor '0.weight' has dtype {dtype}, expected F32 (float32) like its parameter \
             (F64, F32, F16, BF16 convert to float32, {dtype} does not)"
        );
        assert!(msg.contains(&want), "{want:?} not in {msg}");
        assert!(!msg.contains("'0.bias'"), "{msg}");
        assert_eq!(
            bits(&model),
            before,
            "a failed {dtype} load changed the model"
        );
    }
    // A converted tensor's shape is still checked.
    write_raw(
        &path,
        vec![
            ("0.weight", Dtype::BF16, vec![2, 3], vec![0; 12]),
            ("0.bias", Dtype::F64, vec![3], vec![0; 24]),
        ],
    );
    let msg = invalid(state_dict::load(&model, &path), "load");
    assert!(
        msg.contains("tensor '0.weight' has shape [2, 3], the parameter has shape [3, 2]"),
        "{msg}"
    );
    assert_eq!(bits(&model), before);
}

#[test]
fn every_problem_is_reported_at_once() {
    let model = mlp(&[2, 3, 4], 0, &Device::Cpu);
    let path = scratch("many.safetensors");
    write_raw(
        &path,
        vec![
            ("0.weight", Dtype::F32, vec![2, 3], f32_bytes(6)),
            ("0.bias", Dtype::F32, vec![3], f32_bytes(3)),
            ("2.weight", Dtype::F32, vec![4, 3], f32_bytes(12)),
            ("4.weight", Dtype::F32, vec![1], f32_bytes(1)),
        ],
    );
    let msg = invalid(state_dict::load(&model, &path), "load");
    for part in [
        "missing tensor(s): '2.bias'",
        "unexpected tensor(s): '4.weight'",
        "tensor '0.weight' has shape [2, 3], the parameter has shape [3, 2]",
    ] {
        assert!(msg.contains(part), "{part:?} not in {msg}");
    }
}

/// A file that is right except for its last tensor must not change any
/// parameter, even the ones before it.
fn failed_load_leaves_model_unchanged(device: &Device) {
    let model = mlp(&[4, 5, 3], 11, device);
    let other = mlp(&[4, 5, 3], 12, &Device::Cpu);
    let before = bits(&model);
    let path = scratch(&format!("partial_{}.safetensors", device.is_gpu()));
    let mut tensors: Vec<(String, Tensor)> = other.named_parameters();
    let last = tensors.len() - 1;
    tensors[last].1 = Tensor::zeros(&[4], &Device::Cpu).unwrap(); // `2.bias` is [3]
    state_dict::save_file(&tensors, &path).unwrap();
    let msg = invalid(state_dict::load(&model, &path), "load");
    assert!(msg.contains("'2.bias'"), "{msg}");
    assert_eq!(bits(&model), before, "a failed load changed parameters");
    // The in-memory path too.
    let msg = invalid(
        state_dict::load_state_dict(&model, &tensors),
        "load_state_dict",
    );
    assert!(msg.contains("'2.bias'"), "{msg}");
    assert_eq!(
        bits(&model),
        before,
        "a failed load_state_dict changed parameters"
    );
    // And the same file fixed loads.
    tensors[last].1 = Tensor::zeros(&[3], &Device::Cpu).unwrap();
    state_dict::save_file(&tensors, &path).unwrap();
    state_dict::load(&model, &path).unwrap();
    assert_ne!(bits(&model), before);
}

#[test]
fn failed_load_leaves_model_unchanged_cpu() {
    failed_load_leaves_model_unchanged(&Device::Cpu);
}

#[test]
fn failed_load_leaves_model_unchanged_gpu() {
    let Some(device) = gpu() else { return };
    failed_load_leaves_model_unchanged(&device);
}

#[test]
fn gpu_parameters_save_and_load_across_devices() {
    let Some(device) = gpu() else { return };
    let on_gpu = mlp(&[6, 5, 2], 21, &device);
    let on_cpu = mlp(&[6, 5, 2], 22, &Device::Cpu);
    let path = scratch("from_gpu.safetensors");
    state_dict::save(&on_gpu, &path).unwrap();
    state_dict::load(&on_cpu, &path).unwrap();
    assert_eq!(bits(&on_cpu), bits(&on_gpu));
    // CPU -> file -> GPU, and the loaded parameters stay on the GPU.
    let fresh_cpu = mlp(&[6, 5, 2], 23, &Device::Cpu);
    state_dict::save(&fresh_cpu, &path).unwrap();
    state_dict::load(&on_gpu, &path).unwrap();
    assert_eq!(bits(&on_gpu), bits(&fresh_cpu));
    assert!(on_gpu.parameters().iter().all(|p| p.device().is_gpu()));
    // The optimizer built before the load trains the loaded values.
    let mut opt = Adam::new(on_gpu.parameters(), AdamConfig::default()).unwrap();
    train_step(&on_gpu, &mut opt, &device);
    assert_ne!(bits(&on_gpu), bits(&fresh_cpu));
}

/// `state_dict` is a snapshot and `load_state_dict` copies: training after
/// either changes neither the snapshot nor the entries loaded from (a real
/// risk on the GPU, where optimizer steps write parameter buffers in place).
fn in_memory_roundtrip(device: &Device) {
    let model = mlp(&[4, 6, 2], 31, device);
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    let snapshot = state_dict::state_dict(&model).unwrap();
    let names: Vec<&str> = snapshot.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    let before = bits(&model);
    let snapshot_bits = |sd: &[(String, Tensor)]| -> Vec<(String, Vec<u32>)> {
        sd.iter()
            .map(|(n, t)| {
                let v = t.to_vec_f32().unwrap();
                (n.clone(), v.iter().map(|x| x.to_bits()).collect())
            })
            .collect()
    };
    assert_eq!(snapshot_bits(&snapshot), before);
    train_step(&model, &mut opt, device);
    assert_ne!(bits(&model), before);
    assert_eq!(
        snapshot_bits(&snapshot),
        before,
        "the snapshot followed training"
    );
    state_dict::load_state_dict(&model, &snapshot).unwrap();
    assert_eq!(bits(&model), before);
    train_step(&model, &mut opt, device);
    assert_eq!(
        snapshot_bits(&snapshot),
        before,
        "training wrote into the loaded-from entries"
    );
}

#[test]
fn in_memory_state_dict_roundtrip_cpu() {
    in_memory_roundtrip(&Device::Cpu);
}

#[test]
fn in_memory_state_dict_roundtrip_gpu() {
    let Some(device) = gpu() else { return };
    in_memory_roundtrip(&device);
    // Entries from the other device load too.
    let model = mlp(&[4, 6, 2], 32, &device);
    let cpu_entries = state_dict::state_dict(&mlp(&[4, 6, 2], 33, &Device::Cpu)).unwrap();
    state_dict::load_state_dict(&model, &cpu_entries).unwrap();
    assert!(model.parameters().iter().all(|p| p.device().is_gpu()));
}

#[test]
fn in_memory_load_errors_name_the_tensors() {
    let model = mlp(&[2, 3], 0, &Device::Cpu);
    let mut entries = state_dict::state_dict(&model).unwrap();
    entries.push((
        "9.weight".to_string(),
        Tensor::zeros(&[1], &Device::Cpu).unwrap(),
    ));
    entries[1].1 = Tensor::from_vec(vec![1i32, 2, 3], &[3], &Device::Cpu).unwrap();
    entries.remove(0);
    let msg = invalid(
        state_dict::load_state_dict(&model, &entries),
        "load_state_dict",
    );
    for part in [
        "missing tensor(s): '0.weight'",
        "unexpected tensor(s): '9.weight'",
        "tensor '0.bias' has dtype int32, expected F32",
    ] {
        assert!(msg.contains(part), "{part:?} not in {msg}");
    }
}

#[test]
fn save_file_and_load_file_keep_names_dtypes_and_values() {
    let device = Device::Cpu;
    let path = scratch("tensors.safetensors");
    let tensors = vec![
        (
            "x".to_string(),
            Tensor::from_vec(vec![1.5f32, -2.0, 0.0, 7.25], &[2, 2], &device).unwrap(),
        ),
        (
            "labels".to_string(),
            Tensor::from_vec(vec![3i32, -1, 4], &[3], &device).unwrap(),
        ),
        ("scalar".to_string(), Tensor::scalar(0.5, &device).unwrap()),
    ];
    state_dict::save_file(&tensors, &path).unwrap();
    let back = state_dict::load_file(&path, &device).unwrap();
    assert_eq!(back.len(), 3);
    for (name, t) in &tensors {
        let (_, got) = back.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!((got.shape(), got.dtype()), (t.shape(), t.dtype()), "{name}");
    }
    let (_, labels) = back.iter().find(|(n, _)| n == "labels").unwrap();
    assert_eq!(labels.to_vec::<i32>().unwrap(), [3, -1, 4]);
    // Duplicate names are refused rather than silently dropping one.
    let dup = vec![tensors[0].clone(), tensors[0].clone()];
    let msg = invalid(state_dict::save_file(&dup, &path), "save");
    assert!(msg.contains("'x' appears twice"), "{msg}");
}

// ---- PyTorch interchange ----

/// The fixture's model: torch `nn.Sequential(Linear(16, 32), ReLU(),
/// Linear(32, 32), ReLU(), Linear(32, 4))`.
const TORCH_SIZES: [usize; 4] = [16, 32, 32, 4];

fn torch_io(device: &Device) -> (Tensor, Vec<f32>) {
    let io = state_dict::load_file(fixture("torch_mlp_io.safetensors"), device).unwrap();
    let get = |name: &str| io.iter().find(|(n, _)| n == name).unwrap().1.clone();
    (get("input"), get("output").to_vec_f32().unwrap())
}

fn torch_fixture_matches_pytorch(device: &Device) {
    let model = mlp(&TORCH_SIZES, 41, device);
    state_dict::load(&model, fixture("torch_mlp.safetensors")).unwrap();
    let (x, want) = torch_io(device);
    assert_eq!(x.shape(), [8, 16]);
    let got = model.forward(&x).unwrap().to_vec_f32().unwrap();
    assert_eq!(got.len(), want.len());
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "wgrad vs PyTorch outputs differ by {worst}");
}

#[test]
fn pytorch_saved_state_dict_loads_and_matches_pytorch_cpu() {
    torch_fixture_matches_pytorch(&Device::Cpu);
}

#[test]
fn pytorch_saved_state_dict_loads_and_matches_pytorch_gpu() {
    let Some(device) = gpu() else { return };
    torch_fixture_matches_pytorch(&device);
}

/// Writes a wgrad-trained MLP and its output on the fixture's input for the
/// PyTorch side to check (`torch_roundtrip.py --check FILE --io IO_FILE`);
/// the Rust side checks the file re-loads exactly.
#[test]
fn writes_a_state_dict_for_pytorch() {
    let device = Device::Cpu;
    let model = mlp(&TORCH_SIZES, 42, &device);
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    train_step(&model, &mut opt, &device);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("torch_roundtrip");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wgrad_mlp.safetensors");
    let io_path = dir.join("wgrad_mlp_io.safetensors");
    state_dict::save(&model, &path).unwrap();
    let (x, _) = torch_io(&device);
    let y = model.forward(&x).unwrap().detach();
    state_dict::save_file(
        &[("input".to_string(), x), ("output".to_string(), y)],
        &io_path,
    )
    .unwrap();
    let reloaded = mlp(&TORCH_SIZES, 43, &device);
    state_dict::load(&reloaded, &path).unwrap();
    assert_eq!(bits(&reloaded), bits(&model));
    eprintln!(
        "check with PyTorch: python tests/fixtures/torch_roundtrip.py --check {} --io {}",
        path.display(),
        io_path.display()
    );
}
