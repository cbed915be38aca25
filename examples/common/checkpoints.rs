//! `--save FILE`: a training checkpoint after every epoch and the best
//! epoch's weights.
//!
//! `FILE` is a wgrad checkpoint ([`wgrad::nn::checkpoint::save`]: the
//! model's state_dict, the optimizer's state and the number of epochs done),
//! replaced atomically each time, so a run can resume from it. The best
//! epoch's weights go to `FILE` with `.best` before the extension
//! (`run.safetensors` -> `run.best.safetensors`) as a plain state_dict
//! ([`wgrad::nn::state_dict::save`]), which PyTorch's
//! `model.load_state_dict(safetensors.torch.load_file(path))` reads.

use std::path::{Path, PathBuf};

use wgrad::nn::checkpoint::{self, OptimizerCheckpoint};
use wgrad::nn::{Module, state_dict};
use wgrad::prelude::*;

/// Where `--save` writes.
pub struct Checkpoints {
    path: PathBuf,
    best_path: PathBuf,
}

impl Checkpoints {
    /// `None` without `--save`.
    pub fn new(path: Option<&Path>) -> Option<Checkpoints> {
        let path = path?.to_path_buf();
        Some(Checkpoints {
            best_path: best_path(&path),
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn best_path(&self) -> &Path {
        &self.best_path
    }

    /// Writes the checkpoint after `done` epochs (or steps) and, when this
    /// one is the best so far, the weights to the best file.
    pub fn save(
        &self,
        model: &dyn Module,
        opt: &dyn OptimizerCheckpoint,
        done: u64,
        is_best: bool,
    ) -> Result<()> {
        checkpoint::save(&self.path, model, opt, done)?;
        if is_best {
            state_dict::save(model, &self.best_path)?;
        }
        Ok(())
    }
}

/// `dir/run.safetensors` -> `dir/run.best.safetensors` (`run` -> `run.best`).
pub fn best_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.best.{}", ext.to_string_lossy()),
        None => format!("{stem}.best"),
    };
    path.with_file_name(name)
}
