//! The table printed at the end of a run: one row per epoch (or evaluation
//! step) of a [`Metrics`], the best one marked.

use super::metrics::Metrics;

/// Formats one value of `column` (rates in scientific notation, times in
/// seconds, the rest with four decimals).
fn cell(column: &str, value: f64) -> String {
    if value.is_nan() {
        "-".to_string()
    } else if column == "lr" {
        format!("{value:.2e}")
    } else if column == "seconds" {
        format!("{value:.1}")
    } else {
        format!("{value:.4}")
    }
}

/// The table as text, `best` (a row index) marked with `*`.
pub fn table(metrics: &Metrics, best: Option<usize>) -> String {
    let mut header = vec![metrics.x_name().to_string()];
    header.extend(metrics.columns().iter().map(|c| c.replace('_', " ")));
    // Long runs show about a dozen rows: evenly spaced ones, the best and the last.
    let n = metrics.rows().len();
    let stride = n.div_ceil(12).max(1);
    let shown = |i: usize| i.is_multiple_of(stride) || i + 1 == n || Some(i) == best;
    let rows: Vec<Vec<String>> = metrics
        .rows()
        .iter()
        .enumerate()
        .filter(|(i, _)| shown(*i))
        .map(|(i, (x, values))| {
            let mark = if Some(i) == best { "*" } else { "" };
            let mut row = vec![format!("{mark}{x:.0}")];
            row.extend(
                metrics
                    .columns()
                    .iter()
                    .zip(values)
                    .map(|(c, v)| cell(c, *v)),
            );
            row
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let mut out = line(&header);
    out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
    for r in &rows {
        out.push_str(&line(r));
    }
    let note = match (best.is_some(), stride > 1) {
        (true, true) => format!("(* best; one row in {stride} shown, and the last)\n"),
        (true, false) => "(* best)\n".to_string(),
        (false, true) => format!("(one row in {stride} shown, and the last)\n"),
        (false, false) => String::new(),
    };
    out.push_str(&note);
    out
}
