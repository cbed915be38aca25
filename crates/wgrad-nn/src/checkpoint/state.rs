//! The internals of [`checkpoint`](super): optimizer state as
//! [`ParamState`]s and back, staging incoming state tensors, and the
//! encoding of an [`OptimizerStateDict`] into safetensors entries.

use super::*;

/// A copy of a state buffer that later in-place steps leave alone.
pub(super) fn snapshot(t: &Tensor) -> Result<Tensor> {
    copy_to_device(t, &t.device())
}

/// Adam's state as [`ParamState`]s (snapshots of the buffers).
pub(super) fn adam_export(state: &[Option<AdamState>]) -> Result<Vec<ParamState>> {
    state
        .iter()
        .map(|slot| {
            let Some(s) = slot else {
                return Ok(ParamState::default());
            };
            let mut buffers = vec![
                ("exp_avg".to_string(), snapshot(&s.exp_avg)?),
                ("exp_avg_sq".to_string(), snapshot(&s.exp_avg_sq)?),
            ];
            if let Some(m) = &s.max_exp_avg_sq {
                buffers.push(("max_exp_avg_sq".to_string(), snapshot(m)?));
            }
            Ok(ParamState {
                step: Some(s.step),
                buffers,
            })
        })
        .collect()
}

/// The buffers an Adam parameter state must have: none before the first
/// step, the two moments after it, plus the running maximum with amsgrad.
pub(super) fn adam_names(
    ps: &ParamState,
    amsgrad: bool,
) -> std::result::Result<Vec<&'static str>, String> {
    Ok(match (ps.step, amsgrad) {
        (None, _) => vec![],
        (Some(_), false) => vec!["exp_avg", "exp_avg_sq"],
        (Some(_), true) => vec!["exp_avg", "exp_avg_sq", "max_exp_avg_sq"],
    })
}

/// Installs staged Adam buffers (in [`adam_names`] order).
pub(super) fn adam_import(
    slots: &mut [Option<AdamState>],
    staged: Vec<(Option<u64>, Vec<Tensor>)>,
) {
    for (slot, (step, buffers)) in slots.iter_mut().zip(staged) {
        let mut it = buffers.into_iter();
        *slot = match (step, it.next(), it.next()) {
            (Some(step), Some(exp_avg), Some(exp_avg_sq)) => Some(AdamState {
                step,
                exp_avg,
                exp_avg_sq,
                max_exp_avg_sq: it.next(),
            }),
            _ => None,
        };
    }
}

/// Sets the learning rate (and `initial_lr`) from `state`.
pub(super) fn set_lrs(opt: &mut dyn Optimizer, state: &OptimizerStateDict) {
    opt.set_lr(state.config.lr());
    if let Some(lr) = state.initial_lr {
        opt.set_initial_lr(lr);
    }
}

/// Validates `state` against the optimizer (`own` hyper-parameters over
/// `params`) and copies every buffer onto its parameter's device. `names`
/// says which buffers a parameter state must hold, in the order they are
/// returned. Nothing is changed; the caller installs the result.
pub(super) fn stage_state(
    params: &[Tensor],
    own: OptimizerConfig,
    state: &OptimizerStateDict,
    names: impl Fn(&ParamState) -> std::result::Result<Vec<&'static str>, String>,
) -> Result<Vec<(Option<u64>, Vec<Tensor>)>> {
    const OP: &str = "load_state_dict";
    let mut problems = Vec::new();
    if own.kind() != state.config.kind() {
        problems.push(format!(
            "holds {} state, the optimizer is {}",
            state.config.kind(),
            own.kind()
        ));
        return fail_if_any(OP, MEMORY_SOURCE, problems).map(|()| Vec::new());
    }
    let differing: Vec<String> = own
        .with_lr(state.config.lr())
        .metadata_pairs()
        .into_iter()
        .zip(state.config.metadata_pairs())
        .filter(|((_, mine), (_, theirs))| mine != theirs)
        .map(|((key, mine), (_, theirs))| format!("{key} = {theirs} (the optimizer has {mine})"))
        .collect();
    if !differing.is_empty() {
        problems.push(format!(
            "hyper-parameters differ from the optimizer's: {}; build the optimizer with the saved ones",
            differing.join(", ")
        ));
    }
    if state.state.len() != params.len() {
        problems.push(format!(
            "has state for {} parameter(s), the optimizer has {}",
            state.state.len(),
            params.len()
        ));
        return fail_if_any(OP, MEMORY_SOURCE, problems).map(|()| Vec::new());
    }
    // Check every buffer of every parameter with the state_dict rules
    // (exact names, F32, the parameter's shape), named as in the file.
    let mut expected = Vec::new();
    let mut incoming = Vec::new();
    let mut wanted = Vec::with_capacity(params.len());
    for (i, (param, ps)) in params.iter().zip(&state.state).enumerate() {
        let want = match names(ps) {
            Ok(w) => w,
            Err(e) => {
                problems.push(format!("parameter {i}: {e}"));
                Vec::new()
            }
        };
        expected.extend(
            want.iter()
                .map(|n| (format!("{STATE_PREFIX}{i}.{n}"), param.clone())),
        );
        incoming.extend(
            ps.buffers
                .iter()
                .map(|(n, t)| (format!("{STATE_PREFIX}{i}.{n}"), Incoming::Memory(t))),
        );
        wanted.push(want);
    }
    problems.extend(entry_problems(&expected, &incoming));
    fail_if_any(OP, MEMORY_SOURCE, problems)?;
    params
        .iter()
        .zip(&state.state)
        .zip(wanted)
        .map(|((param, ps), want)| {
            let device = param.device();
            let buffers = want
                .iter()
                .map(|n| {
                    let (_, t) = ps
                        .buffers
                        .iter()
                        .find(|(name, _)| name == n)
                        .ok_or_else(|| Error::invalid(OP, format!("missing buffer {n}")))?;
                    copy_to_device(t, &device)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((ps.step, buffers))
        })
        .collect()
}

/// Calls `load_optimizer_state_dict`, naming the file in its errors.
pub(super) fn load_into(
    opt: &mut dyn OptimizerCheckpoint,
    sd: &OptimizerStateDict,
    label: &str,
) -> Result<()> {
    opt.load_optimizer_state_dict(sd).map_err(|e| match e {
        Error::InvalidArgument { message, .. } => Error::InvalidArgument {
            op: "load",
            message: format!("{label}: {message}"),
        },
        other => other,
    })
}

/// The optimizer part of a file: encoded tensors and metadata pairs.
pub(super) type OptimizerPart = (Vec<(String, Encoded)>, Vec<(String, String)>);

/// Encodes the optimizer part of a file: its tensors and `optim.*` metadata.
pub(super) fn encode_optimizer(sd: &OptimizerStateDict) -> Result<OptimizerPart> {
    let mut meta = sd.config.metadata_pairs();
    meta.push((NUM_PARAMS_KEY.to_string(), sd.state.len().to_string()));
    if let Some(lr) = sd.initial_lr {
        meta.push((INITIAL_LR_KEY.to_string(), format!("{lr:?}")));
    }
    let mut tensors = Vec::new();
    for (i, ps) in sd.state.iter().enumerate() {
        if let Some(step) = ps.step {
            let step = i64::try_from(step).map_err(|_| {
                Error::invalid("save", format!("step count {step} does not fit an I64"))
            })?;
            tensors.push((
                format!("{STATE_PREFIX}{i}.step"),
                (Dtype::I64, Vec::new(), step.to_le_bytes().to_vec()),
            ));
        }
        for (name, t) in &ps.buffers {
            tensors.push((format!("{STATE_PREFIX}{i}.{name}"), encode(t)?));
        }
    }
    Ok((tensors, meta))
}

/// Rebuilds an [`OptimizerStateDict`] (buffers on the CPU) from a file's
/// `optim.*` metadata and tensors, checking the layout, for an optimizer
/// over `num_params` parameters.
pub(super) fn decode_optimizer(
    label: &str,
    meta: &HashMap<String, String>,
    tensors: &[(String, TensorView<'_>)],
    num_params: usize,
) -> Result<OptimizerStateDict> {
    const OP: &str = "load";
    let fail = |problem: String| Error::invalid(OP, format!("{label}: {problem}"));
    let config = OptimizerConfig::from_metadata(meta).map_err(fail)?;
    let count_text = meta.get(NUM_PARAMS_KEY);
    let count: usize = count_text
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| {
            fail(format!(
                "metadata '{NUM_PARAMS_KEY}' = {count_text:?} is not a count"
            ))
        })?;
    // Checked before anything is allocated for `count` parameters.
    if count != num_params {
        return Err(fail(format!(
            "{MEMORY_SOURCE}: has state for {count} parameter(s), the optimizer has {num_params}"
        )));
    }
    let initial_lr = match meta.get(INITIAL_LR_KEY) {
        None => None,
        Some(v) => Some(v.trim().parse::<f64>().map_err(|_| {
            fail(format!(
                "metadata '{INITIAL_LR_KEY}' = {v:?} is not a number"
            ))
        })?),
    };
    let mut state = vec![ParamState::default(); count];
    let mut problems = Vec::new();
    for (name, view) in tensors {
        if !is_optimizer_name(name) {
            continue;
        }
        let parsed = name
            .strip_prefix(STATE_PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .and_then(|(i, buf)| Some((i.parse::<usize>().ok()?, buf)));
        let Some((i, buf)) = parsed.filter(|(i, _)| *i < count) else {
            problems.push(format!(
                "unexpected optimizer tensor '{name}' (expected {STATE_PREFIX}{{i}}.{{name}} with i < {count})"
            ));
            continue;
        };
        if buf == "step" {
            match (view.dtype(), view.shape(), view.data()) {
                (Dtype::I64, [] | [1], bytes) if bytes.len() == 8 => {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(bytes);
                    match u64::try_from(i64::from_le_bytes(word)) {
                        Ok(step) => state[i].step = Some(step),
                        Err(_) => {
                            problems.push(format!("tensor '{name}' is a negative step count"))
                        }
                    }
                }
                (dtype, shape, _) => problems.push(format!(
                    "tensor '{name}' has dtype {dtype} and shape {shape:?}, expected an I64 scalar"
                )),
            }
        } else if let Some(problem) = Incoming::File(view.clone()).dtype_problem(name, DType::F32) {
            problems.push(problem);
        } else {
            // F64, F16 and BF16 buffers become F32, as the model's tensors
            // do (PyTorch's `optimizer.load_state_dict` casts state to the
            // parameter's dtype).
            let storage =
                Incoming::File(view.clone()).to_storage(name, &Device::Cpu, DType::F32)?;
            state[i]
                .buffers
                .push((buf.to_string(), Tensor::from_storage_leaf(storage)));
        }
    }
    fail_if_any(OP, label, problems)?;
    Ok(OptimizerStateDict {
        config,
        initial_lr,
        state,
    })
}
