//! Round 4 of the PyTorch comparison (tests/pytorch_diff/README.md),
//! serialization: files written by PyTorch (`tests/fixtures/pt_*`, from
//! `tests/fixtures/make_serial_fixtures.py`) read by `load_file` and
//! `load`, `load_state_dict(strict=False)`'s missing and unexpected keys,
//! save/load round trips of every dtype on the CPU and the GPU, and
//! corrupt files changing nothing.

use std::path::PathBuf;

use wgrad_autograd::{Device, Error, Tensor};
use wgrad_core::DType;
use wgrad_nn::state_dict::{self, IncompatibleKeys};
use wgrad_nn::{BatchNorm1d, Linear, Module, Sequential};
use wgrad_test_support::gpu;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/fixtures/{name}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serialization_tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn devices() -> Vec<Device> {
    std::iter::once(Device::Cpu).chain(gpu()).collect()
}

fn message<T: std::fmt::Debug>(r: wgrad_core::Result<T>) -> String {
    r.unwrap_err().to_string()
}

fn get<'a>(entries: &'a [(String, Tensor)], name: &str) -> &'a Tensor {
    &entries
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

fn model(d: &Device) -> Sequential {
    Sequential::new()
        .add(Linear::new(2, 3, true, d).unwrap())
        .add(BatchNorm1d::new(3, d).unwrap())
}

fn values(m: &dyn Module) -> Vec<Vec<f32>> {
    m.named_state()
        .iter()
        .map(|(_, t)| t.to_vec_f32().unwrap())
        .collect()
}

/// `safetensors.torch.load_file` of a PyTorch file: wgrad refused the
/// whole file for one int64 or bool tensor, so the `state_dict` of any
/// BatchNorm model (int64 `num_batches_tracked`) could not be read with
/// `load_file`. Now F64, I64 and BOOL load as wgrad's F32, I32 and U32.
#[test]
fn load_file_maps_pytorch_dtypes_wgrad_lacks() {
    for d in devices() {
        let t = state_dict::load_file(fixture("pt_dtypes.safetensors"), &d).unwrap();
        let f64s = get(&t, "f64");
        assert_eq!(f64s.dtype(), DType::F32);
        assert_eq!(f64s.to_vec::<f32>().unwrap(), [1.0, f32::INFINITY, -2.5]);
        let i64s = get(&t, "i64");
        assert_eq!(
            (i64s.dtype(), i64s.shape().to_vec()),
            (DType::I32, vec![2, 2])
        );
        assert_eq!(i64s.to_vec::<i32>().unwrap(), [-5, i32::MAX, i32::MIN, 0]);
        let mask = get(&t, "mask");
        assert_eq!(mask.dtype(), DType::U32);
        assert_eq!(mask.to_vec::<u32>().unwrap(), [1, 0, 1]);
        assert!(mask.to_string().starts_with("tensor([ True, False,  True]"));
        assert_eq!(get(&t, "f16").dtype(), DType::F16);
        assert_eq!(get(&t, "f16").to_vec_f32().unwrap(), [1.5, -65504.0]);
        assert_eq!(get(&t, "bf16").dtype(), DType::BF16);
        assert_eq!(get(&t, "i32").to_vec::<i32>().unwrap(), [7, -7]);
        assert_eq!(get(&t, "scalar").shape().to_vec(), Vec::<usize>::new());
        assert_eq!(get(&t, "scalar").to_vec_f32().unwrap(), [2.5]);
        assert_eq!(get(&t, "empty").shape().to_vec(), [0, 3]);

        let bn = state_dict::load_file(fixture("pt_bn_state.safetensors"), &d).unwrap();
        let tracked = get(&bn, "1.num_batches_tracked");
        assert_eq!(tracked.dtype(), DType::I32);
        assert_eq!(tracked.to_vec::<i32>().unwrap(), [2]);

        let e = message(state_dict::load_file(
            fixture("pt_i64_overflow.safetensors"),
            &d,
        ));
        assert!(e.contains("pt_i64_overflow") && e.contains("'big'"), "{e}");
        assert!(e.contains("does not fit"), "{e}");
        let e = message(state_dict::load_file(fixture("pt_int8.safetensors"), &d));
        assert!(e.contains("'q'") && e.contains("I8"), "{e}");
    }
}

/// `model.load_state_dict(load_file(p))` of PyTorch's file: every tensor,
/// buffers included, with PyTorch's values (printed by the generator).
#[test]
fn a_pytorch_batchnorm_state_dict_loads_into_the_same_model() {
    for d in devices() {
        let m = model(&d);
        state_dict::load(&m, fixture("pt_bn_state.safetensors")).unwrap();
        let got: Vec<(String, Vec<f32>)> = m
            .named_state()
            .into_iter()
            .map(|(n, t)| (n, t.to_vec_f32().unwrap()))
            .collect();
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "0.weight",
                "0.bias",
                "1.weight",
                "1.bias",
                "1.running_mean",
                "1.running_var",
                "1.num_batches_tracked"
            ]
        );
        assert_eq!(got[0].1[..3], [-0.005293981, 0.3793229, -0.58198076]);
        assert_eq!(got[1].1, [-0.014010034, 0.5606575, -0.06275152]);
        assert_eq!(got[4].1, [0.049276307, 0.07834355, 0.03375424]);
        assert_eq!(got[5].1, [0.8327503, 0.8693077, 0.8482155]);
        assert_eq!(got[6].1, [2.0]);
    }
}

/// `load_state_dict(sd, strict=False)` (no such option before): PyTorch's
/// `_IncompatibleKeys(missing_keys=[...], unexpected_keys=[...])` for
/// `nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))` and
/// `{"zz", "0.weight", "aa"}`, except that PyTorch's BatchNorm quietly
/// keeps `num_batches_tracked` when a plain dict lacks it (wgrad lists it).
#[test]
fn non_strict_load_reports_missing_and_unexpected_keys() {
    for d in devices() {
        let m = model(&d);
        let before = values(&m);
        let ones = Tensor::ones(&[3, 2], &d).unwrap();
        let zero = || Tensor::zeros(&[1], &d).unwrap();
        let entries = vec![
            ("zz".to_string(), zero()),
            ("0.weight".to_string(), ones.clone()),
            ("aa".to_string(), zero()),
        ];
        // Strict: an error naming both sides, and nothing changes.
        let e = message(state_dict::load_state_dict_with(&m, &entries, true));
        assert!(e.contains("missing tensor(s): '0.bias'"), "{e}");
        assert!(e.contains("unexpected tensor(s): 'aa', 'zz'"), "{e}");
        assert_eq!(values(&m), before);
        let keys = state_dict::load_state_dict_with(&m, &entries, false).unwrap();
        assert_eq!(
            keys,
            IncompatibleKeys {
                missing_keys: [
                    "0.bias",
                    "1.weight",
                    "1.bias",
                    "1.running_mean",
                    "1.running_var",
                    "1.num_batches_tracked"
                ]
                .map(String::from)
                .to_vec(),
                unexpected_keys: vec!["zz".into(), "aa".into()],
            }
        );
        let after = values(&m);
        assert_eq!(after[0], [1.0; 6], "the named tensor loaded");
        assert_eq!(after[1..], before[1..], "the others kept their values");

        // A shape mismatch is still an error (PyTorch's "size mismatch
        // for 1.weight"), and a failed load changes nothing.
        let bad = vec![
            ("0.weight".to_string(), Tensor::zeros(&[3, 2], &d).unwrap()),
            ("1.weight".to_string(), Tensor::zeros(&[4], &d).unwrap()),
        ];
        let e = message(state_dict::load_state_dict_with(&m, &bad, false));
        assert!(e.contains("'1.weight' has shape [4]"), "{e}");
        assert_eq!(values(&m), after);

        // The same from a file.
        let path = scratch(&format!("non_strict_{}.safetensors", d.is_gpu()));
        state_dict::save_file(&entries, &path).unwrap();
        let fresh = model(&d);
        let keys = state_dict::load_with(&fresh, &path, false).unwrap();
        assert_eq!(keys.missing_keys.len(), 6);
        let mut unexpected = keys.unexpected_keys.clone();
        unexpected.sort();
        assert_eq!(unexpected, ["aa", "zz"]);
        assert_eq!(values(&fresh)[0], [1.0; 6]);
        assert!(state_dict::load_with(&fresh, &path, true).is_err());
    }
}

/// save_file then load_file gives back every dtype bit for bit (NaN, -0,
/// infinities, subnormal halves), 0-d and empty tensors and transposed
/// views, on both devices; PyTorch reads the same file (checked by hand
/// with `safetensors.torch.load_file` when this test was written).
#[test]
fn every_dtype_round_trips_bit_for_bit() {
    use half::{bf16, f16};
    for d in devices() {
        let view = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3], &d)
            .unwrap()
            .t()
            .unwrap();
        let tensors = vec![
            (
                "f32".to_string(),
                Tensor::from_vec(vec![1.5f32, f32::NAN, -0.0, f32::NEG_INFINITY], &[2, 2], &d)
                    .unwrap(),
            ),
            (
                "f16".to_string(),
                Tensor::from_vec(
                    vec![f16::from_f32(1.5), f16::MIN, f16::from_bits(1)],
                    &[3],
                    &d,
                )
                .unwrap(),
            ),
            (
                "bf16".to_string(),
                Tensor::from_vec(vec![bf16::MAX, bf16::from_f32(-0.0)], &[2, 1], &d).unwrap(),
            ),
            (
                "i32".to_string(),
                Tensor::from_vec(vec![i32::MIN, -1, i32::MAX], &[3], &d).unwrap(),
            ),
            (
                "mask".to_string(),
                Tensor::from_vec(vec![1u32, 0], &[2], &d).unwrap(),
            ),
            (
                "scalar".to_string(),
                Tensor::full(&[], 2.0, DType::F32, &d).unwrap(),
            ),
            ("empty".to_string(), Tensor::zeros(&[0, 3], &d).unwrap()),
            ("view".to_string(), view),
        ];
        let path = scratch(&format!("round_trip_{}.safetensors", d.is_gpu()));
        state_dict::save_file(&tensors, &path).unwrap();
        let back = state_dict::load_file(&path, &d).unwrap();
        assert_eq!(back.len(), tensors.len());
        for (name, want) in &tensors {
            let got = get(&back, name);
            assert_eq!(got.shape(), want.shape(), "{name}");
            assert_eq!(got.dtype(), want.dtype(), "{name}");
            let bits = |t: &Tensor| -> Vec<u32> {
                match t.dtype() {
                    DType::F16 => t
                        .to_vec::<f16>()
                        .unwrap()
                        .iter()
                        .map(|v| u32::from(v.to_bits()))
                        .collect(),
                    DType::BF16 => t
                        .to_vec::<bf16>()
                        .unwrap()
                        .iter()
                        .map(|v| u32::from(v.to_bits()))
                        .collect(),
                    DType::F32 => t
                        .to_vec::<f32>()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect(),
                    DType::I32 => t
                        .to_vec::<i32>()
                        .unwrap()
                        .iter()
                        .map(|&v| v as u32)
                        .collect(),
                    DType::U32 => t.to_vec::<u32>().unwrap(),
                }
            };
            assert_eq!(bits(got), bits(want), "{name} on {d}");
        }
    }
}

/// A truncated or corrupted file is an error naming the file, and the
/// model keeps its values.
#[test]
fn corrupt_files_are_errors_that_change_nothing() {
    for d in devices() {
        let m = model(&d);
        let good = scratch(&format!("good_{}.safetensors", d.is_gpu()));
        state_dict::save(&m, &good).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let other = model(&d);
        let before = values(&other);
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut bad_json = bytes.clone();
        bad_json[8] = b'x';
        for (label, data) in [
            ("truncated", bytes[..bytes.len() - 4].to_vec()),
            ("header only", bytes[..20].to_vec()),
            ("empty", Vec::new()),
            ("huge header", huge),
            ("bad json", bad_json),
        ] {
            let path = scratch(&format!("bad_{}.safetensors", d.is_gpu()));
            std::fs::write(&path, &data).unwrap();
            for e in [
                message(state_dict::load(&other, &path)),
                message(state_dict::load_with(&other, &path, false)),
                message(state_dict::load_file(&path, &d)),
            ] {
                assert!(e.contains("not a valid safetensors file"), "{label}: {e}");
                assert!(e.contains("bad_"), "{label}: names the file: {e}");
            }
            assert_eq!(values(&other), before, "{label}");
        }
        assert!(matches!(
            state_dict::load(&other, scratch("missing.safetensors")),
            Err(Error::InvalidArgument { .. } | Error::Io { .. })
        ));
    }
}
