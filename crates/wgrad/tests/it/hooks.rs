//! `retain_grad` and `register_hook` as PyTorch's: a result's gradient
//! kept (and accumulated) after backward, hooks that observe or replace a
//! gradient on results and leaves, in order, removable, also under
//! `autograd::grad`; on the CPU and the GPU; and the errors.

use std::sync::{Arc, Mutex};

use crate::common::gpu;
use wgrad::autograd::{BackwardOptions, GradOptions, grad};
use wgrad::{Device, Tensor};

fn v(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn retain_grad_keeps_a_results_gradient() {
    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = x.mul_scalar(3.0).unwrap();
        assert!(!y.retains_grad());
        y.retain_grad().unwrap();
        assert!(y.retains_grad());
        let z = y.square().unwrap().sum_all().unwrap();
        z.backward_with_options(None, BackwardOptions { retain_graph: true })
            .unwrap();
        // dz/dy = 2y = [6, 12]; dz/dx = 3 * 2y.
        assert_eq!(v(&y.grad().unwrap()), [6.0, 12.0]);
        assert_eq!(v(&x.grad().unwrap()), [18.0, 36.0]);
        z.backward().unwrap();
        assert_eq!(
            v(&y.grad().unwrap()),
            [12.0, 24.0],
            "accumulates like a leaf"
        );
        // Without retain_grad a result has no grad; a leaf's is a no-op.
        let w = x.mul_scalar(2.0).unwrap();
        w.sum_all().unwrap().backward().unwrap();
        assert!(w.grad().is_none());
        x.retain_grad().unwrap();
        assert!(!x.retains_grad());
    }
    let plain = Tensor::zeros(&[2], &Device::Cpu).unwrap();
    let e = plain.retain_grad().unwrap_err().to_string();
    assert!(e.contains("requires_grad=False"), "{e}");
}

#[test]
fn hooks_observe_and_replace_gradients() {
    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        let x = Tensor::from_vec(vec![1.0f32, -1.0, 2.0], &[3], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = x.mul_scalar(2.0).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        // Observes y's gradient, then a second hook scales it by 10.
        let h1 = y
            .register_hook(move |g| {
                log.lock().unwrap().push(g.to_vec::<f32>()?);
                Ok(None)
            })
            .unwrap();
        let h2 = y.register_hook(|g| Ok(Some(g.mul_scalar(10.0)?))).unwrap();
        // A leaf hook clips its gradient before it lands in .grad.
        let hx = x
            .register_hook(|g| Ok(Some(g.clamp(None, Some(15.0))?)))
            .unwrap();
        y.square().unwrap().sum_all().unwrap().backward().unwrap();
        // dL/dy = 2y = [4, -4, 8]; through the hook x10 then *2 = [80, -80, 160]; clipped at 15.
        assert_eq!(seen.lock().unwrap().as_slice(), [vec![4.0, -4.0, 8.0]]);
        assert_eq!(v(&x.grad().unwrap()), [15.0, -80.0, 15.0]);
        h1.remove();
        h2.remove();
        hx.remove();
        x.zero_grad();
        let y = x.mul_scalar(2.0).unwrap();
        y.square().unwrap().sum_all().unwrap().backward().unwrap();
        assert_eq!(
            v(&x.grad().unwrap()),
            [8.0, -8.0, 16.0],
            "removed hooks no longer run"
        );

        // autograd::grad runs hooks too.
        let a = Tensor::from_vec(vec![3.0f32], &[1], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let b = a.mul_scalar(2.0).unwrap();
        let _h = b.register_hook(|g| Ok(Some(g.add_scalar(1.0)?))).unwrap();
        let out = b.sum_all().unwrap();
        let g = grad(&[&out], &[&a], None, GradOptions::default()).unwrap();
        assert_eq!(v(g[0].as_ref().unwrap()), [4.0]);
    }
}

#[test]
fn hook_errors_leave_gradients_unchanged() {
    let d = Device::Cpu;
    let plain = Tensor::zeros(&[2], &d).unwrap();
    let e = plain
        .register_hook(|_| Ok(None))
        .err()
        .expect("no grad")
        .to_string();
    assert!(e.contains("doesn't require gradient"), "{e}");
    let x = Tensor::ones(&[2], &d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    x.mul_scalar(2.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let y = x.mul_scalar(2.0).unwrap();
    let _h = y
        .register_hook(|_| Ok(Some(Tensor::zeros(&[3], &Device::Cpu)?)))
        .unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("shape"), "{e}");
    assert_eq!(
        v(&x.grad().unwrap()),
        [2.0, 2.0],
        "a failed backward changes nothing"
    );
}

/// `enable_grad` inside `no_grad`, `set_grad_enabled` and `inference_mode`
/// scope graph recording as PyTorch's context managers, restoring the
/// previous mode when dropped.
#[test]
fn grad_mode_scopes_nest() {
    let x = Tensor::ones(&[2], &Device::Cpu)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    {
        let _off = wgrad::no_grad();
        assert!(!x.mul_scalar(2.0).unwrap().requires_grad());
        {
            let _on = wgrad::enable_grad();
            assert!(x.mul_scalar(2.0).unwrap().requires_grad());
        }
        assert!(!wgrad::is_grad_enabled());
    }
    {
        let _mode = wgrad::set_grad_enabled(false);
        assert!(!x.mul_scalar(2.0).unwrap().requires_grad());
        let _inner = wgrad::set_grad_enabled(true);
        assert!(x.mul_scalar(2.0).unwrap().requires_grad());
    }
    {
        let _inference = wgrad::inference_mode();
        assert!(!x.mul_scalar(2.0).unwrap().requires_grad());
    }
    assert!(wgrad::is_grad_enabled());
}
