//! `#[derive(Module)]`: names of nested structs, lists and optional
//! children, buffers, train/eval, to_device, tied weights, generics and a
//! custom forward method, through the trait's methods only.

use wgrad_autograd::{DType, Device, Tensor};
use wgrad_core::Result;
use wgrad_nn::{BatchNorm1d, Dropout, LayerNorm, Linear, Module, ModuleList, ReLU};

const CPU: Device = Device::Cpu;

fn names(named: Vec<(String, Tensor)>) -> Vec<String> {
    named.into_iter().map(|(n, _)| n).collect()
}

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, &CPU).unwrap()
}

#[derive(Module)]
struct Block {
    fc: Linear,
    norm: LayerNorm,
    act: ReLU,
    drop: Dropout,
}

impl Block {
    fn new(dim: usize) -> Result<Self> {
        Ok(Block {
            fc: Linear::new(dim, dim, true, &CPU)?,
            norm: LayerNorm::new(&[dim], 1e-5, true, &CPU)?,
            act: ReLU::new(),
            drop: Dropout::new(0.5)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.act.forward(&self.fc.forward(x)?)?;
        x.add(&self.drop.forward(&self.norm.forward(&h)?)?)
    }
}

/// Every kind of field at once.
#[derive(Module)]
struct Net {
    embed: Linear,
    blocks: Vec<Block>,
    extra: Option<Linear>,
    missing: Option<Linear>,
    bn: BatchNorm1d,
    scale: Tensor,
    shift: Option<Tensor>,
    no_shift: Option<Tensor>,
    #[module(buffer)]
    steps: Tensor,
    #[module(buffer)]
    absent: Option<Tensor>,
    dim: usize,
    name: String,
    eps: f32,
    sizes: Vec<usize>,
    device: Device,
    #[module(skip)]
    kind: Kind,
    training: bool,
}

#[allow(dead_code)] // only stored, to show that `#[module(skip)]` skips it
enum Kind {
    Plain,
    Wide,
}

impl Net {
    fn new(with_extra: bool) -> Result<Self> {
        let dim = 4;
        Ok(Net {
            embed: Linear::new(3, dim, false, &CPU)?,
            blocks: vec![Block::new(dim)?, Block::new(dim)?],
            extra: if with_extra {
                Some(Linear::new(dim, dim, true, &CPU)?)
            } else {
                None
            },
            missing: None,
            bn: BatchNorm1d::new(dim, &CPU)?,
            scale: Tensor::ones(&[dim], &CPU)?.with_requires_grad(true)?,
            shift: Some(Tensor::zeros(&[dim], &CPU)?.with_requires_grad(true)?),
            no_shift: None,
            steps: Tensor::full(&[], 0.0, DType::I32, &CPU)?,
            absent: None,
            dim,
            name: "net".into(),
            eps: 1e-5,
            sizes: vec![3, dim],
            device: CPU,
            kind: Kind::Plain,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = self.embed.forward(x)?;
        for b in &self.blocks {
            h = b.forward(&h)?;
        }
        if let Some(extra) = &self.extra {
            h = extra.forward(&h)?;
        }
        h = self.bn.forward(&h)?.mul(&self.scale)?;
        match &self.shift {
            Some(s) => h.add(s),
            None => Ok(h),
        }
    }
}

const BLOCK: [&str; 4] = ["fc.weight", "fc.bias", "norm.weight", "norm.bias"];

fn expected_parameters(with_extra: bool) -> Vec<String> {
    let mut want: Vec<String> = vec!["scale".into(), "shift".into(), "embed.weight".into()];
    for i in 0..2 {
        want.extend(BLOCK.iter().map(|n| format!("blocks.{i}.{n}")));
    }
    if with_extra {
        want.extend(["extra.weight".into(), "extra.bias".into()]);
    }
    want.extend(["bn.weight".into(), "bn.bias".into()]);
    want
}

#[test]
fn names_are_dotted_paths_own_tensors_first() {
    let net = Net::new(true).unwrap();
    assert_eq!(names(net.named_parameters()), expected_parameters(true));
    assert_eq!(net.parameters().len(), expected_parameters(true).len());
    assert_eq!(
        names(net.named_buffers()),
        [
            "steps",
            "bn.running_mean",
            "bn.running_var",
            "bn.num_batches_tracked"
        ]
    );
    assert_eq!((net.dim, net.name.as_str(), net.eps), (4, "net", 1e-5));
    assert_eq!(net.sizes, [3, 4]);
    assert!(net.device.same(&CPU));
    assert!(matches!(net.kind, Kind::Plain | Kind::Wide));
    assert!(net.missing.is_none() && net.no_shift.is_none() && net.absent.is_none());
}

#[test]
fn an_absent_optional_child_has_no_names() {
    let net = Net::new(false).unwrap();
    assert_eq!(names(net.named_parameters()), expected_parameters(false));
    let y = net.forward(&ones(&[5, 3])).unwrap();
    assert_eq!(y.shape(), [5, 4]);
}

#[test]
fn buffers_are_state_but_never_parameters() {
    let net = Net::new(true).unwrap();
    let params = net.parameters();
    for (name, b) in net.named_buffers() {
        assert!(
            params.iter().all(|p| p.id() != b.id()),
            "{name} is a parameter"
        );
    }
    // PyTorch's state_dict order: own parameters, own buffers, then each
    // child's parameters and buffers.
    let state = names(net.named_state());
    let mut want: Vec<String> = vec!["scale".into(), "shift".into(), "steps".into()];
    want.push("embed.weight".into());
    for i in 0..2 {
        want.extend(BLOCK.iter().map(|n| format!("blocks.{i}.{n}")));
    }
    want.extend(["extra.weight".into(), "extra.bias".into()]);
    want.extend(
        [
            "bn.weight",
            "bn.bias",
            "bn.running_mean",
            "bn.running_var",
            "bn.num_batches_tracked",
        ]
        .map(String::from),
    );
    assert_eq!(state, want);
}

#[test]
fn train_and_eval_reach_every_child() {
    let mut net = Net::new(true).unwrap();
    assert!(net.is_training());
    net.eval();
    assert!(!net.is_training() && !net.training);
    assert!(!net.bn.is_training() && !net.extra.as_ref().unwrap().is_training());
    for b in &net.blocks {
        assert!(!b.is_training() && !b.drop.is_training() && !b.act.is_training());
    }
    // In eval, dropout is the identity: two calls agree.
    let x = ones(&[5, 3]);
    let (a, b) = (net.forward(&x).unwrap(), net.forward(&x).unwrap());
    assert_eq!(a.to_vec_f32().unwrap(), b.to_vec_f32().unwrap());
    net.train(true);
    assert!(net.is_training() && net.blocks[1].drop.is_training());
}

#[test]
fn a_struct_without_a_flag_reports_its_first_child() {
    let mut block = Block::new(2).unwrap();
    block.eval();
    assert!(!block.is_training() && !block.fc.is_training());
    block.train(true);
    assert!(block.is_training());

    #[derive(Module)]
    struct Bare {
        w: Tensor,
    }
    impl Bare {
        fn forward(&self, x: &Tensor) -> Result<Tensor> {
            x.mul(&self.w)
        }
    }
    let mut bare = Bare { w: ones(&[2]) };
    bare.eval();
    assert!(bare.is_training(), "nothing holds a mode: always training");
    assert_eq!(bare.forward(&ones(&[2])).unwrap().shape(), [2]);
}

#[test]
fn to_device_keeps_names_and_requires_grad() {
    let mut net = Net::new(true).unwrap();
    let before = names(net.named_state());
    net.to_device(&CPU).unwrap();
    assert_eq!(names(net.named_state()), before);
    assert!(net.parameters().iter().all(|p| p.requires_grad()));
    assert!(net.named_buffers().iter().all(|(_, b)| !b.requires_grad()));
    let Some(gpu) = wgrad_test_support::gpu() else {
        return;
    };
    let cpu_state: Vec<Vec<f32>> = net
        .named_state()
        .iter()
        .map(|(_, t)| t.cast(DType::F32).unwrap().to_vec_f32().unwrap())
        .collect();
    net.to_device(&gpu).unwrap();
    assert_eq!(names(net.named_state()), before);
    for ((name, t), want) in net.named_state().into_iter().zip(&cpu_state) {
        assert!(t.device().same(&gpu), "{name} stayed behind");
        assert_eq!(&t.cast(DType::F32).unwrap().to_vec_f32().unwrap(), want);
    }
    let params = net.parameters();
    assert!(params.iter().all(|p| p.requires_grad() && p.is_leaf()));
    assert!(net.named_buffers().iter().all(|(_, b)| !b.requires_grad()));
    let y = net.forward(&Tensor::ones(&[5, 3], &gpu).unwrap()).unwrap();
    assert_eq!(y.shape(), [5, 4]);
}

/// A language-model head tied to the embedding (GPT-2's `lm_head`).
#[derive(Module)]
struct Tied {
    wte: wgrad_nn::Embedding,
    head: Linear,
}

impl Tied {
    fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        self.head.forward(&self.wte.forward(idx)?)
    }
}

#[test]
fn tied_weights_are_listed_once() {
    let wte = wgrad_nn::Embedding::new(10, 4, &CPU).unwrap();
    let head = Linear::from_parameters(wte.weight.clone(), None);
    let m = Tied { wte, head };
    assert_eq!(names(m.named_parameters()), ["wte.weight"]);
    assert_eq!(m.parameters().len(), 1);
    assert_eq!(names(m.named_state()), ["wte.weight"]);
    let idx = Tensor::from_vec(vec![1i32, 2], &[2], &CPU).unwrap();
    assert_eq!(m.forward(&idx).unwrap().shape(), [2, 10]);
}

/// A generic wrapper: `M: Module` is required only because `inner` is a
/// child; the lifetime and the skipped reference need nothing.
#[derive(Module)]
struct Residual<'a, M> {
    inner: M,
    label: &'a str,
}

impl<M: Module> Residual<'_, M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.add(&self.inner.forward(x)?)
    }
}

#[test]
fn generic_structs_derive_with_a_module_bound() {
    let mut r = Residual {
        inner: Linear::new(3, 3, true, &CPU).unwrap(),
        label: "skip",
    };
    assert_eq!(names(r.named_parameters()), ["inner.weight", "inner.bias"]);
    r.eval();
    assert!(!r.is_training() && !r.inner.is_training());
    assert_eq!(r.label, "skip");
    // Nested generics, boxed trait objects and arrays of children.
    #[derive(Module)]
    struct Heads<M: Module, const N: usize> {
        heads: [M; N],
        boxed: Box<dyn Module>,
        list: ModuleList,
    }
    impl<M: Module, const N: usize> Heads<M, N> {
        fn forward(&self, x: &Tensor) -> Result<Tensor> {
            self.boxed.forward(&self.heads[0].forward(x)?)
        }
    }
    let mut list = ModuleList::new();
    list.push(Linear::new(3, 1, false, &CPU).unwrap());
    let h = Heads {
        heads: [Residual {
            inner: Linear::new(3, 3, false, &CPU).unwrap(),
            label: "a",
        }],
        boxed: Box::new(ReLU::new()),
        list,
    };
    assert_eq!(
        names(h.named_parameters()),
        ["heads.0.inner.weight", "list.0.weight"]
    );
    let boxed: Box<dyn Module> = Box::new(h);
    assert_eq!(boxed.forward(&ones(&[2, 3])).unwrap().shape(), [2, 3]);
}

/// `#[module(forward = logits)]` and a flag under another name.
#[derive(Module)]
#[module(forward = logits)]
struct Classifier {
    fc: Linear,
    #[module(training)]
    is_train: bool,
    /// A list of parameters (`ParameterList`): `biases.0`, `biases.1`.
    biases: Vec<Tensor>,
}

impl Classifier {
    fn logits(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = self.fc.forward(x)?;
        for b in &self.biases {
            y = y.add(b)?;
        }
        Ok(y)
    }
}

#[test]
fn a_custom_forward_method_and_flag_name() {
    let mut c = Classifier {
        fc: Linear::new(3, 2, false, &CPU).unwrap(),
        is_train: true,
        biases: vec![ones(&[2]), ones(&[2])],
    };
    assert_eq!(
        names(c.named_parameters()),
        ["biases.0", "biases.1", "fc.weight"]
    );
    let x = ones(&[1, 3]);
    let via_trait = Module::forward(&c, &x).unwrap().to_vec_f32().unwrap();
    assert_eq!(via_trait, c.logits(&x).unwrap().to_vec_f32().unwrap());
    c.eval();
    assert!(!c.is_train && !c.is_training() && !c.fc.is_training());
}

/// The built-in layers' inherent `forward` is private: a path call from
/// outside still resolves to `Module::forward`.
#[test]
fn a_layer_path_call_reaches_the_trait() {
    let l = Linear::new(3, 2, true, &CPU).unwrap();
    let y = Linear::forward(&l, &ones(&[1, 3])).unwrap();
    assert_eq!(y.shape(), [1, 2]);
}

/// A wrapper names its state like the module it wraps (PyTorch's
/// `BatchNorm2d` has `weight`, not `0.weight`).
#[derive(Module)]
struct Wrapped(#[module(flatten)] Linear);

impl Wrapped {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.0.forward(x)
    }
}

/// Tuple fields without flatten are named by index; a flattened option as
/// its contents (a flattened list by index alone: `Sequential`, below).
#[derive(Module)]
struct Pair(Linear, #[module(flatten)] Option<Wrapped>);

impl Pair {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.0.forward(x)
    }
}

#[test]
fn tuple_structs_and_flattened_children() {
    let w = Wrapped(Linear::new(3, 2, true, &CPU).unwrap());
    assert_eq!(names(w.named_parameters()), ["weight", "bias"]);
    let p = Pair(
        Linear::new(3, 2, false, &CPU).unwrap(),
        Some(Wrapped(Linear::new(2, 1, false, &CPU).unwrap())),
    );
    assert_eq!(names(p.named_parameters()), ["0.weight", "weight"]);
    // The built-in wrappers and containers keep PyTorch's names.
    let bn = wgrad_nn::BatchNorm2d::new(3, &CPU).unwrap();
    assert_eq!(
        names(bn.named_state()),
        [
            "weight",
            "bias",
            "running_mean",
            "running_var",
            "num_batches_tracked"
        ]
    );
    let seq = wgrad_nn::Sequential::new()
        .add(Linear::new(2, 2, true, &CPU).unwrap())
        .add(wgrad_nn::ReLU::new())
        .add(Linear::new(2, 1, true, &CPU).unwrap());
    assert_eq!(
        names(seq.named_parameters()),
        ["0.weight", "0.bias", "2.weight", "2.bias"]
    );
}
