//! A rendered screen as SVG, for the README's picture of the console.

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const FG: &str = "#d0d0d0";
const BG: &str = "#1c1c1c";

fn hex(c: Color, fallback: &str) -> String {
    match c {
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Reset => fallback.to_string(),
        Color::Black => "#000000".into(),
        Color::Red => "#cd3131".into(),
        Color::Green => "#0dbc79".into(),
        Color::Yellow => "#e5e510".into(),
        Color::Blue => "#2472c8".into(),
        Color::Magenta => "#bc3fbc".into(),
        Color::Cyan => "#11a8cd".into(),
        Color::Gray => "#c0c0c0".into(),
        Color::DarkGray => "#666666".into(),
        Color::LightRed => "#f14c4c".into(),
        Color::LightGreen => "#23d18b".into(),
        Color::LightYellow => "#f5f543".into(),
        Color::LightBlue => "#3b8eea".into(),
        Color::LightMagenta => "#d670d6".into(),
        Color::LightCyan => "#29b8db".into(),
        Color::White => "#ffffff".into(),
        _ => fallback.to_string(),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The buffer as an SVG image: one rect per background run, one text per
/// cell with content.
pub fn buffer_to_svg(buf: &Buffer) -> String {
    let area = buf.area;
    let w = area.width as f64 * CELL_W;
    let h = area.height as f64 * CELL_H;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.1} {h:.1}\" font-family=\"'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace\" font-size=\"14\">\n<rect width=\"100%\" height=\"100%\" fill=\"{BG}\"/>\n"
    );
    for y in 0..area.height {
        // Runs of ASCII cells in one style become one text element; other
        // symbols stand alone, so that glyph widths cannot shift the grid.
        let mut run: Option<(u16, String, String)> = None;
        let flush = |out: &mut String, run: &mut Option<(u16, String, String)>| {
            if let Some((x0, attrs, text)) = run.take()
                && !text.trim().is_empty()
            {
                out.push_str(&format!(
                    "<text x=\"{:.1}\" y=\"{:.1}\"{attrs} xml:space=\"preserve\">{}</text>\n",
                    x0 as f64 * CELL_W,
                    y as f64 * CELL_H + CELL_H * 0.78,
                    escape(&text)
                ));
            }
        };
        for x in 0..area.width {
            let Some(cell) = buf.cell((area.x + x, area.y + y)) else {
                continue;
            };
            let reversed = cell.modifier.contains(Modifier::REVERSED);
            let (mut fg, mut bg) = (hex(cell.fg, FG), hex(cell.bg, BG));
            if reversed {
                std::mem::swap(&mut fg, &mut bg);
                // Default colours reversed: light on dark becomes dark on light.
                if cell.fg == Color::Reset {
                    bg = FG.to_string();
                }
                if cell.bg == Color::Reset {
                    fg = BG.to_string();
                }
            }
            if bg != BG {
                out.push_str(&format!(
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{CELL_H:.1}\" fill=\"{bg}\"/>\n",
                    x as f64 * CELL_W,
                    y as f64 * CELL_H,
                    CELL_W + 0.3
                ));
            }
            let mut attrs = format!(" fill=\"{fg}\"");
            if cell.modifier.contains(Modifier::BOLD) {
                attrs.push_str(" font-weight=\"bold\"");
            }
            if cell.modifier.contains(Modifier::DIM) {
                attrs.push_str(" opacity=\"0.6\"");
            }
            if cell.modifier.contains(Modifier::UNDERLINED) {
                attrs.push_str(" text-decoration=\"underline\"");
            }
            let sym = cell.symbol();
            let ascii = sym.len() == 1 && sym.is_ascii();
            match &mut run {
                Some((_, a, text)) if ascii && *a == attrs => text.push_str(sym),
                _ => {
                    flush(&mut out, &mut run);
                    run = Some((x, attrs, sym.to_string()));
                    if !ascii {
                        flush(&mut out, &mut run);
                    }
                }
            }
        }
        flush(&mut out, &mut run);
    }
    out.push_str("</svg>\n");
    out
}
