//! `torch.einsum`: Einstein summation over labelled dims, composed from
//! views, sums and batched products (so it runs on either device and
//! differentiates through their rules).
//!
//! The operands are combined left to right. Before each product, the
//! labels no later operand or the output needs are summed out. The
//! product then groups the labels into batch (in both operands and still
//! needed), contracted (in both, no longer needed) and kept-from-one-side
//! labels, so each pairwise step is one `[B, M, K] @ [B, K, N]` product.
//! A label repeated within one operand takes that operand's diagonal.

use std::collections::BTreeMap;

use wgrad_core::{Error, Result};

use crate::tensor::Tensor;

const OP: &str = "einsum";

/// A dim's label: a letter (`A`-`Z` sort before `a`-`z`, as PyTorch orders
/// an implicit output) or the `k`-th dim of the ellipsis, counted from the
/// left of the widest ellipsis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    Ellipsis(usize),
    Letter(u8),
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Label::Letter(r) if r < 26 => write!(f, "'{}'", (b'A' + r) as char),
            Label::Letter(r) => write!(f, "'{}'", (b'a' + r - 26) as char),
            Label::Ellipsis(k) => write!(f, "ellipsis dim {k}"),
        }
    }
}

/// One term of the equation: its letters, with the ellipsis's position.
struct Term {
    before: Vec<u8>,
    ellipsis: bool,
    after: Vec<u8>,
}

fn letter_rank(c: u8) -> u8 {
    if c.is_ascii_uppercase() {
        c - b'A'
    } else {
        26 + (c - b'a')
    }
}

fn parse_term(text: &str) -> Result<Term> {
    let (before, after, ellipsis) = match text.find("...") {
        Some(at) => (&text[..at], &text[at + 3..], true),
        None => (text, "", false),
    };
    let letters = |part: &str| -> Result<Vec<u8>> {
        part.bytes()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(letter_rank(c))
                } else {
                    Err(Error::invalid(
                        OP,
                        format!(
                            "invalid subscript {:?} in {text:?}: subscripts must be letters in [a-zA-Z] or one ellipsis",
                            c as char
                        ),
                    ))
                }
            })
            .collect()
    };
    Ok(Term {
        before: letters(before)?,
        ellipsis,
        after: letters(after)?,
    })
}

/// The labels of a term for an operand of `rank` dims, the ellipsis
/// spanning its dims right-aligned within `width` ellipsis dims.
fn labels_of(term: &Term, rank: usize, width: usize, which: &str) -> Result<Vec<Label>> {
    let named = term.before.len() + term.after.len();
    let letters = |v: &[u8]| v.iter().map(|&c| Label::Letter(c)).collect::<Vec<_>>();
    if !term.ellipsis {
        if named != rank {
            return Err(Error::invalid(
                OP,
                format!("{which} has {named} subscripts but {rank} dims"),
            ));
        }
        return Ok(letters(&term.before));
    }
    if named > rank {
        return Err(Error::invalid(
            OP,
            format!("{which} has {named} subscripts besides its ellipsis but only {rank} dims"),
        ));
    }
    let spanned = rank - named;
    let mut out = letters(&term.before);
    out.extend((width - spanned..width).map(Label::Ellipsis));
    out.extend(letters(&term.after));
    Ok(out)
}

/// A tensor with one label per dim.
struct Labelled {
    t: Tensor,
    labels: Vec<Label>,
}

impl Labelled {
    fn axis(&self, l: Label) -> Option<usize> {
        self.labels.iter().position(|&x| x == l)
    }

    /// Takes the diagonal of every label repeated in this operand.
    fn diagonals(mut self) -> Result<Self> {
        while let Some((p, q)) = repeated(&self.labels) {
            let shape = self.t.shape();
            let n = shape[p];
            if shape[q] != n {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "subscript {} is repeated for dims of sizes {n} and {} of one operand",
                        self.labels[p], shape[q]
                    ),
                ));
            }
            // Move p and q last, flatten them, and step through the n x n
            // block n + 1 at a time.
            let rank = self.labels.len();
            let mut order: Vec<usize> = (0..rank).filter(|&a| a != p && a != q).collect();
            order.extend([p, q]);
            let moved = self
                .t
                .permute(&order.iter().map(|&a| a as isize).collect::<Vec<_>>())?;
            let mut flat: Vec<isize> = order[..rank - 2]
                .iter()
                .map(|&a| shape[a] as isize)
                .collect();
            flat.push((n * n) as isize);
            let diag = moved.reshape(&flat)?.slice(-1, Some(0), None, n + 1)?;
            let mut labels: Vec<Label> =
                order[..rank - 2].iter().map(|&a| self.labels[a]).collect();
            labels.push(self.labels[p]);
            self = Labelled { t: diag, labels };
        }
        Ok(self)
    }

    /// Sums out the labels `keep` rejects.
    fn sum_unless(self, keep: impl Fn(Label) -> bool) -> Result<Self> {
        let gone: Vec<isize> = (0..self.labels.len())
            .filter(|&a| !keep(self.labels[a]))
            .map(|a| a as isize)
            .collect();
        if gone.is_empty() {
            return Ok(self);
        }
        let labels = self.labels.iter().copied().filter(|&l| keep(l)).collect();
        Ok(Labelled {
            t: self.t.sum(&gone, false)?,
            labels,
        })
    }

    /// This operand's dims reordered as `order` and flattened into groups
    /// of the given lengths (`[B, M, K]` for a product).
    fn grouped(
        &self,
        order: &[Label],
        groups: &[usize],
        sizes: &BTreeMap<Label, usize>,
    ) -> Result<Tensor> {
        let perm: Vec<isize> = order
            .iter()
            .map(|&l| self.axis(l).map(|a| a as isize))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::invalid(OP, "internal: a label went missing"))?;
        let moved = self.t.permute(&perm)?;
        let mut shape = Vec::with_capacity(groups.len());
        let mut at = 0;
        for &g in groups {
            shape.push(
                order[at..at + g]
                    .iter()
                    .map(|l| sizes[l])
                    .product::<usize>() as isize,
            );
            at += g;
        }
        moved.reshape(&shape)
    }
}

fn repeated(labels: &[Label]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|p| {
        (p + 1..labels.len())
            .find(|&q| labels[q] == labels[p])
            .map(|q| (p, q))
    })
}

impl Tensor {
    /// `torch.einsum(equation, *operands)`: letters label dims (`"ij,jk->ik"`
    /// is a matrix product, `"bhqd,bhkd->bhqk"` attention scores, `"ii->"`
    /// a trace), `...` spans the dims no letter names (broadcast across
    /// operands), and without `->` the output is the ellipsis followed by
    /// the letters used once, in alphabetical order (upper case first).
    /// Dims of one label broadcast (size 1 against n); a label repeated in
    /// one operand takes its diagonal.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let d = Device::Cpu;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], &d)?;
    /// let b = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 2.0], &[2, 2], &d)?;
    /// assert_eq!(Tensor::einsum("ij,jk->ik", &[&a, &b])?.to_vec_f32()?, [1.0, 4.0, 3.0, 8.0]);
    /// assert_eq!(Tensor::einsum("ii", &[&a])?.to_vec_f32()?, [5.0]);
    /// assert_eq!(Tensor::einsum("ij->j", &[&a])?.to_vec_f32()?, [4.0, 6.0]);
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
        let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match equation.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (equation.as_str(), None),
        };
        let terms: Vec<Term> = lhs.split(',').map(parse_term).collect::<Result<_>>()?;
        if terms.len() != operands.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "the equation {equation:?} names {} operands but {} were given",
                    terms.len(),
                    operands.len()
                ),
            ));
        }
        let device = operands[0].device();
        for (i, t) in operands.iter().enumerate() {
            if !t.device().same(&device) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "operand {i} is on {} but operand 0 is on {device}",
                        t.device()
                    ),
                ));
            }
        }
        // The widest ellipsis.
        let width = terms
            .iter()
            .zip(operands)
            .filter(|(term, _)| term.ellipsis)
            .map(|(term, t)| {
                t.rank()
                    .saturating_sub(term.before.len() + term.after.len())
            })
            .max()
            .unwrap_or(0);
        let mut inputs = Vec::with_capacity(operands.len());
        for (i, (term, t)) in terms.iter().zip(operands).enumerate() {
            let labels = labels_of(term, t.rank(), width, &format!("operand {i}"))?;
            inputs.push(Labelled {
                t: (*t).clone(),
                labels,
            });
        }
        // A label repeated within one operand (a diagonal) needs equal sizes.
        for (i, x) in inputs.iter().enumerate() {
            let shape = x.t.shape();
            for (p, &l) in x.labels.iter().enumerate() {
                if let Some(q) = (p + 1..x.labels.len()).find(|&q| x.labels[q] == l)
                    && shape[p] != shape[q]
                {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "subscript {l} is repeated for operand {i} but the sizes don't match, {} != {}",
                            shape[p], shape[q]
                        ),
                    ));
                }
            }
        }
        // Every label's size: equal across operands, or 1 (broadcast).
        let mut sizes: BTreeMap<Label, usize> = BTreeMap::new();
        for (i, x) in inputs.iter().enumerate() {
            for (axis, &l) in x.labels.iter().enumerate() {
                let n = x.t.shape()[axis];
                let entry = sizes.entry(l).or_insert(n);
                if *entry != n {
                    if *entry == 1 {
                        *entry = n;
                    } else if n != 1 {
                        return Err(Error::invalid(
                            OP,
                            format!(
                                "subscript {l} has size {n} in operand {i} but size {entry} elsewhere (sizes must match or be 1)"
                            ),
                        ));
                    }
                }
            }
        }
        let output: Vec<Label> = match rhs {
            Some(text) => {
                let term = parse_term(text)?;
                if term.ellipsis && width == 0 && !terms.iter().any(|t| t.ellipsis) {
                    return Err(Error::invalid(
                        OP,
                        "the output has an ellipsis but no operand does",
                    ));
                }
                let mut out: Vec<Label> = term.before.iter().map(|&c| Label::Letter(c)).collect();
                if term.ellipsis {
                    out.extend((0..width).map(Label::Ellipsis));
                }
                out.extend(term.after.iter().map(|&c| Label::Letter(c)));
                for (k, &l) in out.iter().enumerate() {
                    if !sizes.contains_key(&l) {
                        return Err(Error::invalid(
                            OP,
                            format!("output subscript {l} does not appear in any operand"),
                        ));
                    }
                    if out[..k].contains(&l) {
                        return Err(Error::invalid(
                            OP,
                            format!("output subscript {l} appears more than once"),
                        ));
                    }
                }
                out
            }
            None => {
                let mut counts: BTreeMap<Label, usize> = BTreeMap::new();
                for x in &inputs {
                    for &l in &x.labels {
                        *counts.entry(l).or_default() += 1;
                    }
                }
                // Ellipsis labels sort first (their variant comes first).
                counts
                    .into_iter()
                    .filter(|&(l, n)| matches!(l, Label::Ellipsis(_)) || n == 1)
                    .map(|(l, _)| l)
                    .collect()
            }
        };

        // Diagonals, then broadcast every dim to its label's size.
        let mut pending = Vec::with_capacity(inputs.len());
        for x in inputs {
            let x = x.diagonals()?;
            let full: Vec<usize> = x.labels.iter().map(|l| sizes[l]).collect();
            let t = if x.t.shape().as_slice() == full.as_slice() {
                x.t
            } else {
                x.t.expand(&full)?
            };
            pending.push(Labelled {
                t,
                labels: x.labels,
            });
        }
        let needed_after = |rest: &[Labelled], l: Label| {
            output.contains(&l) || rest.iter().any(|x| x.labels.contains(&l))
        };
        let mut rest = pending.into_iter();
        let first = rest
            .next()
            .ok_or_else(|| Error::invalid(OP, "no operands"))?;
        let mut rest: Vec<Labelled> = rest.collect();
        let mut acc = {
            let others = &rest;
            first.sum_unless(|l| needed_after(others, l))?
        };
        while !rest.is_empty() {
            let b = rest.remove(0);
            let b = {
                let others = &rest;
                let acc_labels = &acc.labels;
                b.sum_unless(|l| acc_labels.contains(&l) || needed_after(others, l))?
            };
            let keep = |l: Label| needed_after(&rest, l);
            let batch: Vec<Label> = acc
                .labels
                .iter()
                .copied()
                .filter(|&l| b.labels.contains(&l) && keep(l))
                .collect();
            let contracted: Vec<Label> = acc
                .labels
                .iter()
                .copied()
                .filter(|&l| b.labels.contains(&l) && !keep(l))
                .collect();
            let a_only: Vec<Label> = acc
                .labels
                .iter()
                .copied()
                .filter(|l| !b.labels.contains(l))
                .collect();
            let b_only: Vec<Label> = b
                .labels
                .iter()
                .copied()
                .filter(|l| !acc.labels.contains(l))
                .collect();
            let a_order: Vec<Label> = [&batch[..], &a_only, &contracted].concat();
            let b_order: Vec<Label> = [&batch[..], &contracted, &b_only].concat();
            let a3 = acc.grouped(
                &a_order,
                &[batch.len(), a_only.len(), contracted.len()],
                &sizes,
            )?;
            let b3 = b.grouped(
                &b_order,
                &[batch.len(), contracted.len(), b_only.len()],
                &sizes,
            )?;
            let product = a3.matmul(&b3)?;
            let labels: Vec<Label> = [&batch[..], &a_only, &b_only].concat();
            let shape: Vec<isize> = labels.iter().map(|l| sizes[l] as isize).collect();
            acc = Labelled {
                t: product.reshape(&shape)?,
                labels,
            };
        }
        let acc = acc.sum_unless(|l| output.contains(&l))?;
        let perm: Vec<isize> = output
            .iter()
            .map(|&l| acc.axis(l).map(|a| a as isize))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::invalid(OP, "internal: an output label went missing"))?;
        if perm.iter().enumerate().all(|(i, &a)| a == i as isize) {
            Ok(acc.t)
        } else {
            acc.t.permute(&perm)
        }
    }
}
