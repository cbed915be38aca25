//! `wgrad::autograd::grad`, `Embedding` with `padding_idx`, and
//! `ModuleList`/`ModuleDict`, against PyTorch (`tests/fixtures/misc.safetensors`,
//! written by `make_misc_fixtures.py`) on the CPU and the GPU, plus their
//! errors and the properties PyTorch documents (no `.grad` touched, the
//! padding row unchanged by optimizers, insertion order, mode propagation).

use crate::common::{Fixture, array, check_close, gpu};
use wgrad::autograd::{GradOptions, grad};
use wgrad::nn::{
    BatchNorm1d, Embedding, LayerNorm, Linear, Module, ModuleDict, ModuleList, ReLU, embedding,
    prefixed, state_dict,
};
use wgrad::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use wgrad::{Device, Tensor};

const TOL: f32 = 1e-5;

fn close(what: &str, got: &Tensor, fx: &Fixture, key: &str) {
    let want = fx.f32(key);
    assert_eq!(got.shape(), want.shape, "{what}: shape");
    let got = got.to_vec_f32().expect("readback");
    if let Err(msg) = check_close(what, &got, &want.data, TOL) {
        panic!("{msg}");
    }
}

fn leaf(fx: &Fixture, key: &str, device: &Device) -> Tensor {
    fx.tensor_f32(key, device)
        .with_requires_grad(true)
        .expect("requires_grad")
}

// ------------------------------------------------------------ grad ----

/// The forward of `make_misc_fixtures.graph`: (h, y1, y2).
fn graph(x: &Tensor, w: &Tensor, b: &Tensor) -> wgrad::Result<(Tensor, Tensor, Tensor)> {
    let h = x.matmul(w)?.add(b)?.tanh()?;
    let s = h.softmax(-1)?;
    let y1 = s.mul(&h)?.sum(&[1], false)?;
    let y2 = h.pow_scalar(2.0)?.mean_all()?;
    Ok((h, y1, y2))
}

fn check_grad(device: &Device) {
    let fx = Fixture::load("misc.safetensors");
    let (x, w, b, u) = (
        leaf(&fx, "grad.x", device),
        leaf(&fx, "grad.w", device),
        leaf(&fx, "grad.b", device),
        leaf(&fx, "grad.u", device),
    );
    let (v1, v2) = (
        fx.tensor_f32("grad.v1", device),
        fx.tensor_f32("grad.v2", device),
    );
    let (h, y1, y2) = graph(&x, &w, &b).expect("forward");
    close("y1", &y1, &fx, "grad.y1");
    close("y2", &y2, &fx, "grad.y2");
    let retain = GradOptions {
        retain_graph: true,
        ..Default::default()
    };
    let grads = grad(&[&y1, &y2], &[&w, &x, &h], Some(&[&v1, &v2]), retain).expect("grad");
    let names = ["dw", "dx", "dh"];
    for (g, name) in grads.iter().zip(names) {
        let g = g.as_ref().unwrap_or_else(|| panic!("{name}: None"));
        close(name, g, &fx, &format!("grad.{name}"));
    }
    // Nothing was accumulated anywhere.
    for t in [&x, &w, &b] {
        assert!(t.grad().is_none(), "grad() touched a .grad");
    }

    // Implicit ones for a scalar output; an unused input gives None.
    let allow = GradOptions {
        allow_unused: true,
        ..Default::default()
    };
    let grads = grad(&[&y2], &[&b, &u], None, allow).expect("grad allow_unused");
    close("y2_db", grads[0].as_ref().expect("db"), &fx, "grad.y2_db");
    assert!(grads[1].is_none(), "unused input must give None");

    // That call freed the nodes it walked (retain_graph false): y2's path.
    let err = grad(&[&y2], &[&b], None, GradOptions::default())
        .expect_err("second walk through a freed graph");
    assert!(err.to_string().contains("second time"), "{err}");
    // y1's own nodes (softmax, mul, sum) were not walked by it... but they
    // share h's nodes, which were freed, so y1 fails too: as in PyTorch.
    assert!(grad(&[&y1], &[&w], Some(&[&v1]), GradOptions::default()).is_err());
}

#[test]
fn grad_matches_pytorch_on_cpu() {
    check_grad(&Device::Cpu);
}

#[test]
fn grad_matches_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    check_grad(&device);
}

/// `grad` gives what `backward` accumulates, and leaves existing `.grad`s
/// alone.
#[test]
fn grad_agrees_with_backward_and_keeps_existing_grads() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        let fx = Fixture::load("misc.safetensors");
        let (x, w, b) = (
            leaf(&fx, "grad.x", device),
            leaf(&fx, "grad.w", device),
            leaf(&fx, "grad.b", device),
        );
        let (_, _, y2) = graph(&x, &w, &b).expect("forward");
        let retain = GradOptions {
            retain_graph: true,
            ..Default::default()
        };
        let g = grad(&[&y2], &[&x, &w, &b, &x], None, retain).expect("grad");
        assert_eq!(g.len(), 4);
        y2.backward().expect("backward");
        for (got, t) in g.iter().zip([&x, &w, &b, &x]) {
            let got = got.as_ref().expect("used").to_vec_f32().expect("read");
            let want = t.grad().expect("backward grad").to_vec_f32().expect("read");
            assert_eq!(got, want);
        }
        // A later grad() does not add into the .grad backward left.
        let before = w.grad().expect("grad").to_vec_f32().expect("read");
        let (_, _, y2) = graph(&x, &w, &b).expect("forward");
        grad(&[&y2], &[&w], None, GradOptions::default()).expect("grad");
        assert_eq!(w.grad().expect("grad").to_vec_f32().expect("read"), before);
    }
}

#[test]
fn grad_errors_name_the_problem() {
    let device = Device::Cpu;
    let x = Tensor::ones(&[3], &device)
        .expect("ones")
        .with_requires_grad(true)
        .expect("rg");
    let unused = Tensor::ones(&[2], &device)
        .expect("ones")
        .with_requires_grad(true)
        .expect("rg");
    let plain = Tensor::ones(&[3], &device).expect("ones");
    let y = x.mul_scalar(2.0).expect("mul");
    let s = y.sum_all().expect("sum");
    let d = GradOptions {
        retain_graph: true,
        ..Default::default()
    };
    let msg = |r: wgrad::Result<Vec<Option<Tensor>>>| r.expect_err("an error").to_string();

    let m = msg(grad(&[&s], &[&x, &unused], None, d));
    assert!(m.contains("input 1") && m.contains("allow_unused"), "{m}");
    let m = msg(grad(
        &[&s],
        &[&x],
        None,
        GradOptions {
            create_graph: true,
            ..d
        },
    ));
    assert!(m.contains("create_graph"), "{m}");
    let m = msg(grad(&[&s], &[&plain], None, d));
    assert!(
        m.contains("input 0") && m.contains("does not require grad"),
        "{m}"
    );
    let m = msg(grad(&[&plain], &[&x], None, d));
    assert!(m.contains("element 0 of outputs"), "{m}");
    let m = msg(grad(&[&y], &[&x], None, d));
    assert!(m.contains("scalar outputs") && m.contains("[3]"), "{m}");
    let wrong = Tensor::ones(&[2], &device).expect("ones");
    let m = msg(grad(&[&y], &[&x], Some(&[&wrong]), d));
    assert!(m.contains("grad_outputs[0]") && m.contains("[2]"), "{m}");
    let m = msg(grad(&[&y, &s], &[&x], Some(&[&wrong]), d));
    assert!(m.contains("1 tensors but there are 2 outputs"), "{m}");
    assert!(msg(grad(&[], &[&x], None, d)).contains("non-empty outputs"));
    assert!(msg(grad(&[&s], &[], None, d)).contains("non-empty inputs"));

    // An output that is also an input: its gradient is the seed; an
    // intermediate input below another input adds both paths.
    let z = y.mul(&y).expect("mul").sum_all().expect("sum");
    let g = grad(&[&z], &[&y, &x, &z], None, d).expect("grad");
    let read = |i: usize| g[i].as_ref().expect("used").to_vec_f32().expect("read");
    assert_eq!(read(0), vec![4.0; 3]); // 2y
    assert_eq!(read(1), vec![8.0; 3]); // 2y * 2
    assert_eq!(read(2), vec![1.0]);
}

// ------------------------------------------------------- embedding ----

fn check_embedding(device: &Device) {
    let fx = Fixture::load("misc.safetensors");
    for case in array(&fx.meta, "embedding") {
        let name = case["name"].as_str().expect("name");
        let padding_idx = case["padding_idx"].as_i64().expect("padding_idx") as isize;
        let row = case["row"].as_u64().expect("row") as usize;
        let key = |k: &str| format!("{name}.{k}");
        let weight = leaf(&fx, &key("weight"), device);
        let initial = weight.to_vec_f32().expect("read");
        let emb = Embedding::from_weight_with_padding_idx(weight.clone(), padding_idx)
            .expect("Embedding");
        assert_eq!(emb.padding_idx(), Some(row));
        let indices = fx.tensor_i32(&key("indices"), device);
        let upstream = fx.tensor_f32(&key("upstream"), device);
        let out = emb.forward(&indices).expect("forward");
        close(&format!("{name} out"), &out, &fx, &key("out"));
        out.mul(&upstream)
            .and_then(|t| t.sum_all())
            .and_then(|l| l.backward())
            .expect("backward");
        let g = weight.grad().expect("weight grad");
        close(&format!("{name} grad"), &g, &fx, &key("grad"));
        let dim = emb.embedding_dim();
        assert!(
            g.to_vec_f32().expect("read")[row * dim..(row + 1) * dim]
                .iter()
                .all(|&v| v == 0.0)
        );

        // The functional form: the same output and gradient.
        let w2 = leaf(&fx, &key("weight"), device);
        let out2 = embedding(&indices, &w2, Some(padding_idx)).expect("embedding");
        close(&format!("{name} functional out"), &out2, &fx, &key("out"));
        let g2 = grad(&[&out2], &[&w2], Some(&[&upstream]), GradOptions::default()).expect("grad");
        close(
            &format!("{name} functional grad"),
            g2[0].as_ref().expect("grad"),
            &fx,
            &key("grad"),
        );

        // 3 Adam steps: PyTorch's trajectory, the padding row bit for bit unchanged.
        weight.zero_grad();
        let lr = case["adam_lr"].as_f64().expect("lr");
        let mut adam = Adam::new(
            vec![weight.clone()],
            AdamConfig {
                lr,
                ..Default::default()
            },
        )
        .expect("Adam");
        for _ in 0..case["adam_steps"].as_u64().expect("steps") {
            weight.zero_grad();
            emb.forward(&indices)
                .and_then(|o| o.mul(&upstream))
                .and_then(|t| t.sum_all())
                .and_then(|l| l.backward())
                .expect("step backward");
            adam.step().expect("step");
        }
        close(&format!("{name} adam"), &weight, &fx, &key("adam3"));
        let after = weight.to_vec_f32().expect("read");
        assert_eq!(
            after[row * dim..(row + 1) * dim],
            initial[row * dim..(row + 1) * dim],
            "{name}: Adam moved the padding row"
        );
    }
}

#[test]
fn embedding_padding_idx_matches_pytorch_on_cpu() {
    check_embedding(&Device::Cpu);
}

#[test]
fn embedding_padding_idx_matches_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    check_embedding(&device);
}

/// `nn.Embedding(num, dim, padding_idx)`: the row starts at zero and stays
/// there under SGD with momentum; bad indices are errors naming them.
#[test]
fn embedding_padding_row_is_zero_and_stays() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        let emb = Embedding::new_with_padding_idx(6, 3, -1, device).expect("Embedding");
        assert_eq!(emb.padding_idx(), Some(5));
        let w = emb.weight.to_vec_f32().expect("read");
        assert!(w[15..].iter().all(|&v| v == 0.0), "{w:?}");
        assert!(w[..15].iter().all(|&v| v != 0.0), "{w:?}");
        let mut sgd = Sgd::new(
            emb.parameters(),
            SgdConfig {
                momentum: 0.9,
                ..SgdConfig::new(0.5)
            },
        )
        .expect("Sgd");
        let idx = Tensor::from_vec(vec![5i32, 1, 5, 0, 5], &[5], device).expect("idx");
        for _ in 0..3 {
            emb.zero_grad();
            emb.forward(&idx)
                .and_then(|o| o.sum_all())
                .and_then(|l| l.backward())
                .expect("backward");
            sgd.step().expect("step");
        }
        let after = emb.weight.to_vec_f32().expect("read");
        assert!(after[15..].iter().all(|&v| v == 0.0), "{after:?}");
        assert_ne!(after[3..6], w[3..6], "row 1 trained");
        // Empty indices and no-grad lookups work too.
        let empty = Tensor::from_vec(Vec::<i32>::new(), &[0, 2], device).expect("empty");
        assert_eq!(emb.forward(&empty).expect("empty").shape(), [0, 2, 3]);
        let _guard = wgrad::no_grad();
        assert_eq!(emb.forward(&idx).expect("no_grad").shape(), [5, 3]);
    }
    for bad in [6isize, -7, 100] {
        let err = Embedding::new_with_padding_idx(6, 3, bad, &Device::Cpu)
            .err()
            .expect("out of range");
        assert!(
            err.to_string().contains(&format!("padding_idx {bad}")),
            "{err}"
        );
    }
    let w = Tensor::ones(&[4, 2], &Device::Cpu).expect("w");
    let idx = Tensor::from_vec(vec![0i32], &[1], &Device::Cpu).expect("idx");
    assert!(embedding(&idx, &w, Some(4)).is_err());
    assert!(embedding(&idx, &w, Some(-4)).is_ok());
}

// ------------------------------------------------------ containers ----

/// `make_misc_fixtures.Net`: fields `emb`, `layers` (a ModuleList) and
/// `heads` (a ModuleDict).
struct Net {
    emb: Embedding,
    layers: ModuleList,
    heads: ModuleDict,
}

impl Net {
    fn new(device: &Device) -> Net {
        let mut layers = ModuleList::new();
        layers
            .append(Linear::new(4, 8, true, device).expect("Linear"))
            .append(ReLU::new())
            .append(Linear::new(8, 4, true, device).expect("Linear"));
        let mut heads = ModuleDict::new();
        for (key, module) in [
            (
                "policy",
                Box::new(Linear::new(4, 3, true, device).expect("Linear")) as Box<dyn Module>,
            ),
            (
                "norm",
                Box::new(LayerNorm::new(&[4], 1e-5, true, device).expect("LayerNorm")),
            ),
            ("bn", Box::new(BatchNorm1d::new(4, device).expect("bn"))),
            (
                "value",
                Box::new(Linear::new(4, 1, false, device).expect("Linear")),
            ),
        ] {
            assert!(heads.insert_boxed(key, module).expect("insert").is_none());
        }
        Net {
            emb: Embedding::new_with_padding_idx(10, 4, 0, device).expect("Embedding"),
            layers,
            heads,
        }
    }

    fn children(&self) -> [(&str, &dyn Module); 3] {
        [
            ("emb", &self.emb),
            ("layers", &self.layers),
            ("heads", &self.heads),
        ]
    }
}

impl Module for Net {
    fn forward(&self, idx: &Tensor) -> wgrad::Result<Tensor> {
        let mut h = self.emb.forward(idx)?;
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        let norm = self.heads.get("norm").expect("norm");
        let policy = self.heads.get("policy").expect("policy");
        policy.forward(&norm.forward(&h)?)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.children()
            .into_iter()
            .flat_map(|(n, m)| prefixed(n, m.named_parameters()))
            .collect()
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.children()
            .into_iter()
            .flat_map(|(n, m)| prefixed(n, m.named_buffers()))
            .collect()
    }
    fn named_state(&self) -> Vec<(String, Tensor)> {
        self.children()
            .into_iter()
            .flat_map(|(n, m)| prefixed(n, m.named_state()))
            .collect()
    }
    fn train(&mut self, on: bool) {
        self.emb.train(on);
        self.layers.train(on);
        self.heads.train(on);
    }
    fn is_training(&self) -> bool {
        self.layers.is_training()
    }
    fn to_device(&mut self, device: &Device) -> wgrad::Result<()> {
        self.emb.to_device(device)?;
        self.layers.to_device(device)?;
        self.heads.to_device(device)
    }
}

fn check_model(device: &Device) {
    let fx = Fixture::load("misc.safetensors");
    let model = &fx.meta["model"];
    let torch_keys: Vec<String> = array(model, "state_dict_keys")
        .iter()
        .map(|k| k.as_str().expect("key").to_string())
        .collect();
    let net = Net::new(device);
    let keys: Vec<String> = net.named_state().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, torch_keys, "state_dict keys and order");

    let entries: Vec<(String, Tensor)> = torch_keys
        .iter()
        .map(|k| (k.clone(), fx.tensor(&format!("model.sd.{k}"), device)))
        .collect();
    state_dict::load_state_dict(&net, &entries).expect("load_state_dict");
    let idx = fx.tensor_i32("model.input", device);
    let out = net.forward(&idx).expect("forward");
    close("model out", &out, &fx, "model.out");
    let upstream = fx.tensor_f32("model.upstream", device);
    out.mul(&upstream)
        .and_then(|t| t.sum_all())
        .and_then(|l| l.backward())
        .expect("backward");
    let params = net.named_parameters();
    for name in array(model, "grads") {
        let name = name.as_str().expect("name");
        let (_, p) = params
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no parameter {name}"));
        let g = p.grad().unwrap_or_else(|| panic!("{name}: no grad"));
        close(
            &format!("grad of {name}"),
            &g,
            &fx,
            &format!("model.grad.{name}"),
        );
    }

    // A safetensors round trip into a fresh model.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("misc_containers");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join(format!("net_{}.safetensors", device.is_gpu()));
    state_dict::save(&net, &path).expect("save");
    let fresh = Net::new(device);
    state_dict::load(&fresh, &path).expect("load");
    for ((k, a), (_, b)) in net.named_state().iter().zip(fresh.named_state()) {
        if a.dtype() == wgrad::DType::F32 {
            assert_eq!(
                a.to_vec_f32().expect("read"),
                b.to_vec_f32().expect("read"),
                "{k}"
            );
        }
    }
    close(
        "reloaded out",
        &fresh.forward(&idx).expect("forward"),
        &fx,
        "model.out",
    );
}

#[test]
fn module_list_and_dict_match_pytorch_on_cpu() {
    check_model(&Device::Cpu);
}

#[test]
fn module_list_and_dict_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    check_model(&device);
}

#[test]
fn containers_behave_like_pytorch() {
    let device = Device::Cpu;
    let mut net = Net::new(&device);
    let x = Tensor::ones(&[2, 4], &device).expect("x");

    // No forward of their own.
    let err = net.layers.forward(&x).expect_err("ModuleList forward");
    assert!(err.to_string().contains("ModuleList"), "{err}");
    let err = net.heads.forward(&x).expect_err("ModuleDict forward");
    assert!(err.to_string().contains("ModuleDict"), "{err}");

    // Indexing, iteration, lengths.
    assert_eq!(net.layers.len(), 3);
    assert_eq!(net.layers[0].named_parameters()[0].0, "weight");
    assert_eq!(net.layers.iter().count(), 3);
    assert!(net.layers.get(3).is_none());
    assert_eq!(
        net.heads.keys().collect::<Vec<_>>(),
        ["policy", "norm", "bn", "value"]
    );
    assert!(net.heads.contains_key("bn") && !net.heads.contains_key("nope"));

    // train/eval reach every child.
    net.eval();
    assert!(!net.layers.is_training() && !net.heads.is_training());
    assert!(!net.heads.get("bn").expect("bn").is_training());
    assert!(net.layers.iter().all(|m| !m.is_training()));
    net.train(true);
    assert!(net.heads.get("bn").expect("bn").is_training());

    // Replacing keeps the key's place; removing keeps the others' order.
    let old = net
        .heads
        .insert("policy", Linear::new(4, 5, true, &device).expect("Linear"))
        .expect("insert");
    assert!(old.is_some());
    assert_eq!(net.heads.keys().next(), Some("policy"));
    assert_eq!(net.heads.named_parameters()[0].1.shape(), [5, 4]);
    assert!(net.heads.remove("norm").is_some());
    assert_eq!(
        net.heads.keys().collect::<Vec<_>>(),
        ["policy", "bn", "value"]
    );
    for bad in ["a.b", ""] {
        let err = net.heads.insert(bad, ReLU::new()).err().expect("bad key");
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }

    // insert with a negative index, as Python's list.insert.
    net.layers.insert(-1, ReLU::new()).expect("insert");
    let names: Vec<String> = net
        .layers
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.weight", "0.bias", "3.weight", "3.bias"]);
    assert!(net.layers.insert(9, ReLU::new()).is_err());

    // A shared (tied) module's parameters are listed once.
    let shared = Linear::new(2, 2, false, &device).expect("Linear");
    let tied = Linear::from_parameters(shared.weight.clone(), None);
    let list: ModuleList = vec![
        Box::new(shared) as Box<dyn Module>,
        Box::new(tied) as Box<dyn Module>,
    ]
    .into_iter()
    .collect();
    assert_eq!(list.named_parameters().len(), 1);
}

/// Moving a model with containers to the GPU moves every child; the
/// moved model computes what the CPU one does.
#[test]
fn containers_move_to_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let fx = Fixture::load("misc.safetensors");
    let mut net = Net::new(&Device::Cpu);
    let entries: Vec<(String, Tensor)> = net
        .named_state()
        .into_iter()
        .map(|(k, _)| {
            let t = fx.tensor(&format!("model.sd.{k}"), &Device::Cpu);
            (k, t)
        })
        .collect();
    state_dict::load_state_dict(&net, &entries).expect("load");
    net.to_device(&gpu).expect("to_device");
    assert!(net.named_state().iter().all(|(_, t)| t.device().is_gpu()));
    let idx = fx.tensor_i32("model.input", &gpu);
    close(
        "moved model out",
        &net.forward(&idx).expect("forward"),
        &fx,
        "model.out",
    );
}
