//! `TensorDataset` and `TensorLoader` (`torch.utils.data.TensorDataset`
//! with a `DataLoader`): every sample once per epoch with its rows kept
//! together across tensors of different dtypes, a new order per shuffled
//! epoch, `drop_last`, batches on the tensors' device, and the errors.

use crate::common::gpu;
use wgrad::nn::data::{TensorDataset, TensorLoader};
use wgrad::{DType, Device, Tensor};

#[test]
fn tensor_loader_batches_rows_together() {
    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        let n = 10;
        // x[i] = [i, 10 i], y[i] = i (I32), w[i] = -i.
        let x: Vec<f32> = (0..n).flat_map(|i| [i as f32, 10.0 * i as f32]).collect();
        let x = Tensor::from_vec(x, &[n, 2], &d).unwrap();
        let y = Tensor::arange(0.0, n as f64, 1.0, DType::I32, &d).unwrap();
        let w = Tensor::arange(0.0, n as f64, 1.0, DType::F32, &d)
            .unwrap()
            .neg()
            .unwrap();
        let data = TensorDataset::new(vec![x, y, w]).unwrap();
        assert_eq!(data.len(), n);
        let s = data.get(3).unwrap();
        assert_eq!(s[0].to_vec::<f32>().unwrap(), [3.0, 30.0]);
        assert_eq!(s[1].to_vec::<i32>().unwrap(), [3]);

        let loader = TensorLoader::new(&data, 4).unwrap().shuffle(11);
        assert_eq!(loader.num_batches(), 3);
        let mut orders = Vec::new();
        for epoch in 0..2 {
            let mut seen = Vec::new();
            for batch in loader.epoch(epoch) {
                let batch = batch.unwrap();
                assert!(batch[0].device().same(&d));
                let xs = batch[0].to_vec::<f32>().unwrap();
                let ys = batch[1].to_vec::<i32>().unwrap();
                let ws = batch[2].to_vec::<f32>().unwrap();
                for (k, &i) in ys.iter().enumerate() {
                    assert_eq!(xs[2 * k], i as f32);
                    assert_eq!(xs[2 * k + 1], 10.0 * i as f32);
                    assert_eq!(ws[k], -(i as f32));
                }
                seen.extend(ys);
            }
            let mut sorted = seen.clone();
            sorted.sort();
            assert_eq!(sorted, (0..n as i32).collect::<Vec<_>>());
            orders.push(seen);
        }
        assert_ne!(orders[0], orders[1], "a new order each epoch");
        assert_ne!(orders[0], (0..n as i32).collect::<Vec<_>>(), "shuffled");

        let plain = TensorLoader::new(&data, 4).unwrap().drop_last(true);
        let batches: Vec<Vec<i32>> = plain
            .iter()
            .map(|b| b.unwrap()[1].to_vec::<i32>().unwrap())
            .collect();
        assert_eq!(batches, [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    }
    let d = Device::Cpu;
    let a = Tensor::zeros(&[4, 2], &d).unwrap();
    let b = Tensor::zeros(&[5], &d).unwrap();
    let e = TensorDataset::new(vec![a.clone(), b])
        .unwrap_err()
        .to_string();
    assert!(e.contains("Size mismatch"), "{e}");
    assert!(TensorDataset::new(vec![]).is_err());
    assert!(TensorDataset::new(vec![Tensor::zeros(&[], &d).unwrap()]).is_err());
    let data = TensorDataset::new(vec![a]).unwrap();
    assert!(TensorLoader::new(&data, 0).is_err());
    assert!(data.get(4).is_err());
}
