//! IDX reading: round trips through small files and every error case.

use std::path::{Path, PathBuf};

use wgrad_nn::data::mnist::{load, load_idx_images, load_idx_labels};

/// A fresh, empty directory for one test (removed on drop).
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("wgrad-mnist-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn images_bytes(count: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut bytes = 0x0803u32.to_be_bytes().to_vec();
    for v in [count, rows, cols] {
        bytes.extend(v.to_be_bytes());
    }
    bytes.extend(pixels);
    bytes
}

fn labels_bytes(count: u32, labels: &[u8]) -> Vec<u8> {
    let mut bytes = 0x0801u32.to_be_bytes().to_vec();
    bytes.extend(count.to_be_bytes());
    bytes.extend(labels);
    bytes
}

/// Three 2x4 images whose pixels are 0, 10, 20, ... and labels 7, 0, 9.
fn write_split(dir: &Path, prefix: &str) -> Vec<u8> {
    let pixels: Vec<u8> = (0..24).map(|v| (v * 10) as u8).collect();
    std::fs::write(
        dir.join(format!("{prefix}-images-idx3-ubyte")),
        images_bytes(3, 2, 4, &pixels),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{prefix}-labels-idx1-ubyte")),
        labels_bytes(3, &[7, 0, 9]),
    )
    .unwrap();
    pixels
}

/// The message of a failed load: `InvalidArgument` for bad contents, `Io`
/// for a file that cannot be read and `Serialization` for gzip data that
/// does not decompress (those two with their `source()`), all from op
/// `mnist`.
fn message(result: wgrad_core::Result<impl std::fmt::Debug>) -> String {
    use wgrad_core::Error;
    let err = result.unwrap_err();
    match &err {
        Error::InvalidArgument { op: "mnist", .. } => {}
        Error::Io { op: "mnist", .. } | Error::Serialization { op: "mnist", .. } => {
            assert!(std::error::Error::source(&err).is_some(), "{err:?}");
        }
        _ => panic!("unexpected error {err:?}"),
    }
    err.to_string()
}

#[test]
fn idx_round_trip() {
    let dir = TempDir::new("round-trip");
    let pixels = write_split(dir.path(), "train");
    let (values, rows, cols, count) =
        load_idx_images(dir.path().join("train-images-idx3-ubyte")).unwrap();
    assert_eq!((rows, cols, count), (2, 4, 3));
    let want: Vec<f32> = pixels.iter().map(|&b| f32::from(b) / 255.0).collect();
    assert_eq!(values, want);
    assert_eq!(
        load_idx_labels(dir.path().join("train-labels-idx1-ubyte")).unwrap(),
        vec![7, 0, 9]
    );

    let data = load(dir.path(), true).unwrap();
    assert_eq!((data.len(), data.features_shape()), (3, &[8][..]));
    assert_eq!(data.labels(), &[7, 0, 9]);
    assert_eq!(data.features(), &want[..]);
    // The test split reads the t10k- files.
    assert!(message(load(dir.path(), false)).contains("t10k-images-idx3-ubyte"));
    write_split(dir.path(), "t10k");
    assert_eq!(load(dir.path(), false).unwrap().len(), 3);
}

#[test]
fn full_scale_values_and_torchvision_layout() {
    let dir = TempDir::new("layout");
    let raw = dir.path().join("MNIST").join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(
        raw.join("train-images-idx3-ubyte"),
        images_bytes(1, 1, 3, &[0, 255, 128]),
    )
    .unwrap();
    std::fs::write(raw.join("train-labels-idx1-ubyte"), labels_bytes(1, &[3])).unwrap();
    let data = load(dir.path(), true).unwrap();
    assert_eq!(data.features(), &[0.0, 1.0, 128.0 / 255.0]);
    assert_eq!(data.labels(), &[3]);
}

#[test]
fn missing_file_names_it_and_its_gz_twin() {
    let dir = TempDir::new("missing");
    let msg = message(load(dir.path(), true));
    assert!(
        msg.contains("train-images-idx3-ubyte") && msg.contains("train-images-idx3-ubyte.gz"),
        "{msg}"
    );
    // With only a (corrupt) .gz present, the error names it.
    std::fs::write(
        dir.path().join("train-images-idx3-ubyte.gz"),
        [0x1f, 0x8b, 8, 0],
    )
    .unwrap();
    let msg = message(load(dir.path(), true));
    assert!(
        msg.contains("train-images-idx3-ubyte.gz") && msg.contains("gzip"),
        "{msg}"
    );
    // Images present but labels missing: the labels file is named.
    std::fs::remove_file(dir.path().join("train-images-idx3-ubyte.gz")).unwrap();
    write_split(dir.path(), "train");
    std::fs::remove_file(dir.path().join("train-labels-idx1-ubyte")).unwrap();
    assert!(message(load(dir.path(), true)).contains("train-labels-idx1-ubyte"));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn gzip_files_as_downloaded_are_read() {
    let dir = TempDir::new("gzip");
    let plain = TempDir::new("gzip-plain");
    let pixels = write_split(plain.path(), "train");
    // Only the `.gz` files, as the MNIST mirrors serve them.
    for name in ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"] {
        let bytes = std::fs::read(plain.path().join(name)).unwrap();
        std::fs::write(dir.path().join(format!("{name}.gz")), gzip(&bytes)).unwrap();
    }
    let data = load(dir.path(), true).unwrap();
    let want: Vec<f32> = pixels.iter().map(|&b| f32::from(b) / 255.0).collect();
    assert_eq!(data.features(), &want[..]);
    assert_eq!(data.labels(), &[7, 0, 9]);

    // Gzip content under the plain name is recognised too.
    let path = dir.path().join("labels");
    std::fs::write(&path, gzip(&labels_bytes(2, &[4, 2]))).unwrap();
    assert_eq!(load_idx_labels(&path).unwrap(), vec![4, 2]);

    // Corrupt gzip data: the error names the file and the gzip problem.
    std::fs::write(
        &path,
        [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6],
    )
    .unwrap();
    let msg = message(load_idx_images(&path));
    assert!(
        msg.contains("gzip") && msg.contains(&path.display().to_string()),
        "{msg}"
    );
}

#[test]
fn wrong_magic_numbers() {
    let dir = TempDir::new("magic");
    write_split(dir.path(), "train");
    let labels = dir.path().join("train-labels-idx1-ubyte");
    let images = dir.path().join("train-images-idx3-ubyte");
    let msg = message(load_idx_images(&labels));
    assert!(
        msg.contains("0x00000801") && msg.contains("expected 0x00000803"),
        "{msg}"
    );
    assert!(msg.contains(&labels.display().to_string()), "{msg}");
    let msg = message(load_idx_labels(&images));
    assert!(
        msg.contains("0x00000803") && msg.contains("expected 0x00000801"),
        "{msg}"
    );
}

#[test]
fn truncated_and_oversized_files() {
    let dir = TempDir::new("truncated");
    let path = dir.path().join("images");
    std::fs::write(&path, images_bytes(3, 2, 4, &[0; 20])).unwrap();
    let msg = message(load_idx_images(&path));
    assert!(
        msg.contains("truncated") && msg.contains("expected 24 bytes, found 20"),
        "{msg}"
    );
    assert!(msg.contains("3 images of 2x4"), "{msg}");

    std::fs::write(&path, images_bytes(1, 2, 2, &[0; 6])).unwrap();
    let msg = message(load_idx_images(&path));
    assert!(msg.contains("expected 4 bytes, found 6"), "{msg}");

    std::fs::write(&path, &images_bytes(3, 2, 4, &[])[..10]).unwrap();
    let msg = message(load_idx_images(&path));
    assert!(
        msg.contains("header") && msg.contains("expected 16 bytes, found 10"),
        "{msg}"
    );

    std::fs::write(&path, [0u8, 0]).unwrap();
    assert!(message(load_idx_images(&path)).contains("found 2"));

    let labels = dir.path().join("labels");
    std::fs::write(&labels, labels_bytes(5, &[1, 2, 3])).unwrap();
    let msg = message(load_idx_labels(&labels));
    assert!(
        msg.contains("expected 5 bytes, found 3") && msg.contains("labels"),
        "{msg}"
    );
}

#[test]
fn image_and_label_counts_must_match() {
    let dir = TempDir::new("count");
    write_split(dir.path(), "train");
    std::fs::write(
        dir.path().join("train-labels-idx1-ubyte"),
        labels_bytes(2, &[1, 2]),
    )
    .unwrap();
    let msg = message(load(dir.path(), true));
    assert!(
        msg.contains("mismatch") && msg.contains("3 images") && msg.contains("2 labels"),
        "{msg}"
    );
}
