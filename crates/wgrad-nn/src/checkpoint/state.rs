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

/// Sets every group's learning rate (and `initial_lr`) from `state`.
pub(super) fn set_lrs(opt: &mut dyn Optimizer, state: &OptimizerStateDict) {
    let groups = state.groups();
    let lrs: Vec<f64> = groups.iter().map(|g| g.config.lr()).collect();
    opt.set_group_lrs(&lrs);
    // Groups without a saved initial_lr keep theirs (as a file without
    // one always did).
    let initial: Vec<f64> = opt
        .group_initial_lrs()
        .into_iter()
        .zip(&groups)
        .map(|(mine, g)| g.initial_lr.or(mine).unwrap_or(g.config.lr()))
        .collect();
    if groups.iter().any(|g| g.initial_lr.is_some()) {
        opt.set_group_initial_lrs(&initial);
    }
}

/// The groups of an optimizer as [`ParamGroupState`]s (`wrap` makes each
/// group's hyper-parameters an [`OptimizerConfig`]).
pub(super) fn own_groups<C: Copy>(
    groups: &[ParamGroup<C>],
    wrap: impl Fn(C) -> OptimizerConfig,
) -> Vec<ParamGroupState> {
    groups
        .iter()
        .map(|g| ParamGroupState {
            config: wrap(g.config),
            initial_lr: g.initial_lr,
            num_params: g.params().len(),
        })
        .collect()
}

/// An [`OptimizerStateDict`] of `groups` (at least one) and `state`.
pub(super) fn state_dict(
    groups: Vec<ParamGroupState>,
    state: Vec<ParamState>,
) -> Result<OptimizerStateDict> {
    let first = groups
        .first()
        .ok_or_else(|| Error::invalid("state_dict", "the optimizer has no parameter group"))?;
    Ok(OptimizerStateDict {
        config: first.config,
        initial_lr: first.initial_lr,
        state,
        param_groups: groups,
    })
}

/// Each parameter's group hyper-parameters, in flat parameter order.
fn per_param(groups: &[ParamGroupState]) -> Vec<OptimizerConfig> {
    groups
        .iter()
        .flat_map(|g| std::iter::repeat_n(g.config, g.num_params))
        .collect()
}

/// The problems of `state`'s groups against the optimizer's `own` groups:
/// type, group count and sizes, hyper-parameters but the learning rate.
fn group_problems(own: &[ParamGroupState], state: &OptimizerStateDict) -> Vec<String> {
    let theirs = state.groups();
    let mut problems = Vec::new();
    let (Some(mine0), Some(theirs0)) = (own.first(), theirs.first()) else {
        return vec!["has no parameter group".to_string()];
    };
    if mine0.config.kind() != theirs0.config.kind() {
        problems.push(format!(
            "holds {} state, the optimizer is {}",
            theirs0.config.kind(),
            mine0.config.kind()
        ));
        return problems;
    }
    let sizes = |gs: &[ParamGroupState]| gs.iter().map(|g| g.num_params).collect::<Vec<_>>();
    // One group each: a size difference is a parameter count difference,
    // which the caller reports as such.
    if sizes(own) != sizes(&theirs) && (own.len() > 1 || theirs.len() > 1) {
        problems.push(format!(
            "has {} parameter group(s) of sizes {:?}, the optimizer has {} of sizes {:?}",
            theirs.len(),
            sizes(&theirs),
            own.len(),
            sizes(own)
        ));
        return problems;
    }
    for (g, (mine, theirs)) in own.iter().zip(&theirs).enumerate() {
        let pairs = mine
            .config
            .with_lr(theirs.config.lr())
            .metadata_pairs()
            .and_then(|m| Ok((m, theirs.config.metadata_pairs()?)));
        let (mine_pairs, theirs_pairs) = match pairs {
            Ok(p) => p,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let differing: Vec<String> = mine_pairs
            .into_iter()
            .zip(theirs_pairs)
            .filter(|((_, mine), (_, theirs))| mine != theirs)
            .map(|((key, mine), (_, theirs))| {
                format!("{key} = {theirs} (the optimizer has {mine})")
            })
            .collect();
        if !differing.is_empty() {
            let group = if own.len() > 1 {
                format!("param group {g}: ")
            } else {
                String::new()
            };
            problems.push(format!(
                "{group}hyper-parameters differ from the optimizer's: {}; build the optimizer with the saved ones",
                differing.join(", ")
            ));
        }
    }
    problems
}

/// Validates `state` against the optimizer (`own` groups over `params`)
/// and copies every buffer onto its parameter's device. `names` says which
/// buffers a parameter state must hold (given the parameter's group
/// hyper-parameters), in the order they are returned. Nothing is changed;
/// the caller installs the result.
pub(super) fn stage_state(
    params: &[Tensor],
    own: &[ParamGroupState],
    state: &OptimizerStateDict,
    names: impl Fn(&ParamState, &OptimizerConfig) -> std::result::Result<Vec<&'static str>, String>,
) -> Result<Vec<(Option<u64>, Vec<Tensor>)>> {
    const OP: &str = "load_state_dict";
    let mut problems = group_problems(own, state);
    if problems
        .iter()
        .any(|p| !p.contains("hyper-parameters differ"))
    {
        return fail_if_any(OP, MEMORY_SOURCE, problems).map(|()| Vec::new());
    }
    let configs = per_param(own);
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
    for (i, ((param, ps), config)) in params.iter().zip(&state.state).zip(&configs).enumerate() {
        let want = match names(ps, config) {
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
    let groups = sd.groups();
    let mut meta = sd
        .config
        .metadata_pairs()
        .map_err(|e| Error::invalid("save", e))?;
    meta.push((NUM_PARAMS_KEY.to_string(), sd.state.len().to_string()));
    if let Some(lr) = sd.initial_lr {
        meta.push((INITIAL_LR_KEY.to_string(), format!("{lr:?}")));
    }
    if groups.len() > 1 {
        let sizes: Vec<String> = groups.iter().map(|g| g.num_params.to_string()).collect();
        meta.push((NUM_GROUPS_KEY.to_string(), groups.len().to_string()));
        meta.push((
            GROUP_SIZES_KEY.to_string(),
            format!("[{}]", sizes.join(", ")),
        ));
        for (g, group) in groups.iter().enumerate().skip(1) {
            let prefix = format!("{GROUP_PREFIX}{g}.");
            meta.extend(
                group
                    .config
                    .hyper_pairs(&prefix)
                    .map_err(|e| Error::invalid("save", e))?,
            );
            if let Some(lr) = group.initial_lr {
                meta.push((format!("{prefix}initial_lr"), format!("{lr:?}")));
            }
        }
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
    let initial_lr = optional_float(meta, INITIAL_LR_KEY).map_err(&fail)?;
    let param_groups = decode_groups(meta, config, initial_lr, count).map_err(&fail)?;
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
        param_groups,
    })
}

/// The float under metadata `key`, if there is one.
fn optional_float(
    meta: &HashMap<String, String>,
    key: &str,
) -> std::result::Result<Option<f64>, String> {
    meta.get(key)
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .map_err(|_| format!("metadata '{key}' = {v:?} is not a number"))
        })
        .transpose()
}

/// The parameter groups of a file: one (`first`, over all `count`
/// parameters) unless `optim.num_groups` says more.
fn decode_groups(
    meta: &HashMap<String, String>,
    first: OptimizerConfig,
    initial_lr: Option<f64>,
    count: usize,
) -> std::result::Result<Vec<ParamGroupState>, String> {
    let Some(n) = meta.get(NUM_GROUPS_KEY) else {
        return Ok(vec![ParamGroupState {
            config: first,
            initial_lr,
            num_params: count,
        }]);
    };
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("metadata '{NUM_GROUPS_KEY}' = {n:?} is not a count"))?;
    let sizes_text = meta
        .get(GROUP_SIZES_KEY)
        .ok_or_else(|| format!("metadata lacks '{GROUP_SIZES_KEY}'"))?;
    let sizes: Vec<usize> = sizes_text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|x| x.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            format!("metadata '{GROUP_SIZES_KEY}' = {sizes_text:?} is not a list of counts")
        })?;
    if sizes.len() != n || sizes.iter().sum::<usize>() != count {
        return Err(format!(
            "metadata '{GROUP_SIZES_KEY}' = {sizes_text:?} does not split {count} parameter(s) into {n} group(s)"
        ));
    }
    sizes
        .iter()
        .enumerate()
        .map(|(g, &num_params)| {
            if g == 0 {
                return Ok(ParamGroupState {
                    config: first,
                    initial_lr,
                    num_params,
                });
            }
            let prefix = format!("{GROUP_PREFIX}{g}.");
            Ok(ParamGroupState {
                config: OptimizerConfig::from_metadata_with(meta, &prefix, first.kind())?,
                initial_lr: optional_float(meta, &format!("{prefix}initial_lr"))?,
                num_params,
            })
        })
        .collect()
}
