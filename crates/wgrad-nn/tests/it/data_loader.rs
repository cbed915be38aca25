//! Dataset and DataLoader: coverage, ordering, batch shapes and dtypes.

use std::collections::BTreeSet;
use wgrad_test_support::gpu;

use wgrad_autograd::{DType, Device, Tensor};
use wgrad_nn::data::{DataLoader, Dataset};

/// `n` samples of shape `[3]` whose features encode their index, so that a
/// batch shows which samples it holds: sample `i` is `[i, i + 0.5, -i]`, label `i`.
fn indexed(n: usize) -> Dataset {
    let features = (0..n)
        .flat_map(|i| [i as f32, i as f32 + 0.5, -(i as f32)])
        .collect();
    Dataset::new(features, &[3], (0..n as i32).collect()).unwrap()
}

/// The label vectors of every batch of one pass, checking that features
/// match labels and that shapes and dtypes are right.
fn pass(
    batches: impl Iterator<Item = wgrad_core::Result<(Tensor, Tensor)>>,
    batch_size: usize,
) -> Vec<Vec<i32>> {
    batches
        .map(|b| {
            let (x, y) = b.unwrap();
            assert_eq!(x.dtype(), DType::F32);
            assert_eq!(y.dtype(), DType::I32);
            let labels = y.to_vec::<i32>().unwrap();
            assert!(labels.len() <= batch_size && !labels.is_empty());
            assert_eq!(x.shape(), vec![labels.len(), 3]);
            assert_eq!(y.shape(), vec![labels.len()]);
            let xs = x.to_vec_f32().unwrap();
            for (k, &l) in labels.iter().enumerate() {
                assert_eq!(
                    &xs[3 * k..3 * k + 3],
                    &[l as f32, l as f32 + 0.5, -(l as f32)]
                );
            }
            labels
        })
        .collect()
}

#[test]
fn shuffled_epoch_visits_every_sample_once() {
    let data = indexed(103);
    let loader = DataLoader::new(&data, 10).unwrap().shuffle(7);
    assert_eq!(loader.num_batches(), 11);
    let batches = pass(loader.epoch(0, &Device::Cpu), 10);
    assert_eq!(batches.len(), 11);
    assert!(batches[..10].iter().all(|b| b.len() == 10));
    assert_eq!(batches[10].len(), 3);
    let all: Vec<i32> = batches.concat();
    assert_eq!(all.len(), 103);
    assert_eq!(
        all.iter().copied().collect::<BTreeSet<_>>(),
        (0..103).collect()
    );
    assert_ne!(
        all,
        (0..103).collect::<Vec<_>>(),
        "shuffle(7) left the order unchanged"
    );
}

#[test]
fn order_is_reproducible_per_seed_and_epoch() {
    let data = indexed(50);
    let a = DataLoader::new(&data, 8).unwrap().shuffle(1);
    let b = DataLoader::new(&data, 8).unwrap().shuffle(1);
    let c = DataLoader::new(&data, 8).unwrap().shuffle(2);
    let e0 = pass(a.epoch(0, &Device::Cpu), 8);
    assert_eq!(e0, pass(b.epoch(0, &Device::Cpu), 8));
    assert_ne!(
        e0,
        pass(a.epoch(1, &Device::Cpu), 8),
        "epochs must reshuffle"
    );
    assert_ne!(e0, pass(c.epoch(0, &Device::Cpu), 8), "seeds must differ");
    assert_eq!(a.epoch_order(3), b.epoch_order(3));
}

#[test]
fn iter_advances_the_epoch_and_set_epoch_rewinds() {
    let data = indexed(40);
    let loader = DataLoader::new(&data, 16).unwrap().shuffle(3);
    let first = pass(loader.iter(&Device::Cpu), 16);
    let second = pass(loader.iter(&Device::Cpu), 16);
    assert_eq!(first, pass(loader.epoch(0, &Device::Cpu), 16));
    assert_eq!(second, pass(loader.epoch(1, &Device::Cpu), 16));
    assert_ne!(first, second);
    loader.set_epoch(0);
    assert_eq!(first, pass(loader.iter(&Device::Cpu), 16));
}

#[test]
fn drop_last_drops_only_the_short_batch() {
    let data = indexed(103);
    let loader = DataLoader::new(&data, 10)
        .unwrap()
        .shuffle(5)
        .drop_last(true);
    assert_eq!(loader.num_batches(), 10);
    let batches = pass(loader.epoch(0, &Device::Cpu), 10);
    assert_eq!(batches.len(), 10);
    assert!(batches.iter().all(|b| b.len() == 10));
    let distinct: BTreeSet<i32> = batches.concat().into_iter().collect();
    assert_eq!(distinct.len(), 100);
    // An exact multiple loses nothing.
    let even = indexed(30);
    let loader = DataLoader::new(&even, 10).unwrap().drop_last(true);
    assert_eq!(
        pass(loader.epoch(0, &Device::Cpu), 10).concat(),
        (0..30).collect::<Vec<_>>()
    );
    // A batch larger than the dataset gives nothing with drop_last, one batch without.
    assert_eq!(
        DataLoader::new(&even, 64)
            .unwrap()
            .drop_last(true)
            .epoch(0, &Device::Cpu)
            .count(),
        0
    );
    assert_eq!(DataLoader::new(&even, 64).unwrap().num_batches(), 1);
}

#[test]
fn without_shuffle_the_order_is_the_stored_one() {
    let data = indexed(25);
    let loader = DataLoader::new(&data, 4).unwrap();
    let batches = pass(loader.epoch(0, &Device::Cpu), 4);
    assert_eq!(batches[0], vec![0, 1, 2, 3]);
    assert_eq!(batches.last().unwrap(), &vec![24]);
    assert_eq!(batches.concat(), (0..25).collect::<Vec<_>>());
    assert_eq!(batches, pass(loader.epoch(9, &Device::Cpu), 4));
}

#[test]
fn batches_keep_multi_dimensional_sample_shapes_and_report_their_length() {
    let data = Dataset::new(
        (0..5 * 12).map(|v| v as f32).collect(),
        &[3, 4],
        vec![0, 1, 0, 1, 0],
    )
    .unwrap()
    .with_features_shape(&[1, 3, 4])
    .unwrap();
    let loader = DataLoader::new(&data, 2).unwrap();
    let mut batches = loader.epoch(0, &Device::Cpu);
    assert_eq!(batches.len(), 3);
    let (x, y) = batches.next().unwrap().unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(x.shape(), vec![2, 1, 3, 4]);
    assert_eq!(
        x.to_vec_f32().unwrap(),
        (0..24).map(|v| v as f32).collect::<Vec<_>>()
    );
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![0, 1]);
    assert_eq!(batches.next_indices(), Some(&[2, 3][..]));
    let (x, _) = batches.next().unwrap().unwrap();
    assert_eq!(x.shape(), vec![1, 1, 3, 4]);
    assert!(batches.next().is_none());
}

#[test]
fn zero_batch_size_is_rejected() {
    let data = indexed(3);
    let err = DataLoader::new(&data, 0).unwrap_err();
    assert!(err.to_string().contains("batch_size"), "{err}");
}

#[test]
fn empty_dataset_has_no_batches() {
    let data = indexed(0);
    let loader = DataLoader::new(&data, 4).unwrap().shuffle(1);
    assert_eq!(loader.num_batches(), 0);
    assert_eq!(loader.epoch(0, &Device::Cpu).count(), 0);
}

#[test]
fn dataset_validates_and_splits() {
    assert!(Dataset::new(vec![0.0; 5], &[2], vec![0, 1]).is_err());
    assert!(Dataset::new(vec![], &[0], vec![1]).is_err());
    let data = indexed(10);
    assert_eq!(
        (data.len(), data.features_shape(), data.sample_numel()),
        (10, &[3][..], 3)
    );
    assert_eq!(data.get(4), Some((&[4.0, 4.5, -4.0][..], 4)));
    assert_eq!(data.get(10), None);
    assert_eq!(data.num_classes(), 10);

    let (a, b) = data.split_at(7).unwrap();
    assert_eq!((a.len(), b.len()), (7, 3));
    assert_eq!(b.labels(), &[7, 8, 9]);
    assert_eq!(b.features()[..3], [7.0, 7.5, -7.0]);
    assert!(data.split_at(11).is_err());

    let (a, b) = data.split(0.25).unwrap();
    assert_eq!((a.len(), b.len()), (3, 7));
    assert!(data.split(1.5).is_err());
    assert!(data.split(f64::NAN).is_err());
    assert_eq!(data.split(1.0).unwrap().0, data);

    let s = data.shuffled(4);
    assert_ne!(s.labels(), data.labels());
    let mut labels = s.labels().to_vec();
    labels.sort_unstable();
    assert_eq!(labels, data.labels());
    for i in 0..s.len() {
        let (x, y) = s.get(i).unwrap();
        assert_eq!(
            x[0], y as f32,
            "shuffled must keep features with their label"
        );
    }

    let sub = data.subset(&[9, 0, 9]).unwrap();
    assert_eq!(sub.labels(), &[9, 0, 9]);
    assert!(data.subset(&[10]).is_err());
    assert!(data.clone().with_features_shape(&[4]).is_err());

    let counts = Dataset::new(vec![0.0; 6], &[1], vec![2, 0, 2, 2, -100, 0])
        .unwrap()
        .class_counts();
    assert_eq!(counts, vec![2, 0, 3]);
}

#[test]
fn gpu_batches_match_cpu_batches() {
    let Some(device) = gpu() else { return };
    let data = indexed(37);
    let loader = DataLoader::new(&data, 16).unwrap().shuffle(11);
    let on_gpu = loader.epoch(2, &device);
    let on_cpu = loader.epoch(2, &Device::Cpu);
    assert_eq!(on_gpu.len(), 3);
    for (g, c) in on_gpu.zip(on_cpu) {
        let ((gx, gy), (cx, cy)) = (g.unwrap(), c.unwrap());
        assert!(gx.device().is_gpu());
        assert_eq!(gx.shape(), cx.shape());
        assert_eq!(gy.dtype(), DType::I32);
        assert_eq!(gx.to_vec_f32().unwrap(), cx.to_vec_f32().unwrap());
        assert_eq!(gy.to_vec::<i32>().unwrap(), cy.to_vec::<i32>().unwrap());
    }
}
