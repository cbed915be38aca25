//! Shared helpers of the PyTorch fixture tests: loading the ground truth
//! written by `tests/fixtures/make_fixtures.py`, turning it into wgrad
//! tensors and comparing results (GPU selection and the relative error come
//! from `wgrad-test-support`).

use safetensors::{Dtype, SafeTensors};
use serde_json::Value;
use wgrad::{Device, Tensor};
pub use wgrad_test_support::{gpu, max_rel_err};

/// One fixture file: its tensors by name and its `fixture` metadata (JSON).
pub struct Fixture {
    tensors: SafeTensors<'static>,
    /// The JSON object stored under the metadata key `fixture`.
    pub meta: Value,
}

/// Host data of one stored tensor.
pub struct HostTensor<T> {
    pub data: Vec<T>,
    pub shape: Vec<usize>,
}

impl Fixture {
    /// Loads `tests/fixtures/<file>` from the repository root.
    pub fn load(file: &str) -> Fixture {
        let path = format!("{}/../../tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("can't read {path} ({e}); run python3 tests/fixtures/make_fixtures.py")
        });
        // Tests load each file a few times at most, so leaking the bytes
        // (to borrow them for 'static) costs nothing that matters.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        let (_, metadata) = SafeTensors::read_metadata(bytes).expect("safetensors header");
        let text = metadata
            .metadata()
            .as_ref()
            .and_then(|m| m.get("fixture"))
            .unwrap_or_else(|| panic!("{file}: no `fixture` metadata"));
        let meta = serde_json::from_str(text).expect("fixture metadata is JSON");
        let tensors = SafeTensors::deserialize(bytes).expect("safetensors file");
        Fixture { tensors, meta }
    }

    /// Whether a tensor named `name` is stored.
    pub fn has(&self, name: &str) -> bool {
        self.tensors.tensor(name).is_ok()
    }

    /// The names of every stored tensor.
    pub fn names(&self) -> Vec<String> {
        self.tensors
            .names()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The 4-byte words of a stored tensor of `dtype`, and its shape.
    fn words(&self, name: &str, dtype: Dtype) -> (Vec<[u8; 4]>, Vec<usize>) {
        let view = self
            .tensors
            .tensor(name)
            .unwrap_or_else(|e| panic!("fixture tensor {name}: {e}"));
        assert_eq!(view.dtype(), dtype, "fixture tensor {name} dtype");
        let words = view
            .data()
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        (words, view.shape().to_vec())
    }

    /// A stored F32 tensor.
    pub fn f32(&self, name: &str) -> HostTensor<f32> {
        let (words, shape) = self.words(name, Dtype::F32);
        HostTensor {
            data: words.into_iter().map(f32::from_le_bytes).collect(),
            shape,
        }
    }

    /// A stored I32 tensor.
    pub fn i32(&self, name: &str) -> HostTensor<i32> {
        let (words, shape) = self.words(name, Dtype::I32);
        HostTensor {
            data: words.into_iter().map(i32::from_le_bytes).collect(),
            shape,
        }
    }

    /// A stored F64 tensor.
    pub fn f64(&self, name: &str) -> HostTensor<f64> {
        let view = self
            .tensors
            .tensor(name)
            .unwrap_or_else(|e| panic!("fixture tensor {name}: {e}"));
        assert_eq!(view.dtype(), Dtype::F64, "fixture tensor {name} dtype");
        HostTensor {
            data: view
                .data()
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
            shape: view.shape().to_vec(),
        }
    }

    /// A stored F32 tensor as a wgrad tensor on `device` (no grad).
    pub fn tensor_f32(&self, name: &str, device: &Device) -> Tensor {
        let t = self.f32(name);
        Tensor::from_vec(t.data, &t.shape, device).expect("from_vec f32")
    }

    /// A stored I32 tensor as a wgrad I32 tensor on `device`.
    pub fn tensor_i32(&self, name: &str, device: &Device) -> Tensor {
        let t = self.i32(name);
        Tensor::from_vec(t.data, &t.shape, device).expect("from_vec i32")
    }

    /// A stored F16 or BF16 tensor as a wgrad tensor of that dtype on `device`.
    pub fn tensor_half(&self, name: &str, device: &Device) -> Tensor {
        let view = self
            .tensors
            .tensor(name)
            .unwrap_or_else(|e| panic!("fixture tensor {name}: {e}"));
        let shape = view.shape().to_vec();
        let halves = view.data().chunks_exact(2).map(|c| [c[0], c[1]]);
        match view.dtype() {
            Dtype::F16 => {
                let data: Vec<half::f16> = halves.map(half::f16::from_le_bytes).collect();
                Tensor::from_vec(data, &shape, device).expect("from_vec f16")
            }
            Dtype::BF16 => {
                let data: Vec<half::bf16> = halves.map(half::bf16::from_le_bytes).collect();
                Tensor::from_vec(data, &shape, device).expect("from_vec bf16")
            }
            other => panic!("fixture tensor {name}: {other:?} is not a 16-bit float"),
        }
    }

    /// A stored F32 or I32 tensor as a wgrad tensor of the same dtype.
    pub fn tensor(&self, name: &str, device: &Device) -> Tensor {
        let view = self
            .tensors
            .tensor(name)
            .unwrap_or_else(|e| panic!("fixture tensor {name}: {e}"));
        match view.dtype() {
            Dtype::F32 => self.tensor_f32(name, device),
            Dtype::I32 => self.tensor_i32(name, device),
            other => panic!("fixture tensor {name}: unexpected dtype {other:?}"),
        }
    }
}

/// `meta[key]` as a JSON array (panics with the key when it is not one).
pub fn array<'a>(meta: &'a Value, key: &str) -> &'a Vec<Value> {
    meta[key]
        .as_array()
        .unwrap_or_else(|| panic!("fixture metadata: `{key}` is not a list"))
}

/// `Ok` when `got` matches `want` (same length, max relative error within
/// `tol`), else a message naming `what` with the worst element.
pub fn check_close(what: &str, got: &[f32], want: &[f32], tol: f32) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} values, PyTorch has {}",
            got.len(),
            want.len()
        ));
    }
    let err = max_rel_err(got, want);
    if err <= tol {
        return Ok(());
    }
    let (i, _) = got
        .iter()
        .zip(want)
        .enumerate()
        .map(|(i, (g, w))| (i, max_rel_err(&[*g], &[*w])))
        .fold(
            (0, -1.0f32),
            |best, cur| if cur.1 > best.1 { cur } else { best },
        );
    Err(format!(
        "{what}: max relative error {err:e} > {tol:e} (element {i}: wgrad {} vs PyTorch {})\n  wgrad:   {got:?}\n  PyTorch: {want:?}",
        got[i], want[i]
    ))
}

/// Panics listing every failure, if any (so one run reports them all).
pub fn report(what: &str, checked: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{what}: {} of {checked} disagree with PyTorch:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{what}: {checked} checked against PyTorch, all within tolerance");
}
