//! The activation modules against PyTorch 2.15: outputs and input
//! gradients (upstream ones) at kinks, signed zeros, saturation and large
//! magnitudes, on the CPU and the GPU. Expected values printed by PyTorch
//! (`torch.nn.ELU(0.7)`, `SELU()`, `Softplus(2, 5)`, `Hardtanh(-2, 1.5)`,
//! `ReLU6()`, `Mish()`, `LogSigmoid()`, `Softsign()`,
//! `GELU(approximate="tanh")`, `PReLU()`; per-channel `PReLU(3)` with an
//! upstream gradient).

// The expected values are PyTorch's, printed in full (f64) precision.
#![allow(clippy::excessive_precision)]

use crate::common::{check_close, gpu};
use wgrad::nn::{
    ELU, GELU, Hardtanh, Identity, LogSigmoid, LogSoftmax, Mish, Module, PReLU, ReLU6, SELU,
    Softmax, Softplus, Softsign,
};
use wgrad::{Device, Tensor};

const X: [f32; 9] = [-25.0, -3.0, -1.5, -0.0, 0.0, 0.5, 3.0, 7.0, 25.0];

fn module(name: &str, d: &Device) -> Box<dyn Module> {
    match name {
        "elu" => Box::new(ELU::new(0.7)),
        "selu" => Box::new(SELU::new()),
        "softplus" => Box::new(Softplus::new(2.0, 5.0)),
        "hardtanh" => Box::new(Hardtanh::new(-2.0, 1.5).unwrap()),
        "relu6" => Box::new(ReLU6::new()),
        "mish" => Box::new(Mish::new()),
        "logsigmoid" => Box::new(LogSigmoid::new()),
        "softsign" => Box::new(Softsign::new()),
        "gelu_tanh" => Box::new(GELU::with_approximate("tanh").unwrap()),
        "prelu" => Box::new(PReLU::new(1, 0.25, d).unwrap()),
        other => panic!("{other}"),
    }
}

fn run(d: &Device) {
    #[allow(clippy::type_complexity)]
    let cases: &[(&str, &[f32], &[f32])] = &[
        (
            "elu",
            &[
                -0.699999988079071,
                -0.6651490330696106,
                -0.5438088774681091,
                -0.0,
                0.0,
                0.5,
                3.0,
                7.0,
                25.0,
            ],
            &[
                9.721560362274673e-12,
                0.03485094755887985,
                0.15619111061096191,
                0.699999988079071,
                0.699999988079071,
                1.0,
                1.0,
                1.0,
                1.0,
            ],
        ),
        (
            "selu",
            &[
                -1.7580993175506592,
                -1.6705687046051025,
                -1.3658143281936646,
                -0.0,
                0.0,
                0.5253505110740662,
                3.1521029472351074,
                7.354907035827637,
                26.26752471923828,
            ],
            &[
                2.441638384531597e-11,
                0.08753060549497604,
                0.39228498935699463,
                1.7580993175506592,
                1.7580993175506592,
                1.0507010221481323,
                1.0507010221481323,
                1.0507010221481323,
                1.0507010221481323,
            ],
        ),
        (
            "softplus",
            &[
                9.643749466768692e-23,
                0.0012378426035866141,
                0.024293676018714905,
                0.3465735912322998,
                0.3465735912322998,
                0.65663081407547,
                3.0,
                7.0,
                25.0,
            ],
            &[
                1.9287498933537385e-22,
                0.0024726232513785362,
                0.04742587357759476,
                0.5,
                0.5,
                0.7310585975646973,
                1.0,
                1.0,
                1.0,
            ],
        ),
        (
            "hardtanh",
            &[-2.0, -2.0, -1.5, -0.0, 0.0, 0.5, 1.5, 1.5, 1.5],
            &[0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
        ),
        (
            "relu6",
            &[0.0, 0.0, 0.0, -0.0, 0.0, 0.5, 3.0, 6.0, 6.0],
            &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0],
        ),
        (
            "mish",
            &[
                -3.471986032010932e-10,
                -0.14564746618270874,
                -0.2980997562408447,
                -0.0,
                0.0,
                0.37524524331092834,
                2.98653507232666,
                6.999988555908203,
                25.0,
            ],
            &[
                -3.333106290970278e-10,
                -0.09339312463998795,
                -0.0640978142619133,
                0.6000000238418579,
                0.6000000238418579,
                0.8864244222640991,
                1.0211069583892822,
                1.0000216960906982,
                1.0,
            ],
        ),
        (
            "logsigmoid",
            &[
                -25.0,
                -3.0485873222351074,
                -1.7014132738113403,
                -0.6931471824645996,
                -0.6931471824645996,
                -0.4740769863128662,
                -0.04858735203742981,
                -0.000911466486286372,
                -1.3887943746404563e-11,
            ],
            &[
                1.0,
                0.9525741338729858,
                0.8175745010375977,
                0.5,
                0.5,
                0.3775406777858734,
                0.04742587357759476,
                0.0009110512328334153,
                1.3887943746404563e-11,
            ],
        ),
        (
            "softsign",
            &[
                -0.9615384340286255,
                -0.75,
                -0.6000000238418579,
                -0.0,
                0.0,
                0.3333333432674408,
                0.75,
                0.875,
                0.9615384340286255,
            ],
            &[
                0.0014792941510677338,
                0.0625,
                0.1599999964237213,
                1.0,
                1.0,
                0.444444477558136,
                0.0625,
                0.015625,
                0.0014792941510677338,
            ],
        ),
        (
            "gelu_tanh",
            &[
                -0.0,
                -0.0036374330520629883,
                -0.10042843222618103,
                -0.0,
                0.0,
                0.3457140028476715,
                2.9963626861572266,
                7.0,
                25.0,
            ],
            &[
                0.0,
                -0.011584296822547913,
                -0.12771081924438477,
                0.5,
                0.5,
                0.8673698902130127,
                1.0115842819213867,
                1.0,
                1.0,
            ],
        ),
        (
            "prelu",
            &[-6.25, -0.75, -0.375, -0.0, 0.0, 0.5, 3.0, 7.0, 25.0],
            &[0.25, 0.25, 0.25, 0.25, 0.25, 1.0, 1.0, 1.0, 1.0],
        ),
    ];
    let mut failures = Vec::new();
    for &(name, want_y, want_g) in cases {
        let m = module(name, d);
        let x = Tensor::from_vec(X.to_vec(), &[9], d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = m.forward(&x).unwrap();
        y.sum_all().unwrap().backward().unwrap();
        let got_y = y.to_vec::<f32>().unwrap();
        let got_g = x.grad().unwrap().to_vec::<f32>().unwrap();
        failures.extend(check_close(&format!("{name} output"), &got_y, want_y, 1e-5).err());
        failures.extend(check_close(&format!("{name} grad"), &got_g, want_g, 1e-5).err());
        if name == "prelu" {
            let w = m.named_parameters();
            assert_eq!(w[0].0, "weight");
            let gw = w[0].1.grad().unwrap().to_vec::<f32>().unwrap();
            failures.extend(check_close("prelu weight grad", &gw, &[-29.5], 1e-5).err());
        }
    }
    assert!(failures.is_empty(), "{d}:\n{}", failures.join("\n"));
}

#[test]
fn activation_modules_match_pytorch_on_cpu() {
    run(&Device::Cpu);
}

#[test]
fn activation_modules_match_pytorch_on_gpu() {
    let Some(d) = gpu() else { return };
    run(&d);
}

/// Per-channel PReLU (dim 1) with its weight gradient, softmax modules along
/// their dims, the identity, and the bad settings PyTorch rejects.
#[test]
fn channel_prelu_softmax_modules_and_errors() {
    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        let prelu = PReLU::new(3, 0.25, &d).unwrap();
        prelu
            .weight
            .set_storage(
                Tensor::from_vec(vec![0.1f32, -0.5, 2.0], &[3], &d)
                    .unwrap()
                    .storage(),
            )
            .unwrap();
        let x = Tensor::from_vec(
            vec![
                -1.0f32, 2.0, -3.0, 0.5, -0.5, -2.0, 4.0, -1.0, -2.0, -2.0, 1.0, 3.0,
            ],
            &[2, 3, 2],
            &d,
        )
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
        let up = Tensor::from_vec(
            vec![
                1.0f32, 2.0, 0.5, -1.0, 3.0, 1.0, -1.0, 1.0, 2.0, 0.5, 1.0, -2.0,
            ],
            &[2, 3, 2],
            &d,
        )
        .unwrap();
        let y = prelu.forward(&x).unwrap();
        y.mul(&up).unwrap().sum_all().unwrap().backward().unwrap();
        let v = |t: &Tensor| t.to_vec::<f32>().unwrap();
        check_close(
            "prelu3 y",
            &v(&y),
            &[
                -0.10000000149011612,
                2.0,
                1.5,
                0.5,
                -1.0,
                -4.0,
                4.0,
                -0.10000000149011612,
                1.0,
                1.0,
                1.0,
                3.0,
            ],
            1e-6,
        )
        .unwrap();
        check_close(
            "prelu3 gx",
            &v(&x.grad().unwrap()),
            &[
                0.10000000149011612,
                2.0,
                -0.25,
                -1.0,
                6.0,
                2.0,
                -1.0,
                0.10000000149011612,
                -1.0,
                -0.25,
                1.0,
                -2.0,
            ],
            1e-6,
        )
        .unwrap();
        check_close(
            "prelu3 gw",
            &v(&prelu.weight.grad().unwrap()),
            &[-2.0, -6.5, -3.5],
            1e-6,
        )
        .unwrap();
        let e = prelu
            .forward(&Tensor::zeros(&[2, 4], &d).unwrap())
            .expect_err("4 channels")
            .to_string();
        assert!(e.contains("PReLU"), "{e}");

        let z = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 0.0, -1.0], &[2, 3], &d).unwrap();
        let s = Softmax::new(1).forward(&z).unwrap();
        check_close("softmax", &v(&s), &v(&z.softmax(1).unwrap()), 0.0).unwrap();
        let l = LogSoftmax::new(0).forward(&z).unwrap();
        check_close("log_softmax", &v(&l), &v(&z.log_softmax(0).unwrap()), 0.0).unwrap();
        assert_eq!(v(&Identity::new().forward(&z).unwrap()), v(&z));
        let exact = GELU::new().forward(&z).unwrap();
        check_close("gelu", &v(&exact), &v(&z.gelu().unwrap()), 0.0).unwrap();
    }
    assert!(Hardtanh::new(1.0, -1.0).is_err());
    assert!(GELU::with_approximate("fast").is_err());
    assert!(PReLU::new(0, 0.25, &Device::Cpu).is_err());
    assert_eq!(
        GELU::with_approximate("tanh").unwrap().approximate(),
        "tanh"
    );
}
