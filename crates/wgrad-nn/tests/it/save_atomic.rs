//! Saving is atomic and durable and leaves nothing behind: a save writes
//! `.{name}.wgrad-tmp` next to its target and renames it over the target;
//! a stale one from an interrupted save is removed by the next save; the
//! target keeps its permissions (a new one gets `0o666` less the umask); a
//! symbolic link stays a link and the file it points to is replaced; a
//! failed save changes nothing; the bytes are exactly those of
//! `safetensors::serialize`.
#![cfg(unix)]

use std::collections::HashMap;
use std::fs::{File, Permissions};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use safetensors::tensor::TensorView;
use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
use wgrad_autograd::{Device, Error, Tensor};
use wgrad_core::DType;
use wgrad_nn::{Linear, Module, ReLU, Sequential, checkpoint, state_dict};

/// A fresh, empty directory for one test.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("save_atomic_tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The temporary file a save of `path` writes.
fn temp_of(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap().to_string_lossy();
    path.with_file_name(format!(".{name}.wgrad-tmp"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A small model whose parameters are all `value`.
fn model(value: f32) -> Sequential {
    let model = Sequential::new()
        .add(Linear::new(3, 4, true, &Device::Cpu).unwrap())
        .add(ReLU::new())
        .add(Linear::new(4, 2, true, &Device::Cpu).unwrap());
    for p in model.parameters() {
        let filled = Tensor::full(&p.shape(), value as f64, DType::F32, &Device::Cpu).unwrap();
        p.set_storage(filled.storage()).unwrap();
    }
    model
}

/// The value every parameter of the model saved at `path` holds.
fn saved_value(path: &Path) -> f32 {
    let loaded = model(0.0);
    state_dict::load(&loaded, path).unwrap();
    let values: Vec<f32> = loaded
        .parameters()
        .iter()
        .flat_map(|p| p.to_vec_f32().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] == w[1]), "{values:?}");
    values[0]
}

/// The message of a refused save: `InvalidArgument` for a path that names
/// no file to write, `Io` (whose `source()` is the operating system's
/// error) for a failure of the file system.
fn invalid<T: std::fmt::Debug>(result: wgrad_core::Result<T>) -> String {
    match result {
        Err(Error::InvalidArgument { message, .. }) => message,
        Err(e @ Error::Io { .. }) => {
            let source = std::error::Error::source(&e).expect("Error::Io has a source");
            assert!(source.downcast_ref::<std::io::Error>().is_some());
            e.to_string()
        }
        other => panic!("expected InvalidArgument or Io, got {other:?}"),
    }
}

#[test]
fn stale_temp_file_of_an_interrupted_save_is_removed_by_the_next_save() {
    let dir = scratch_dir("stale");
    let path = dir.join("model.safetensors");
    state_dict::save(&model(1.0), &path).unwrap();
    // What a save killed after writing most of its data leaves: a full-size
    // temporary file (read-only too, as one killed after copying the
    // target's permissions would be).
    let temp = temp_of(&path);
    std::fs::write(&temp, vec![0xAB; 1 << 20]).unwrap();
    std::fs::set_permissions(&temp, Permissions::from_mode(0o444)).unwrap();
    state_dict::save(&model(2.0), &path).unwrap();
    assert_eq!(entries(&dir), ["model.safetensors"]);
    assert_eq!(saved_value(&path), 2.0);
    // A save writes nothing else next to the target, and a stale file from a
    // save of a new (not yet existing) target goes too.
    let other = dir.join("new.safetensors");
    std::fs::write(temp_of(&other), b"half a file").unwrap();
    state_dict::save(&model(3.0), &other).unwrap();
    assert_eq!(entries(&dir), ["model.safetensors", "new.safetensors"]);
    // Checkpoints and optimizer files write the same way.
    let net = model(4.0);
    let opt = Adam::new(net.parameters(), AdamConfig::default()).unwrap();
    let ckpt = dir.join("ckpt.safetensors");
    std::fs::write(temp_of(&ckpt), vec![0; 4096]).unwrap();
    checkpoint::save(&ckpt, &net, &opt, 1).unwrap();
    let optim = dir.join("optim.safetensors");
    std::fs::write(temp_of(&optim), vec![0; 4096]).unwrap();
    checkpoint::save_optimizer(&opt, &optim).unwrap();
    assert_eq!(
        entries(&dir),
        [
            "ckpt.safetensors",
            "model.safetensors",
            "new.safetensors",
            "optim.safetensors"
        ]
    );
}

#[test]
fn a_stale_symlink_at_the_temp_name_is_removed_not_followed() {
    let dir = scratch_dir("stale_link");
    let path = dir.join("model.safetensors");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    symlink("victim.txt", temp_of(&path)).unwrap();
    state_dict::save(&model(1.0), &path).unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    assert_eq!(entries(&dir), ["model.safetensors", "victim.txt"]);
    assert_eq!(saved_value(&path), 1.0);
}

#[test]
fn saving_over_a_file_keeps_its_permissions() {
    let dir = scratch_dir("mode");
    let path = dir.join("model.safetensors");
    for want in [0o644, 0o640, 0o604, 0o444] {
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(want)).unwrap();
        state_dict::save(&model(1.0), &path).unwrap();
        assert_eq!(mode(&path), want, "mode {want:o} was not kept");
        assert_eq!(saved_value(&path), 1.0);
        std::fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    }
    // A checkpoint too.
    std::fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
    let net = model(2.0);
    let opt = Adam::new(net.parameters(), AdamConfig::default()).unwrap();
    checkpoint::save(&path, &net, &opt, 3).unwrap();
    assert_eq!(mode(&path), 0o640);
}

#[test]
fn a_new_file_gets_0666_less_the_umask() {
    let dir = scratch_dir("umask");
    // What the umask makes of 0o666: a file created the ordinary way.
    let probe = dir.join("probe");
    File::create(&probe).unwrap();
    let want = mode(&probe);
    assert_eq!(want & !0o666, 0, "{want:o}");
    let path = dir.join("model.safetensors");
    state_dict::save(&model(1.0), &path).unwrap();
    assert_eq!(mode(&path), want, "got {:o}, want {want:o}", mode(&path));
    let path = dir.join("tensors.safetensors");
    let t = Tensor::zeros(&[2], &Device::Cpu).unwrap();
    state_dict::save_file(&[("t".to_string(), t)], &path).unwrap();
    assert_eq!(mode(&path), want);
}

#[test]
fn saving_to_a_symlink_replaces_the_file_it_points_to() {
    let dir = scratch_dir("symlink");
    std::fs::create_dir(dir.join("runs")).unwrap();
    let real = dir.join("runs/model-v1.safetensors");
    state_dict::save(&model(1.0), &real).unwrap();
    std::fs::set_permissions(&real, Permissions::from_mode(0o640)).unwrap();
    // latest -> runs/model-v1.safetensors (relative), and a link to that link.
    let latest = dir.join("latest.safetensors");
    symlink("runs/model-v1.safetensors", &latest).unwrap();
    let alias = dir.join("alias.safetensors");
    symlink(&latest, &alias).unwrap();
    state_dict::save(&model(2.0), &latest).unwrap();
    assert!(latest.symlink_metadata().unwrap().is_symlink());
    assert_eq!(
        std::fs::read_link(&latest).unwrap(),
        Path::new("runs/model-v1.safetensors")
    );
    assert_eq!(saved_value(&real), 2.0);
    assert_eq!(mode(&real), 0o640);
    // Through two links.
    state_dict::save(&model(3.0), &alias).unwrap();
    assert!(alias.symlink_metadata().unwrap().is_symlink());
    assert!(latest.symlink_metadata().unwrap().is_symlink());
    assert_eq!(saved_value(&real), 3.0);
    // The temporary file went next to the real file, and is gone.
    assert_eq!(entries(&dir.join("runs")), ["model-v1.safetensors"]);
    assert_eq!(
        entries(&dir),
        ["alias.safetensors", "latest.safetensors", "runs"]
    );
    // A dangling link: the save creates the file it points to.
    let dangling = dir.join("next.safetensors");
    symlink("runs/model-v2.safetensors", &dangling).unwrap();
    state_dict::save(&model(4.0), &dangling).unwrap();
    assert!(dangling.symlink_metadata().unwrap().is_symlink());
    assert_eq!(saved_value(&dir.join("runs/model-v2.safetensors")), 4.0);
}

#[test]
fn a_symlink_loop_is_an_error_naming_the_path() {
    let dir = scratch_dir("loop");
    let a = dir.join("a.safetensors");
    let b = dir.join("b.safetensors");
    symlink(&b, &a).unwrap();
    symlink(&a, &b).unwrap();
    let msg = invalid(state_dict::save(&model(1.0), &a));
    assert!(msg.contains("a.safetensors"), "{msg}");
    assert!(msg.contains("symbolic link"), "{msg}");
}

#[test]
fn a_save_while_another_is_running_fails_and_changes_nothing() {
    let dir = scratch_dir("busy");
    let path = dir.join("model.safetensors");
    state_dict::save(&model(1.0), &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    // Another save holds the temporary file.
    let temp = temp_of(&path);
    let busy = File::create(&temp).unwrap();
    busy.lock().unwrap();
    let msg = invalid(state_dict::save(&model(2.0), &path));
    assert!(msg.contains("model.safetensors"), "{msg}");
    assert!(
        msg.contains("another save to the same path is in progress"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(temp.exists(), "the running save's file was removed");
    // Once it is gone (died: its lock is released), the next save cleans up.
    drop(busy);
    state_dict::save(&model(2.0), &path).unwrap();
    assert_eq!(entries(&dir), ["model.safetensors"]);
    assert_eq!(saved_value(&path), 2.0);
}

#[test]
fn concurrent_saves_to_one_path_never_mix() {
    let dir = scratch_dir("concurrent");
    let path = dir.join("model.safetensors");
    std::thread::scope(|s| {
        for value in 1..=4 {
            let path = &path;
            s.spawn(move || {
                let m = model(value as f32);
                for _ in 0..25 {
                    match state_dict::save(&m, path) {
                        Ok(()) => {}
                        Err(e @ Error::Io { .. })
                            if e.to_string().contains("in progress")
                                || e.to_string().contains("keep replacing") => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    assert!((1.0..=4.0).contains(&saved_value(&path)));
    assert_eq!(entries(&dir), ["model.safetensors"]);
}

#[test]
fn failed_saves_change_nothing_and_name_the_path() {
    let dir = scratch_dir("failed");
    // The target is a directory.
    let sub = dir.join("sub.safetensors");
    std::fs::create_dir(&sub).unwrap();
    let msg = invalid(state_dict::save(&model(1.0), &sub));
    assert!(msg.contains("sub.safetensors"), "{msg}");
    assert!(msg.contains("not a regular file"), "{msg}");
    assert!(sub.is_dir());
    // The directory does not exist.
    let missing = dir.join("no/such/dir/model.safetensors");
    let msg = invalid(state_dict::save(&model(1.0), &missing));
    assert!(msg.contains("no/such/dir/model.safetensors"), "{msg}");
    assert!(
        msg.contains("directory") && msg.contains("does not exist"),
        "{msg}"
    );
    // Duplicate names in save_file: refused before anything is written.
    let path = dir.join("tensors.safetensors");
    let t = Tensor::zeros(&[2], &Device::Cpu).unwrap();
    state_dict::save_file(&[("t".to_string(), t.clone())], &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let msg = invalid(state_dict::save_file(
        &[("x".to_string(), t.clone()), ("x".to_string(), t)],
        &path,
    ));
    assert!(msg.contains("tensor name 'x' appears twice"), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // A path naming no file.
    let msg = invalid(state_dict::save(&model(1.0), dir.join("..")));
    assert!(msg.contains("does not name a file"), "{msg}");
    assert_eq!(entries(&dir), ["sub.safetensors", "tensors.safetensors"]);
}

/// `safetensors::serialize` of `(name, dtype, shape, bytes)`.
fn reference(
    tensors: &[(&str, safetensors::Dtype, Vec<usize>, Vec<u8>)],
    metadata: Option<HashMap<String, String>>,
) -> Vec<u8> {
    let views: Vec<(&str, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (*n, TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize(views, metadata).unwrap()
}

#[test]
fn files_are_byte_for_byte_what_safetensors_serializes() {
    use safetensors::Dtype;
    let dir = scratch_dir("bytes");
    let f = Tensor::from_vec(vec![1.5f32, -2.0, 0.25], &[3], &Device::Cpu).unwrap();
    let i = Tensor::from_vec(vec![-7i32, 9], &[2, 1], &Device::Cpu).unwrap();
    let u = Tensor::from_vec(vec![3u32], &[], &Device::Cpu).unwrap();
    let e = Tensor::zeros(&[0, 4], &Device::Cpu).unwrap();
    let path = dir.join("mixed.safetensors");
    state_dict::save_file(
        &[
            ("z.u".to_string(), u),
            ("a.f".to_string(), f),
            ("m.i".to_string(), i),
            ("empty".to_string(), e),
        ],
        &path,
    )
    .unwrap();
    let le = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let want = reference(
        &[
            ("a.f", Dtype::F32, vec![3], {
                [1.5f32, -2.0, 0.25]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect()
            }),
            ("m.i", Dtype::I32, vec![2, 1], {
                [-7i32, 9].iter().flat_map(|x| x.to_le_bytes()).collect()
            }),
            ("z.u", Dtype::U32, vec![], le(&[3])),
            ("empty", Dtype::F32, vec![0, 4], vec![]),
        ],
        None,
    );
    assert_eq!(std::fs::read(&path).unwrap(), want);
    // A model's state_dict with its `format: pt` metadata.
    let net = model(0.5);
    let path = dir.join("model.safetensors");
    state_dict::save(&net, &path).unwrap();
    let params: Vec<(String, Vec<usize>, Vec<u8>)> = net
        .named_parameters()
        .into_iter()
        .map(|(n, p)| {
            let bytes = p
                .to_vec_f32()
                .unwrap()
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            (n, p.shape().to_vec(), bytes)
        })
        .collect();
    let tensors: Vec<_> = params
        .iter()
        .map(|(n, s, b)| (n.as_str(), Dtype::F32, s.clone(), b.clone()))
        .collect();
    let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        reference(&tensors, Some(meta))
    );
    // A checkpoint mixes I64 step counts with F32 data: it loads back.
    let mut opt = Adam::new(net.parameters(), AdamConfig::default()).unwrap();
    let x = Tensor::ones(&[2, 3], &Device::Cpu).unwrap();
    let loss = net
        .forward(&x)
        .unwrap()
        .square()
        .unwrap()
        .mean_all()
        .unwrap();
    loss.backward().unwrap();
    opt.step().unwrap();
    let ckpt = dir.join("ckpt.safetensors");
    checkpoint::save(&ckpt, &net, &opt, 5).unwrap();
    let bytes = std::fs::read(&ckpt).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(
        file.tensor("optim.state.0.step").unwrap().data(),
        1i64.to_le_bytes()
    );
    let fresh = model(0.0);
    let mut fresh_opt = Adam::new(fresh.parameters(), AdamConfig::default()).unwrap();
    assert_eq!(checkpoint::load(&ckpt, &fresh, &mut fresh_opt).unwrap(), 5);
}

/// Saves a large model in a loop until killed; a no-op unless the parent
/// test ([`killed_saves_leave_at_most_the_temp_file`]) runs it.
#[test]
fn child_saving_in_a_loop() {
    let Some(path) = std::env::var_os("WGRAD_SAVE_ATOMIC_CHILD") else {
        return;
    };
    let net = Linear::new(1024, 2048, true, &Device::Cpu).unwrap();
    eprintln!("child: saving");
    loop {
        state_dict::save(&net, &path).unwrap();
    }
}

#[test]
fn killed_saves_leave_at_most_the_temp_file() {
    let dir = scratch_dir("killed");
    let path = dir.join("big.safetensors");
    let temp_name = format!(".{}.wgrad-tmp", "big.safetensors");
    let exe = std::env::current_exe().unwrap();
    let mut saw_temp = false;
    let mut saw_saved = false;
    for round in 0..12u64 {
        let mut child = std::process::Command::new(&exe)
            // The child test's path in this binary (tests/it: module `save_atomic`).
            .args([
                "--exact",
                "save_atomic::child_saving_in_a_loop",
                "--test-threads=1",
            ])
            .env("WGRAD_SAVE_ATOMIC_CHILD", &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Kill -9 at assorted moments, mostly in the middle of a save.
        std::thread::sleep(std::time::Duration::from_millis(150 + 37 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        let names = entries(&dir);
        assert!(
            names
                .iter()
                .all(|n| n == "big.safetensors" || *n == temp_name),
            "round {round}: {names:?}"
        );
        saw_temp |= names.contains(&temp_name);
        saw_saved |= path.exists();
        if path.exists() {
            let m = Linear::new(1024, 2048, true, &Device::Cpu).unwrap();
            state_dict::load(&m, &path).unwrap();
        }
    }
    eprintln!("a kill left the temporary file behind: {saw_temp}");
    // Otherwise the child never ran (a filter that matches no test would
    // make every round above pass vacuously).
    assert!(
        saw_saved || saw_temp,
        "the child wrote nothing in 12 rounds: does `save_atomic::child_saving_in_a_loop` still name it?"
    );
    state_dict::save(&model(1.0), dir.join("small.safetensors")).unwrap();
    let net = Linear::new(1024, 2048, true, &Device::Cpu).unwrap();
    state_dict::save(&net, &path).unwrap();
    assert_eq!(entries(&dir), ["big.safetensors", "small.safetensors"]);
}
