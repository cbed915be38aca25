//! RNN, LSTM, GRU and their cells against PyTorch: each model of
//! `tests/fixtures/rnn.safetensors` (written by
//! `tests/fixtures/make_rnn_fixtures.py`) is built with the same
//! constructor arguments, given PyTorch's parameters by their state_dict
//! names and run on the same inputs and initial states on the CPU and the
//! GPU; the outputs, final states, every parameter's gradient and the
//! input's and initial states' gradients must match. Also: the state_dict
//! keys, and the bad inputs PyTorch rejects.

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::{GRU, GRUCell, LSTM, LSTMCell, Module, RNN, RNNCell, RnnNonlinearity, RnnOptions};
use wgrad::optim::Optimizer;
use wgrad::{Device, Tensor};

const TOL: f32 = 1e-4;

enum Model {
    Rnn(RNN),
    Lstm(LSTM),
    Gru(GRU),
    RnnCell(RNNCell),
    LstmCell(LSTMCell),
    GruCell(GRUCell),
}

impl Model {
    fn module(&self) -> &dyn Module {
        match self {
            Model::Rnn(m) => m,
            Model::Lstm(m) => m,
            Model::Gru(m) => m,
            Model::RnnCell(m) => m,
            Model::LstmCell(m) => m,
            Model::GruCell(m) => m,
        }
    }
}

fn size(meta: &Value, key: &str) -> usize {
    meta[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: {meta}")) as usize
}

fn flag(meta: &Value, key: &str) -> bool {
    meta[key].as_bool().unwrap_or(false)
}

fn build(meta: &Value, d: &Device) -> Model {
    let (input, hidden, bias) = (
        size(meta, "input_size"),
        size(meta, "hidden_size"),
        flag(meta, "bias"),
    );
    let nonlinearity = match meta["nonlinearity"].as_str() {
        Some("relu") => RnnNonlinearity::Relu,
        _ => RnnNonlinearity::Tanh,
    };
    let options = || {
        let mut o = RnnOptions::new(input, hidden);
        o.num_layers = size(meta, "num_layers");
        o.bias = bias;
        o.batch_first = flag(meta, "batch_first");
        o.bidirectional = flag(meta, "bidirectional");
        o.nonlinearity = nonlinearity;
        o
    };
    match meta["kind"].as_str().expect("kind") {
        "rnn" => Model::Rnn(RNN::new(options(), d).unwrap()),
        "lstm" => Model::Lstm(LSTM::new(options(), d).unwrap()),
        "gru" => Model::Gru(GRU::new(options(), d).unwrap()),
        "rnn_cell" => Model::RnnCell(RNNCell::new(input, hidden, bias, nonlinearity, d).unwrap()),
        "lstm_cell" => Model::LstmCell(LSTMCell::new(input, hidden, bias, d).unwrap()),
        "gru_cell" => Model::GruCell(GRUCell::new(input, hidden, bias, d).unwrap()),
        kind => panic!("unknown kind {kind}"),
    }
}

fn run_model(fx: &Fixture, meta: &Value, d: &Device) -> Result<(), String> {
    let name = meta["name"].as_str().expect("name");
    let model = build(meta, d);
    for (key, p) in model.module().named_parameters() {
        let want = fx.tensor_f32(&format!("{name}.param.{key}"), d);
        p.set_storage(want.storage())
            .map_err(|e| format!("{name}: parameter {key}: {e}"))?;
    }
    let input = |arg: &str| -> Option<Tensor> {
        let key = format!("{name}.in.{arg}");
        fx.has(&key).then(|| {
            fx.tensor_f32(&key, d)
                .with_requires_grad(true)
                .expect("leaf")
        })
    };
    let (x, h0, c0) = (input("x").expect("x"), input("h0"), input("c0"));
    let fail = |e: wgrad::Error| format!("{name}: {e}");
    let lstm_state = h0.as_ref().zip(c0.as_ref());
    let outputs: Vec<(&str, Tensor)> = match &model {
        Model::Rnn(m) => {
            let (o, h) = m.forward_hidden(&x, h0.as_ref()).map_err(fail)?;
            vec![("output", o), ("h_n", h)]
        }
        Model::Gru(m) => {
            let (o, h) = m.forward_hidden(&x, h0.as_ref()).map_err(fail)?;
            vec![("output", o), ("h_n", h)]
        }
        Model::Lstm(m) => {
            let (o, (h, c)) = m.forward_state(&x, lstm_state).map_err(fail)?;
            vec![("output", o), ("h_n", h), ("c_n", c)]
        }
        Model::RnnCell(m) => vec![("h_n", m.forward_hidden(&x, h0.as_ref()).map_err(fail)?)],
        Model::GruCell(m) => vec![("h_n", m.forward_hidden(&x, h0.as_ref()).map_err(fail)?)],
        Model::LstmCell(m) => {
            let (h, c) = m.forward_state(&x, lstm_state).map_err(fail)?;
            vec![("h_n", h), ("c_n", c)]
        }
    };
    let vec = |t: &Tensor| t.to_vec::<f32>().unwrap();
    let mut errors = Vec::new();
    let mut loss: Option<Tensor> = None;
    for (key, got) in &outputs {
        let want = fx.f32(&format!("{name}.out.{key}"));
        if got.shape() != want.shape.as_slice() {
            return Err(format!(
                "{name}: {key} shape {:?}, PyTorch {:?}",
                got.shape(),
                want.shape
            ));
        }
        errors.extend(check_close(&format!("{name} {key}"), &vec(got), &want.data, TOL).err());
        let up = fx.tensor_f32(&format!("{name}.up.{key}"), d);
        let term = got.mul(&up).and_then(|t| t.sum_all()).map_err(fail)?;
        loss = Some(match loss {
            None => term,
            Some(l) => l.add(&term).map_err(fail)?,
        });
    }
    loss.expect("an output")
        .backward()
        .map_err(|e| format!("{name}: backward: {e}"))?;
    let grads = model
        .module()
        .named_parameters()
        .into_iter()
        .map(|(k, p)| (format!("grad.{k}"), p))
        .chain(
            [("x", Some(&x)), ("h0", h0.as_ref()), ("c0", c0.as_ref())]
                .into_iter()
                .filter_map(|(k, t)| t.map(|t| (format!("grad_in.{k}"), t.clone()))),
        );
    for (key, t) in grads {
        let want = fx.f32(&format!("{name}.{key}"));
        let got = t
            .grad()
            .map(|g| vec(&g))
            .unwrap_or_else(|| vec![0.0; want.data.len()]);
        errors.extend(check_close(&format!("{name} {key}"), &got, &want.data, TOL).err());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn run_all(d: &Device, what: &str) {
    let fx = Fixture::load("rnn.safetensors");
    let models = array(&fx.meta, "models");
    let failures: Vec<String> = models
        .iter()
        .filter_map(|m| run_model(&fx, m, d).err())
        .collect();
    report(what, models.len(), &failures);
}

#[test]
fn recurrent_modules_match_pytorch_on_cpu() {
    run_all(&Device::Cpu, "recurrent modules on the CPU");
}

#[test]
fn recurrent_modules_match_pytorch_on_gpu() {
    let Some(d) = gpu() else { return };
    run_all(&d, "recurrent modules on the GPU");
}

#[test]
fn recurrent_state_dict_keys_are_pytorchs_in_order() {
    let fx = Fixture::load("rnn.safetensors");
    for meta in array(&fx.meta, "models") {
        let name = meta["name"].as_str().expect("name");
        let model = build(meta, &Device::Cpu);
        let ours: Vec<String> = model
            .module()
            .named_parameters()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let mut theirs: Vec<String> = fx
            .names()
            .into_iter()
            .filter_map(|n| {
                n.strip_prefix(&format!("{name}.param."))
                    .map(str::to_string)
            })
            .collect();
        // safetensors lists names sorted; PyTorch's order is layer-major,
        // then weight_ih, weight_hh, bias_ih, bias_hh.
        let mut sorted = ours.clone();
        sorted.sort();
        theirs.sort();
        assert_eq!(sorted, theirs, "{name}");
        if name == "lstm_stacked_bi_batch_first" {
            assert_eq!(
                ours[..5],
                [
                    "weight_ih_l0",
                    "weight_hh_l0",
                    "bias_ih_l0",
                    "bias_hh_l0",
                    "weight_ih_l0_reverse"
                ]
            );
        }
    }
}

/// PyTorch's errors: wrong input rank, feature count, state shape or rank,
/// an empty sequence, and bad constructor arguments.
#[test]
fn recurrent_modules_reject_bad_input() {
    let d = Device::Cpu;
    let err = |r: wgrad::Result<Tensor>| r.expect_err("should fail").to_string();
    let lstm = LSTM::new(RnnOptions::new(4, 6), &d).unwrap();
    let x = Tensor::randn(&[5, 3, 4], &d).unwrap();
    let e = err(lstm.forward(&Tensor::randn(&[2, 5, 3, 4], &d).unwrap()));
    assert!(e.contains("LSTM") && e.contains("2D or 3D, got 4D"), "{e}");
    let e = err(lstm.forward(&Tensor::randn(&[5, 3, 7], &d).unwrap()));
    assert!(e.contains("Expected 4, got 7"), "{e}");
    let h = Tensor::zeros(&[2, 3, 6], &d).unwrap();
    let c = Tensor::zeros(&[1, 3, 6], &d).unwrap();
    let e = lstm
        .forward_state(&x, Some((&h, &c)))
        .expect_err("h0 of 2 layers")
        .to_string();
    assert!(
        e.contains("hidden[0] size [1, 3, 6]") && e.contains("[2, 3, 6]"),
        "{e}"
    );
    let e = lstm
        .forward_state(&x, Some((&c, &h)))
        .expect_err("c0 of 2 layers")
        .to_string();
    assert!(e.contains("hidden[1]"), "{e}");
    let flat = Tensor::zeros(&[1, 6], &d).unwrap();
    let e = lstm
        .forward_state(&x, Some((&flat, &flat)))
        .expect_err("2-D state for 3-D input")
        .to_string();
    assert!(e.contains("3-D") && e.contains("2-D"), "{e}");
    let e = err(lstm.forward(&Tensor::zeros(&[0, 3, 4], &d).unwrap()));
    assert!(e.contains("sequence length"), "{e}");

    let gru = GRU::new(RnnOptions::new(4, 6), &d).unwrap();
    let e = gru
        .forward_hidden(&x, Some(&Tensor::zeros(&[1, 2, 6], &d).unwrap()))
        .expect_err("batch 2 state for batch 3")
        .to_string();
    assert!(e.contains("GRU") && e.contains("[1, 3, 6]"), "{e}");

    let mut o = RnnOptions::new(4, 0);
    assert!(RNN::new(o, &d).is_err());
    o.hidden_size = 3;
    o.num_layers = 0;
    assert!(RNN::new(o, &d).is_err());
    o.num_layers = 2;
    o.dropout = 1.5;
    let e = RNN::new(o, &d).err().expect("dropout 1.5").to_string();
    assert!(e.contains("dropout"), "{e}");

    let cell = LSTMCell::new(4, 6, true, &d).unwrap();
    let e = cell
        .forward_state(&Tensor::randn(&[2, 5], &d).unwrap(), None)
        .expect_err("5 features")
        .to_string();
    assert!(
        e.contains("inconsistent input_size: got 5 expected 4"),
        "{e}"
    );
    let h = Tensor::zeros(&[3, 6], &d).unwrap();
    let e = cell
        .forward_state(&Tensor::randn(&[2, 4], &d).unwrap(), Some((&h, &h)))
        .expect_err("batch 3 state")
        .to_string();
    assert!(e.contains("batch size 2 doesn't match"), "{e}");
    let gru_cell = GRUCell::new(4, 6, true, &d).unwrap();
    let e = err(gru_cell.forward(&Tensor::randn(&[2, 3, 4], &d).unwrap()));
    assert!(e.contains("GRUCell") && e.contains("1D or 2D"), "{e}");
    let e = gru_cell
        .forward_hidden(
            &Tensor::randn(&[2, 4], &d).unwrap(),
            Some(&Tensor::zeros(&[2, 5], &d).unwrap()),
        )
        .expect_err("hidden 5")
        .to_string();
    assert!(
        e.contains("inconsistent hidden_size: got 5, expected 6"),
        "{e}"
    );
}

/// Dropout between stacked layers acts in training and not in eval, and
/// an LSTM trains: a few Adam steps on a fixed sequence task lower the
/// loss on either device.
#[test]
fn lstm_dropout_follows_the_mode_and_the_layer_trains() {
    let d = Device::Cpu;
    wgrad::manual_seed(3);
    let mut o = RnnOptions::new(3, 8);
    o.num_layers = 2;
    o.dropout = 0.5;
    let mut lstm = LSTM::new(o, &d).unwrap();
    let x = Tensor::randn(&[6, 2, 3], &d).unwrap();
    let a = lstm.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let b = lstm.forward(&x).unwrap().to_vec::<f32>().unwrap();
    assert_ne!(a, b, "dropout draws a new mask per call in training");
    lstm.eval();
    let a = lstm.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let b = lstm.forward(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, b, "no dropout in eval");

    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        wgrad::manual_seed(5);
        let lstm = LSTM::new(RnnOptions::new(2, 8), &d).unwrap();
        let head = wgrad::nn::Linear::new(8, 1, true, &d).unwrap();
        let mut params = lstm.parameters();
        params.extend(head.parameters());
        let config = wgrad::optim::AdamConfig {
            lr: 0.02,
            ..Default::default()
        };
        let mut opt = wgrad::optim::Adam::new(params, config).unwrap();
        // Target: the running sum of the first feature.
        let x = Tensor::randn(&[7, 4, 2], &d).unwrap();
        let target = x.narrow(2, 0, 1).unwrap().cumsum(0).unwrap();
        let mut losses = Vec::new();
        for _ in 0..30 {
            opt.zero_grad();
            let y = head.forward(&lstm.forward(&x).unwrap()).unwrap();
            let loss = y
                .sub(&target)
                .unwrap()
                .square()
                .unwrap()
                .mean_all()
                .unwrap();
            loss.backward().unwrap();
            opt.step().unwrap();
            losses.push(loss.item().unwrap());
        }
        assert!(
            losses[29] < 0.5 * losses[0],
            "{d}: loss {} -> {}",
            losses[0],
            losses[29]
        );
    }
}

/// A long sequence (300 steps, so 300 outputs stacked and a 3000-node
/// graph) through an LSTM equals the same weights unrolled by hand
/// through an LSTMCell, and its backward runs, on either device.
#[test]
fn long_lstm_equals_its_cell_unrolled() {
    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        wgrad::manual_seed(11);
        let lstm = LSTM::new(RnnOptions::new(3, 4), &d).unwrap();
        let cell = LSTMCell::new(3, 4, true, &d).unwrap();
        let theirs = lstm.named_parameters();
        for (key, p) in cell.named_parameters() {
            let (_, src) = theirs
                .iter()
                .find(|(k, _)| *k == format!("{key}_l0"))
                .expect("matching parameter");
            p.set_storage(src.storage()).unwrap();
        }
        let steps = 300;
        let x = Tensor::randn(&[steps, 2, 3], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let (out, (h_n, c_n)) = lstm.forward_state(&x, None).unwrap();
        assert_eq!(out.shape(), [steps, 2, 4]);
        let mut state: Option<(Tensor, Tensor)> = None;
        let mut hs = Vec::new();
        for t in 0..steps {
            let xt = x.select(0, t as isize).unwrap();
            let (h, c) = cell
                .forward_state(&xt, state.as_ref().map(|(h, c)| (h, c)))
                .unwrap();
            hs.push(h.clone());
            state = Some((h, c));
        }
        let refs: Vec<&Tensor> = hs.iter().collect();
        let unrolled = Tensor::stack(&refs, 0).unwrap();
        let v = |t: &Tensor| t.to_vec::<f32>().unwrap();
        check_close("lstm vs cell", &v(&out), &v(&unrolled), 1e-5).unwrap();
        let (h, c) = state.unwrap();
        check_close("h_n", &v(&h_n.squeeze(0).unwrap()), &v(&h), 1e-5).unwrap();
        check_close("c_n", &v(&c_n.squeeze(0).unwrap()), &v(&c), 1e-5).unwrap();
        out.sum_all().unwrap().backward().unwrap();
        let g = x.grad().expect("input gradient");
        assert_eq!(g.shape(), [steps, 2, 3]);
        assert!(v(&g).iter().all(|a| a.is_finite()), "{d}");
    }
}
