//! Text rendering of an image, to eyeball samples in a terminal or in test
//! output (`cargo test -- --nocapture`).

/// Characters from dark to bright.
const RAMP: &[u8] = b" .:-=+*#%@";

/// `pixels` (row-major `rows x cols`, values in `[0, 1]`) as `rows` lines of
/// `cols` characters, darker to brighter along `" .:-=+*#%@"`. Values
/// outside `[0, 1]` are clamped; missing pixels are drawn as `?`.
pub fn ascii_preview(pixels: &[f32], rows: usize, cols: usize) -> String {
    let mut out = String::with_capacity(rows * (cols + 1));
    for r in 0..rows {
        for c in 0..cols {
            let ch = match pixels.get(r * cols + c) {
                Some(&v) => {
                    let level = (v.clamp(0.0, 1.0) * (RAMP.len() - 1) as f32).round() as usize;
                    RAMP[level] as char
                }
                None => '?',
            };
            out.push(ch);
        }
        out.push('\n');
    }
    out
}
