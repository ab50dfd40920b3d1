//! Themes: `themes/NAME.toml` files of semantic style names (one per state,
//! selection, focus border, muted, error…). The four shipped themes are built
//! into the binary; a theme file may name only some keys, the rest come from
//! the theme it `extends` (default: `default`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

use crate::state::LoadState;

pub const BUILTIN: [(&str, &str); 4] = [
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("colorblind", include_str!("../../themes/colorblind.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// Every key a theme may set.
pub const KEYS: &[&str] = &[
    "running",
    "failed",
    "stale",
    "vanished",
    "unmanaged",
    "loaded",
    "empty",
    "missing",
    "future",
    "text",
    "muted",
    "title",
    "border",
    "focus_border",
    "selection",
    "cursor",
    "error",
    "warning",
    "ok",
    "anomaly",
    "volume",
    "gauge",
    "highlight",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    styles: BTreeMap<String, Style>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    extends: Option<String>,
    #[serde(default)]
    styles: BTreeMap<toml::Spanned<String>, toml::Spanned<String>>,
}

impl Theme {
    pub fn style(&self, key: &str) -> Style {
        self.styles.get(key).copied().unwrap_or_default()
    }

    pub fn state(&self, state: LoadState) -> Style {
        self.style(state.name())
    }

    /// The built-in theme of that name.
    pub fn builtin(name: &str) -> Option<Theme> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        Theme::parse(text, name).ok()
    }

    pub fn default_theme() -> Theme {
        Theme::builtin("default").unwrap_or_else(|| Theme {
            name: "default".into(),
            styles: BTreeMap::new(),
        })
    }

    /// Parses theme text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Theme, String> {
        // Errors name the line and column, as the config's do, so that the
        // file can be fixed where it is wrong.
        let at = |offset: usize| {
            let before = &text[..offset.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("theme {origin}:{line}:{column}")
        };
        let file: ThemeFile = toml::from_str(text).map_err(|e| {
            let place = e.span().map_or(format!("theme {origin}"), |s| at(s.start));
            format!("{place}: {}", e.message().trim())
        })?;
        let base = match file.extends.as_deref() {
            None | Some("") => None,
            Some(name) => Some(Theme::builtin(name).ok_or_else(|| {
                format!("theme {origin}: extends \"{name}\", which is not a built-in theme (default, light, colorblind, mono)")
            })?),
        };
        let mut styles = match (base, origin) {
            (Some(b), _) => b.styles,
            // The default theme is the base of every other.
            (None, "default") => BTreeMap::new(),
            (None, _) => Theme::default_theme().styles,
        };
        for (key, value) in &file.styles {
            let (name, text) = (key.get_ref(), value.get_ref());
            if !KEYS.contains(&name.as_str()) {
                return Err(format!(
                    "{}: unknown style key \"{name}\"; known keys: {}",
                    at(key.span().start),
                    KEYS.join(", ")
                ));
            }
            let style = parse_style(text).map_err(|e| {
                format!(
                    "{}: styles.{name} = \"{text}\": {e}",
                    at(value.span().start)
                )
            })?;
            styles.insert(name.clone(), style);
        }
        Ok(Theme {
            name: file.name.unwrap_or_else(|| origin.to_string()),
            styles,
        })
    }

    /// A theme by built-in name or file path.
    pub fn load(name_or_path: &str) -> Result<Theme, String> {
        if let Some(t) = Theme::builtin(name_or_path) {
            return Ok(t);
        }
        // A path is read as given, so that its error says why it cannot be.
        if looks_like_path(name_or_path) {
            return Theme::load_file(Path::new(name_or_path));
        }
        let local = Path::new(THEME_DIR).join(format!("{name_or_path}.toml"));
        if local.exists() {
            return Theme::load_file(&local);
        }
        Err(Theme::unknown(name_or_path))
    }

    /// Why `name` is not a theme.
    pub fn unknown(name: &str) -> String {
        format!(
            "no theme \"{name}\": expected default, light, colorblind, mono or a path to a .toml file"
        )
    }

    pub fn load_file(path: &Path) -> Result<Theme, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            use std::io::ErrorKind;
            let why = match e.kind() {
                ErrorKind::NotFound => "there is no such file (the built-in themes are default, light, colorblind and mono)".to_string(),
                ErrorKind::PermissionDenied => {
                    "permission denied; check the file's permissions and owner".to_string()
                }
                ErrorKind::IsADirectory => {
                    "it is a directory; pass the theme file inside it".to_string()
                }
                ErrorKind::InvalidData => "it is not UTF-8 text; save it as UTF-8".to_string(),
                _ => e.to_string(),
            };
            format!("cannot read theme {}: {why}", path.display())
        })?;
        Theme::parse(&text, &path.display().to_string())
    }

    /// The theme files in `./themes`, by name, for `:theme NAME` (read once
    /// at start, so that choosing a theme reads no directory).
    pub fn local_files() -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(THEME_DIR) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| {
                let path = e.ok()?.path();
                let name = path.file_stem()?.to_str()?.to_string();
                (path.extension()? == "toml").then_some((name, path))
            })
            .collect()
    }

    /// The file `:theme NAME` reads, found without touching the disk: a path
    /// as given, or one of the `local` theme files by name.
    pub fn file_for(name: &str, local: &[(String, PathBuf)]) -> Option<PathBuf> {
        if looks_like_path(name) {
            return Some(PathBuf::from(name));
        }
        local
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, path)| path.clone())
    }

    /// The theme to start with: `--theme`/`IDEM_THEME`, else default.
    /// `NO_COLOR` selects mono whatever was asked for: the terminal drops
    /// colours then, and the colour themes mark the selection by colour. A
    /// broken theme falls back, with a message.
    pub fn resolve(requested: Option<&str>, no_color: bool) -> (Theme, Option<String>) {
        let requested = requested.filter(|name| !name.is_empty());
        if no_color {
            let mono = Theme::builtin("mono").unwrap_or_else(Theme::default_theme);
            let note = requested
                .filter(|name| *name != "mono")
                .map(|name| format!("NO_COLOR is set: using the mono theme, not {name}"));
            return (mono, note);
        }
        match requested {
            None => (Theme::default_theme(), None),
            Some(name) => match Theme::load(name) {
                Ok(t) => (t, None),
                Err(e) => (
                    Theme::default_theme(),
                    Some(format!("{e}; using the default theme")),
                ),
            },
        }
    }
}

/// Where theme files live, next to the config.
const THEME_DIR: &str = "themes";

fn looks_like_path(name: &str) -> bool {
    name.contains(['/', '\\']) || name.ends_with(".toml")
}

fn parse_color(word: &str) -> Option<Color> {
    if let Some(hex) = word.strip_prefix('#') {
        if hex.len() != 6 {
            return None;
        }
        let v = u32::from_str_radix(hex, 16).ok()?;
        return Some(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
    }
    Some(match word {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "darkgray" | "darkgrey" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        _ => return None,
    })
}

/// `"#ff5555 on #202020 bold"`: a foreground colour, `on` a background,
/// and modifiers (bold, dim, italic, underlined, reversed).
pub fn parse_style(text: &str) -> Result<Style, String> {
    let mut style = Style::default();
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        let w = w.to_ascii_lowercase();
        match w.as_str() {
            "bold" => style = style.add_modifier(Modifier::BOLD),
            "dim" => style = style.add_modifier(Modifier::DIM),
            "italic" => style = style.add_modifier(Modifier::ITALIC),
            "underlined" | "underline" => style = style.add_modifier(Modifier::UNDERLINED),
            "reversed" | "reverse" => style = style.add_modifier(Modifier::REVERSED),
            "on" => {
                let c = words.next().ok_or("\"on\" needs a colour after it")?;
                let c = parse_color(&c.to_ascii_lowercase()).ok_or_else(|| {
                    format!("\"{c}\" is not a colour (#rrggbb or a name like red)")
                })?;
                style = style.bg(c);
            }
            other => {
                let c = parse_color(other).ok_or_else(|| {
                    format!("\"{other}\" is not a colour (#rrggbb or a name like red) or a modifier (bold, dim, italic, underlined, reversed)")
                })?;
                style = style.fg(c);
            }
        }
    }
    Ok(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_themes_parse_and_set_every_key() {
        for (name, text) in BUILTIN {
            let t = Theme::parse(text, name).unwrap();
            for key in KEYS {
                assert!(t.styles.contains_key(*key), "{name} lacks {key}");
            }
        }
    }

    #[test]
    fn broken_theme_falls_back_with_a_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "[styles]\nfailed = \"#zzzzzz\"\n").unwrap();
        let (t, msg) = Theme::resolve(path.to_str(), false);
        assert_eq!(t.name, "default");
        let msg = msg.unwrap();
        assert!(msg.contains("styles.failed"), "{msg}");
        let (t, msg) = Theme::resolve(None, true);
        assert_eq!(t.name, "mono");
        assert!(msg.is_none());
    }

    /// Under NO_COLOR the terminal shows no colour, so a colour theme would
    /// show no selection: mono is used whatever was asked for, and says so.
    #[test]
    fn no_color_uses_mono_whatever_theme_was_asked_for() {
        for asked in ["light", "colorblind", "default", "/nonexistent.toml"] {
            let (t, msg) = Theme::resolve(Some(asked), true);
            assert_eq!(t.name, "mono", "{asked}");
            assert_eq!(
                msg.as_deref(),
                Some(format!("NO_COLOR is set: using the mono theme, not {asked}").as_str())
            );
        }
        let (t, msg) = Theme::resolve(Some("mono"), true);
        assert_eq!((t.name.as_str(), msg), ("mono", None));
    }

    #[test]
    fn a_theme_path_that_cannot_be_read_says_why() {
        let (t, msg) = Theme::resolve(Some("/nonexistent.toml"), false);
        assert_eq!(t.name, "default");
        let msg = msg.unwrap();
        assert!(
            msg.starts_with("cannot read theme /nonexistent.toml: there is no such file"),
            "{msg}"
        );
        assert!(!msg.contains("a path to a .toml file"), "{msg}");
        assert!(msg.ends_with("; using the default theme"), "{msg}");
        let dir = tempfile::tempdir().unwrap();
        let folder = format!("{}/", dir.path().display());
        let msg = Theme::load(&folder).unwrap_err();
        assert!(
            msg.ends_with("it is a directory; pass the theme file inside it"),
            "{msg}"
        );
    }

    /// A theme file's error names its line and column, as a config error
    /// does: a bad colour, an unknown key, a TOML syntax error.
    #[test]
    fn a_theme_error_names_its_line_and_column() {
        for (text, says) in [
            (
                "name = \"x\"\n[styles]\nfailed = \"#zzzzzz bold\"\n",
                "theme t.toml:3:10: styles.failed",
            ),
            (
                "[styles]\nloaded = \"green\"\n bogus = \"red\"\n",
                "theme t.toml:3:2: unknown style key \"bogus\"",
            ),
            ("name = \"x\"\n[styles\n", "theme t.toml:2:8: "),
            ("colours = 1\n", "theme t.toml:1:1: unknown field `colours`"),
        ] {
            let e = Theme::parse(text, "t.toml").unwrap_err();
            assert!(e.starts_with(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn partial_theme_extends_a_builtin() {
        let t = Theme::parse(
            "extends = \"light\"\n[styles]\nfailed = \"red bold\"\n",
            "x",
        )
        .unwrap();
        assert_eq!(
            t.style("failed"),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        );
        assert_eq!(
            t.style("loaded"),
            Theme::builtin("light").unwrap().style("loaded")
        );
    }
}
