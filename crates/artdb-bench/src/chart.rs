//! chart: a PNG of small bar charts (one panel per operation, one bar per system), drawn with
//! plotters' bitmap backend. Text is drawn from the public-domain 8x8 bitmap font of the
//! `font8x8` crate as filled squares, so no system font is needed anywhere the benchmark runs.

use crate::kv::Res;
use font8x8::UnicodeFonts;
use plotters::prelude::*;
use std::path::Path;

/// One panel: a title and one labelled bar per system (longer bar = larger value).
pub struct Panel {
    /// Title (the operation and what is better).
    pub title: String,
    /// (system, value, value as text).
    pub bars: Vec<(String, f64, String)>,
}

const PANEL_W: i32 = 600;
const BAR_H: i32 = 22;
const TEXT_SCALE: i32 = 2;
const GLYPH: i32 = 8 * TEXT_SCALE;
const LABEL_W: i32 = 9 * GLYPH;
const VALUE_W: i32 = 10 * GLYPH;
const COLUMNS: i32 = 2;

fn colour(system: &str) -> RGBColor {
    match system {
        "artdb" => RGBColor(214, 39, 40),
        "redb" => RGBColor(31, 119, 180),
        "lmdb" => RGBColor(44, 160, 44),
        "sqlite" => RGBColor(148, 103, 189),
        "fjall" => RGBColor(255, 127, 14),
        "sled" => RGBColor(140, 86, 75),
        "rocksdb" => RGBColor(127, 127, 127),
        _ => RGBColor(23, 190, 207),
    }
}

/// Draws `text` with its top-left corner at (x, y), each font pixel `scale` pixels wide.
fn text_scaled<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    (x, y): (i32, i32),
    text: &str,
    colour: &RGBColor,
    scale: i32,
) -> Res<()> {
    for (n, ch) in text.chars().enumerate() {
        let glyph = font8x8::BASIC_FONTS.get(ch).unwrap_or([0; 8]);
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..8 {
                if bits >> col & 1 == 1 {
                    let x0 = x + (n as i32 * 8 + col) * scale;
                    let y0 = y + row as i32 * scale;
                    area.draw(&Rectangle::new(
                        [(x0, y0), (x0 + scale, y0 + scale)],
                        colour.filled(),
                    ))
                    .map_err(|e| format!("drawing the chart: {e}"))?;
                }
            }
        }
    }
    Ok(())
}

/// Draws `text` at the chart's text size.
fn text<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    x: i32,
    y: i32,
    text: &str,
    colour: &RGBColor,
) -> Res<()> {
    text_scaled(area, (x, y), text, colour, TEXT_SCALE)
}

/// Splits `text` at spaces into lines of at most `width` characters (longer words stay whole).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str("  ");
        } else if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Draws `panels` under `title` into the PNG at `path`.
pub fn draw(path: &Path, title: &str, notes: &[String], panels: &[Panel]) -> Res<()> {
    let most_bars = panels.iter().map(|p| p.bars.len()).max().unwrap_or(1) as i32;
    let panel_h = GLYPH * 2 + most_bars * (BAR_H + 6) + 16;
    let rows = (panels.len() as i32 + COLUMNS - 1) / COLUMNS;
    let header_h = GLYPH * 2 + notes.len() as i32 * 12 + 8;
    let width = (PANEL_W * COLUMNS + 20) as u32;
    let height = (header_h + rows * panel_h + 10) as u32;
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)
        .map_err(|e| format!("drawing the chart: {e}"))?;
    text(&root, 10, 8, title, &BLACK)?;
    for (i, note) in notes.iter().enumerate() {
        let y = 8 + GLYPH + 8 + i as i32 * 12;
        text_scaled(&root, (10, y), note, &RGBColor(70, 70, 70), 1)?;
    }
    for (p, panel) in panels.iter().enumerate() {
        let x = 10 + (p as i32 % COLUMNS) * PANEL_W;
        let y = header_h + (p as i32 / COLUMNS) * panel_h;
        text(&root, x, y + 4, &panel.title, &BLACK)?;
        let max = panel.bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
        let bar_space = PANEL_W - LABEL_W - VALUE_W - 20;
        for (b, (system, value, label)) in panel.bars.iter().enumerate() {
            let top = y + GLYPH + 12 + b as i32 * (BAR_H + 6);
            text(&root, x, top + (BAR_H - GLYPH) / 2, system, &BLACK)?;
            let length = if max > 0.0 {
                ((value / max) * f64::from(bar_space)).round().max(1.0) as i32
            } else {
                1
            };
            root.draw(&Rectangle::new(
                [(x + LABEL_W, top), (x + LABEL_W + length, top + BAR_H)],
                colour(system).filled(),
            ))
            .map_err(|e| format!("drawing the chart: {e}"))?;
            text(
                &root,
                x + LABEL_W + length + 6,
                top + (BAR_H - GLYPH) / 2,
                label,
                &BLACK,
            )?;
        }
    }
    root.present()
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(())
}
