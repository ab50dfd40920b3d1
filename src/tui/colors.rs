//! The themes' colours at the depth the terminal shows. Themes are written
//! in `#rrggbb`; a terminal that takes no 24-bit colour (macOS Terminal,
//! `TERM=xterm`, the Linux console) draws those as other colours or not at
//! all, so each drawn cell's colour is mapped to the nearest one it has. As
//! with [`super::glyphs`], the frame is mapped cell by cell: no theme keeps
//! a second palette.

use ratatui::buffer::Buffer;
use ratatui::style::Color;

/// The colours a terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// 24-bit colour: the themes as written.
    True,
    /// xterm's 256 colours.
    Indexed,
    /// The 16 ANSI colours.
    Ansi,
}

/// The depth the environment says: `COLORTERM=truecolor|24bit` (how
/// terminals with 24-bit colour announce it) or a `TERM` naming direct
/// colour is 24-bit; a `TERM` naming 256 colours is that; any other named
/// `TERM` (`xterm`, `screen`, `linux`, `vt220`) is 16. No `TERM` at all
/// says nothing, and the themes are drawn as written.
pub fn depth(var: impl Fn(&str) -> Option<String>) -> Depth {
    let colorterm = var("COLORTERM").unwrap_or_default().to_ascii_lowercase();
    if colorterm == "truecolor" || colorterm == "24bit" {
        return Depth::True;
    }
    let term = var("TERM").unwrap_or_default().to_ascii_lowercase();
    if term.is_empty() || term.contains("direct") || term.contains("truecolor") {
        Depth::True
    } else if term.contains("256") {
        Depth::Indexed
    } else {
        Depth::Ansi
    }
}

/// Maps every cell's colours of `buf` to `depth`.
pub fn to_depth(buf: &mut Buffer, depth: Depth) {
    if depth == Depth::True {
        return;
    }
    for cell in buf.content.iter_mut() {
        cell.fg = shown(cell.fg, depth);
        cell.bg = shown(cell.bg, depth);
    }
}

/// `color` as a terminal of `depth` shows it.
fn shown(color: Color, depth: Depth) -> Color {
    match (color, depth) {
        (Color::Rgb(r, g, b), Depth::Indexed) => Color::Indexed(indexed(r, g, b)),
        (Color::Rgb(r, g, b), Depth::Ansi) => ansi((r, g, b)),
        (Color::Indexed(i), Depth::Ansi) if i < 16 => ANSI[usize::from(i)],
        (Color::Indexed(i), Depth::Ansi) => ansi(rgb_of_indexed(i)),
        (other, _) => other,
    }
}

/// The levels of xterm's 6×6×6 colour cube.
const CUBE: [u8; 6] = [0, 95, 135, 175, 215, 255];

/// The nearest of xterm's 256 colours: the cube's or the grey ramp's.
fn indexed(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| {
        (0..6)
            .min_by_key(|&i| (i32::from(CUBE[i]) - i32::from(v)).abs())
            .unwrap_or(0)
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = 16 + 36 * ri as u8 + 6 * gi as u8 + bi as u8;
    let cube_rgb = (CUBE[ri], CUBE[gi], CUBE[bi]);
    // The grey ramp: 24 steps from 8 to 238.
    let mean = (u16::from(r) + u16::from(g) + u16::from(b)) / 3;
    let step = ((mean.saturating_sub(3)) / 10).min(23) as u8;
    let grey = 8 + 10 * step;
    if distance((r, g, b), (grey, grey, grey)) < distance((r, g, b), cube_rgb) {
        232 + step
    } else {
        cube
    }
}

/// The colour of one of xterm's 256 past the 16 ANSI ones.
fn rgb_of_indexed(i: u8) -> (u8, u8, u8) {
    match i {
        0..232 => {
            let i = usize::from(i.saturating_sub(16));
            (CUBE[i / 36], CUBE[(i / 6) % 6], CUBE[i % 6])
        }
        _ => {
            let v = 8 + 10 * (i - 232);
            (v, v, v)
        }
    }
}

/// The 16 ANSI colours, in xterm's order of their indices.
const ANSI: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::Gray,
    Color::DarkGray,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
    Color::White,
];

/// The ANSI colour of the same hue: the themes' soft colours (a loaded
/// green, a stale amber) are nearest to grey by distance, which would
/// leave the states apart by glyph alone. Colours with little hue are
/// greys by lightness.
fn ansi((r, g, b): (u8, u8, u8)) -> Color {
    let (r, g, b) = (f32::from(r), f32::from(g), f32::from(b));
    let max = r.max(g).max(b);
    let delta = max - r.min(g).min(b);
    let value = max / 255.0;
    if max == 0.0 || delta / max < 0.2 {
        return match value {
            v if v < 0.2 => Color::Black,
            v if v < 0.45 => Color::DarkGray,
            v if v < 0.85 => Color::Gray,
            _ => Color::White,
        };
    }
    let hue = if max == r {
        60.0 * ((g - b) / delta)
    } else if max == g {
        60.0 * ((b - r) / delta + 2.0)
    } else {
        60.0 * ((r - g) / delta + 4.0)
    }
    .rem_euclid(360.0);
    let bright = value > 0.85;
    // Red, yellow, green, cyan, blue, magenta: 60° apart from 0°.
    let sextant = ((hue + 30.0) / 60.0) as usize % 6;
    let (dim, light) = [
        (Color::Red, Color::LightRed),
        (Color::Yellow, Color::LightYellow),
        (Color::Green, Color::LightGreen),
        (Color::Cyan, Color::LightCyan),
        (Color::Blue, Color::LightBlue),
        (Color::Magenta, Color::LightMagenta),
    ][sextant];
    if bright { light } else { dim }
}

fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> i32 {
    let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).pow(2);
    d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_depth_is_read_from_colorterm_then_term() {
        for (vars, want) in [
            (&[("TERM", "xterm-256color")][..], Depth::Indexed),
            (
                &[("TERM", "xterm-256color"), ("COLORTERM", "truecolor")],
                Depth::True,
            ),
            (
                &[("TERM", "tmux-256color"), ("COLORTERM", "24bit")],
                Depth::True,
            ),
            (&[("TERM", "xterm-direct")], Depth::True),
            (&[("TERM", "xterm")], Depth::Ansi),
            (&[("TERM", "linux")], Depth::Ansi),
            (&[("TERM", "screen")], Depth::Ansi),
            (&[], Depth::True),
        ] {
            assert_eq!(depth(env(vars)), want, "{vars:?}");
        }
    }

    #[test]
    fn each_colour_becomes_the_nearest_the_terminal_has() {
        // xterm's own colours map to themselves.
        assert_eq!(
            shown(Color::Rgb(0x5f, 0xaf, 0xff), Depth::Indexed),
            Color::Indexed(75)
        );
        assert_eq!(
            shown(Color::Rgb(0x30, 0x30, 0x30), Depth::Indexed),
            Color::Indexed(236)
        );
        assert_eq!(
            shown(Color::Rgb(0xff, 0x5f, 0x5f), Depth::Indexed),
            Color::Indexed(203)
        );
        // A theme's failed red stays red, its loaded green green, its stale
        // amber yellow.
        assert_eq!(
            shown(Color::Rgb(0xff, 0x5f, 0x5f), Depth::Ansi),
            Color::LightRed
        );
        assert_eq!(
            shown(Color::Rgb(0x98, 0xc3, 0x79), Depth::Ansi),
            Color::Green
        );
        assert_eq!(
            shown(Color::Rgb(0xe5, 0xc0, 0x7b), Depth::Ansi),
            Color::LightYellow
        );
        assert_eq!(
            shown(Color::Rgb(0x8a, 0x8a, 0x8a), Depth::Ansi),
            Color::Gray
        );
        assert_eq!(shown(Color::Indexed(236), Depth::Ansi), Color::Black);
        // Named colours and modifiers-only styles are left as they are.
        assert_eq!(shown(Color::Red, Depth::Ansi), Color::Red);
        assert_eq!(shown(Color::Reset, Depth::Indexed), Color::Reset);
        assert_eq!(shown(Color::Rgb(1, 2, 3), Depth::True), Color::Rgb(1, 2, 3));
    }

    #[test]
    fn a_frame_is_drawn_without_24_bit_colour_below_it() {
        let mut buf = Buffer::empty(ratatui::layout::Rect::new(0, 0, 2, 1));
        buf.content[0].fg = Color::Rgb(0xff, 0x5f, 0x5f);
        buf.content[1].bg = Color::Rgb(0x30, 0x30, 0x30);
        to_depth(&mut buf, Depth::Indexed);
        assert!(
            buf.content
                .iter()
                .all(|c| !matches!(c.fg, Color::Rgb(..)) && !matches!(c.bg, Color::Rgb(..))),
            "{buf:?}"
        );
    }
}
