//! Reader for MNIST (and Fashion-MNIST, KMNIST, ...) in the IDX format.
//!
//! The files may be gzip-compressed as downloaded (`train-images-idx3-ubyte.gz`)
//! or decompressed: a missing `train-images-idx3-ubyte` is looked for with a
//! `.gz` suffix, and gzip content is recognised by its magic bytes and
//! decompressed on the fly. Every error names the offending file and what
//! was expected of it.
//!
//! ```
//! use wgrad_nn::data::mnist;
//! // A one-image IDX file: magic, count, rows, cols (big-endian), pixels.
//! let dir = std::env::temp_dir().join(format!("wgrad-doc-mnist-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let mut images = Vec::new();
//! for word in [mnist::IMAGES_MAGIC, 1, 2, 2] {
//!     images.extend(word.to_be_bytes());
//! }
//! images.extend([0u8, 255, 51, 0]);
//! std::fs::write(dir.join("train-images-idx3-ubyte"), &images)?;
//! let mut labels = Vec::new();
//! for word in [mnist::LABELS_MAGIC, 1] {
//!     labels.extend(word.to_be_bytes());
//! }
//! labels.push(7);
//! std::fs::write(dir.join("train-labels-idx1-ubyte"), &labels)?;
//! let train = mnist::load(&dir, true)?; // pixels scaled to [0, 1]
//! assert_eq!(train.features(), &[0.0, 1.0, 0.2, 0.0]);
//! assert_eq!(train.labels(), &[7]);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use wgrad_core::{Error, Result};

use super::Dataset;

/// Magic number of an IDX file of unsigned bytes with 3 dimensions (images).
pub const IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX file of unsigned bytes with 1 dimension (labels).
pub const LABELS_MAGIC: u32 = 0x0000_0801;

const OP: &str = "mnist";

fn error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::invalid(OP, format!("{}: {message}", path.display()))
}

/// Largest decompressed IDX file accepted (the MNIST training images are
/// 47 MB), so that a corrupt or hostile `.gz` cannot exhaust memory.
const MAX_DECOMPRESSED: u64 = 1 << 32;

/// `path` with `.gz` appended.
fn gz_twin(path: &Path) -> PathBuf {
    let mut gz = path.as_os_str().to_owned();
    gz.push(".gz");
    PathBuf::from(gz)
}

/// Reads a whole IDX file, or its `.gz` twin when the file itself is
/// missing, decompressing gzip content; returns the path actually read
/// (for error messages) and the IDX bytes.
fn read(path: &Path) -> Result<(PathBuf, Vec<u8>)> {
    let gz = gz_twin(path);
    let (path, bytes) = match std::fs::read(path) {
        Ok(bytes) => (path.to_path_buf(), bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && gz.exists() => {
            let bytes = std::fs::read(&gz).map_err(|e| Error::io(OP, &gz, "cannot read", e))?;
            (gz, bytes)
        }
        Err(e) => {
            let context = format!("cannot read (nor is there a {} next to it)", gz.display());
            return Err(Error::io(OP, path, context, e));
        }
    };
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok((path, bytes));
    }
    let mut idx = Vec::new();
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut idx)
        .map_err(|e| Error::serialization(OP, &path, "cannot decompress its gzip data", e))?;
    if idx.len() as u64 > MAX_DECOMPRESSED {
        return Err(error(
            &path,
            format!("decompresses to more than {MAX_DECOMPRESSED} bytes"),
        ));
    }
    Ok((path, idx))
}

/// Checks the 4-byte magic number and the header length, returning the
/// `dims` big-endian sizes that follow it and the payload after them.
fn parse_header<'b>(
    path: &Path,
    bytes: &'b [u8],
    magic: u32,
    dims: usize,
) -> Result<(Vec<usize>, &'b [u8])> {
    let header = 4 + 4 * dims;
    if bytes.len() < 4 {
        return Err(error(
            path,
            format!(
                "truncated header: expected at least {header} bytes, found {}",
                bytes.len()
            ),
        ));
    }
    let be =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let found = be(0);
    if found != magic {
        return Err(error(
            path,
            format!("wrong magic number {found:#010x}, expected {magic:#010x}"),
        ));
    }
    if bytes.len() < header {
        return Err(error(
            path,
            format!(
                "truncated header: expected {header} bytes, found {}",
                bytes.len()
            ),
        ));
    }
    let sizes = (0..dims).map(|d| be(4 + 4 * d) as usize).collect();
    Ok((sizes, &bytes[header..]))
}

/// Checks that the payload holds exactly `expected` bytes.
fn check_payload(path: &Path, payload: &[u8], expected: usize, what: &str) -> Result<()> {
    if payload.len() < expected {
        return Err(error(
            path,
            format!(
                "truncated data: the header announces {what}, expected {expected} bytes, found {}",
                payload.len()
            ),
        ));
    }
    if payload.len() > expected {
        return Err(error(
            path,
            format!(
                "{} unexpected bytes after the data: the header announces {what}, expected {expected} bytes, found {}",
                payload.len() - expected,
                payload.len()
            ),
        ));
    }
    Ok(())
}

/// Reads an IDX image file (magic `0x00000803`; gzip-compressed or not, see
/// the [module docs](self)): returns the pixels scaled
/// to `[0, 1]` (row-major, image after image), `rows`, `cols` and the count.
pub fn load_idx_images(path: impl AsRef<Path>) -> Result<(Vec<f32>, usize, usize, usize)> {
    let (path, bytes) = read(path.as_ref())?;
    let path = path.as_path();
    let (sizes, payload) = parse_header(path, &bytes, IMAGES_MAGIC, 3)?;
    let (count, rows, cols) = (sizes[0], sizes[1], sizes[2]);
    let expected = count
        .checked_mul(rows)
        .and_then(|n| n.checked_mul(cols))
        .ok_or_else(|| error(path, format!("header sizes {count}x{rows}x{cols} overflow")))?;
    check_payload(
        path,
        payload,
        expected,
        &format!("{count} images of {rows}x{cols}"),
    )?;
    let pixels = payload.iter().map(|&b| f32::from(b) / 255.0).collect();
    Ok((pixels, rows, cols, count))
}

/// Reads an IDX label file (magic `0x00000801`; gzip-compressed or not):
/// one byte per label.
pub fn load_idx_labels(path: impl AsRef<Path>) -> Result<Vec<i32>> {
    let (path, bytes) = read(path.as_ref())?;
    let path = path.as_path();
    let (sizes, payload) = parse_header(path, &bytes, LABELS_MAGIC, 1)?;
    check_payload(path, payload, sizes[0], &format!("{} labels", sizes[0]))?;
    Ok(payload.iter().map(|&b| i32::from(b)).collect())
}

/// The file names of the training (`train-...`) or test (`t10k-...`) split.
fn file_names(train: bool) -> [&'static str; 2] {
    if train {
        ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
    } else {
        ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
    }
}

/// Where the files may be: `dir` itself, or torchvision's `MNIST/raw` and
/// `raw` sub-folders, so that an existing torchvision download works as is.
fn find_dir(dir: &Path, images: &str) -> PathBuf {
    let candidates = [
        dir.to_path_buf(),
        dir.join("MNIST").join("raw"),
        dir.join("raw"),
    ];
    for candidate in &candidates {
        let path = candidate.join(images);
        if path.exists() || gz_twin(&path).exists() {
            return candidate.clone();
        }
    }
    // Nothing found: report the plain directory, whose read error says what is missing.
    dir.to_path_buf()
}

/// Loads the MNIST training (`train = true`, 60 000 samples) or test split
/// (10 000) from `dir` as a [`Dataset`] of samples shaped `[rows * cols]`
/// (`[784]`) with labels `0..=9`.
///
/// Looks for `train-images-idx3-ubyte` / `train-labels-idx1-ubyte` (or the
/// `t10k-` pair), or the same names with `.gz` as downloaded, in `dir`,
/// `dir/MNIST/raw` or `dir/raw`. Use [`Dataset::with_features_shape`] for `[1, 28, 28]`.
pub fn load(dir: impl AsRef<Path>, train: bool) -> Result<Dataset> {
    let [images_name, labels_name] = file_names(train);
    let dir = find_dir(dir.as_ref(), images_name);
    let images_path = dir.join(images_name);
    let labels_path = dir.join(labels_name);
    let (pixels, rows, cols, count) = load_idx_images(&images_path)?;
    let labels = load_idx_labels(&labels_path)?;
    if labels.len() != count {
        return Err(Error::invalid(
            OP,
            format!(
                "image/label count mismatch: {} holds {count} images but {} holds {} labels",
                images_path.display(),
                labels_path.display(),
                labels.len()
            ),
        ));
    }
    Dataset::new(pixels, &[rows * cols], labels)
}
