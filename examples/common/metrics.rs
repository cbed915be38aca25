//! The numbers of a run, one row per epoch (or evaluation step), written as
//! a CSV file and plotted as a PNG (plotters: bitmap backend, text drawn
//! from the embedded DejaVu Sans Mono through ab_glyph, so no system font
//! library is involved).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::FontStyle;

/// DejaVu Sans Mono (Bitstream Vera license, see `assets/`), the plots' font.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");

/// One plot of a figure: `columns` against the x column.
pub struct Panel {
    pub title: &'static str,
    pub y_label: &'static str,
    pub columns: &'static [&'static str],
}

/// A table of numbers: an x column (`epoch`, `step`) and named value columns.
pub struct Metrics {
    x_name: &'static str,
    columns: Vec<&'static str>,
    rows: Vec<(f64, Vec<f64>)>,
}

impl Metrics {
    pub fn new(x_name: &'static str, columns: &[&'static str]) -> Metrics {
        Metrics {
            x_name,
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Appends a row: `values` in the order of the columns.
    pub fn push(&mut self, x: f64, values: &[f64]) {
        debug_assert_eq!(values.len(), self.columns.len());
        self.rows.push((x, values.to_vec()));
    }

    pub fn x_name(&self) -> &'static str {
        self.x_name
    }

    pub fn columns(&self) -> &[&'static str] {
        &self.columns
    }

    pub fn rows(&self) -> &[(f64, Vec<f64>)] {
        &self.rows
    }

    /// The values of `column` (x, value), NaNs left out.
    fn series(&self, column: &str) -> Vec<(f64, f64)> {
        let Some(c) = self.columns.iter().position(|n| *n == column) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .map(|(x, v)| (*x, v[c]))
            .filter(|(_, y)| y.is_finite())
            .collect()
    }

    /// Writes the table as CSV (header line, then one line per row) to
    /// `path`, replacing it whole (written next to it, then renamed).
    pub fn write_csv(&self, path: &Path) -> anyhow::Result<()> {
        let mut text = self.x_name.to_string();
        for c in &self.columns {
            text.push(',');
            text.push_str(c);
        }
        text.push('\n');
        for (x, values) in &self.rows {
            write!(text, "{}", *x as f32)?;
            for v in values {
                // Shortest round-trip text of the f32 the numbers were measured in.
                write!(text, ",{}", *v as f32)?;
            }
            text.push('\n');
        }
        let tmp = temporary(path);
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Draws `panels` side by side into the PNG `path` (replaced whole), the
    /// figure titled `title`.
    pub fn plot(&self, path: &Path, title: &str, panels: &[Panel]) -> anyhow::Result<()> {
        register_font();
        let tmp = temporary(path);
        {
            // Wide enough for the title (24 px monospace: about 15 px a character).
            let title_width = 15 * title.chars().count() as u32 + 40;
            let width = (640 * panels.len().max(1) as u32).max(title_width);
            let root = BitMapBackend::new(&tmp, (width, 520)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_error)?;
            let root = root.titled(title, ("sans-serif", 24)).map_err(plot_error)?;
            let areas = root.split_evenly((1, panels.len().max(1)));
            for (panel, area) in panels.iter().zip(&areas) {
                self.draw_panel(panel, area)?;
            }
            root.present().map_err(plot_error)?;
        }
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
    }

    fn draw_panel(
        &self,
        panel: &Panel,
        area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    ) -> anyhow::Result<()> {
        let series: Vec<(&str, Vec<(f64, f64)>)> = panel
            .columns
            .iter()
            .map(|c| (*c, self.series(c)))
            .filter(|(_, s)| !s.is_empty())
            .collect();
        let points = series.iter().flat_map(|(_, s)| s.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in points {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        if x1 - x0 < 1.0 {
            (x0, x1) = (x0 - 0.5, x1 + 0.5);
        }
        let x_pad = (x1 - x0) * 0.02;
        let (x0, x1) = (x0 - x_pad, x1 + x_pad);
        // The legend goes where the curves end up not being.
        let ends_high = series
            .iter()
            .filter_map(|(_, s)| s.last())
            .all(|&(_, y)| y > (y0 + y1) / 2.0);
        let legend_at = if ends_high {
            SeriesLabelPosition::LowerRight
        } else {
            SeriesLabelPosition::UpperRight
        };
        let pad = ((y1 - y0) * 0.08).max(1e-3);
        let (y0, y1) = (y0 - pad, y1 + pad);
        let whole_x = self.rows.len() <= 12;
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(self.x_name)
            .y_desc(panel.y_label)
            .x_labels(if whole_x { self.rows.len() + 1 } else { 8 })
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 {
                    format!("{x:.0}")
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{y:.3}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(plot_error)?;
        for (i, (name, points)) in series.into_iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(plot_error)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(plot_error)?;
        }
        chart
            .configure_series_labels()
            .position(legend_at)
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        Ok(())
    }
}

/// `dir/.name.tmp.ext`: where a file is written before being renamed over
/// `path` (the extension kept, as the PNG encoder goes by it).
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let (stem, ext) = name.rsplit_once('.').unwrap_or((&name, ""));
    path.with_file_name(format!(".{stem}.tmp.{ext}"))
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plotting: {e}")
}

/// Registers the embedded font as plotters' "sans-serif" (once).
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font; a failure would only leave
        // the text out of the plots.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}
