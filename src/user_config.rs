//! The user's own settings for the console, in `$XDG_CONFIG_HOME/idem/config.toml`
//! (else `~/.config/idem/config.toml`; see [`crate::xdg`]): the default theme and key overrides.
//! For the theme a flag wins over the environment (both read by the command
//! line), which wins over this file, which wins over the built-in default;
//! keys are this file's, else the built-in ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What the user config file says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// The console's theme when neither `--theme` nor `IDEM_THEME` says one.
    pub theme: Option<String>,
    /// `[keys.SCOPE]` tables of `action = KEYS`, checked by the console's
    /// keymap.
    #[serde(default)]
    pub keys: BTreeMap<String, BTreeMap<String, Keys>>,
}

/// The keys an override gives an action: one, or a list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "a key like \"F5\" or a list of keys like [\"q\", \"Ctrl-q\"]"
)]
pub enum Keys {
    One(String),
    Many(Vec<String>),
}

impl Keys {
    /// The keys as written.
    pub fn list(&self) -> &[String] {
        match self {
            Keys::One(key) => std::slice::from_ref(key),
            Keys::Many(keys) => keys,
        }
    }
}

/// Where the user config file is for this process, from `XDG_CONFIG_HOME`
/// (an absolute path) or `HOME` (see [`crate::xdg`]); `None` when neither
/// gives a folder.
pub fn path() -> Option<PathBuf> {
    Some(
        crate::xdg::Base::Config
            .dir()?
            .join("idem")
            .join("config.toml"),
    )
}

impl UserConfig {
    /// Reads the file at `path`; a missing file is an empty config, a
    /// broken one an error that names the file.
    pub fn read(path: &Path) -> Result<UserConfig, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text)
                .map(|user: UserConfig| UserConfig {
                    theme: user.theme.map(|theme| beside(path, theme)),
                    ..user
                })
                .map_err(|e| {
                    let message = e.message().lines().next().unwrap_or("cannot be read");
                    match e.span() {
                        Some(span) => {
                            let (line, column) = line_col(&text, span.start);
                            format!("{}:{line}:{column}: {message}", path.display())
                        }
                        None => format!("{}: {message}", path.display()),
                    }
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UserConfig::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// The theme to use: what the command line or the environment asked
    /// for, else this file's, else none (the built-in default).
    pub fn theme(&self, asked: Option<String>) -> Option<String> {
        asked
            .filter(|t| !t.is_empty())
            .or_else(|| self.theme.clone())
    }
}

/// The theme the file at `file` names: a theme file named by a relative
/// path is read from the file's folder, where one would keep it, not from
/// wherever idem is run; a built-in name stays as it is.
fn beside(file: &Path, theme: String) -> String {
    let is_path = theme.contains(['/', '\\']) || theme.ends_with(".toml");
    match file.parent() {
        Some(dir) if is_path && Path::new(&theme).is_relative() => {
            dir.join(&theme).display().to_string()
        }
        _ => theme,
    }
}

/// The 1-based line and column of `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_over_the_file_which_wins_over_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        assert_eq!(UserConfig::read(&file), Ok(UserConfig::default()));
        assert_eq!(UserConfig::default().theme(None), None, "built-in default");
        std::fs::write(&file, "theme = \"light\"\n").unwrap();
        let user = UserConfig::read(&file).unwrap();
        assert_eq!(user.theme(None).as_deref(), Some("light"));
        assert_eq!(user.theme(Some("mono".into())).as_deref(), Some("mono"));
        assert_eq!(user.theme(Some(String::new())).as_deref(), Some("light"));
        std::fs::write(&file, "# mine\ntheme = 3\n").unwrap();
        let broken = UserConfig::read(&file).unwrap_err();
        assert!(
            broken.starts_with(&format!("{}:2:9: invalid type", file.display())),
            "{broken}"
        );
        std::fs::write(&file, "colour = \"x\"\n").unwrap();
        assert!(UserConfig::read(&file).is_err(), "unknown keys are refused");
    }

    /// `theme = "mine.toml"` is the file beside config.toml wherever idem
    /// is run (it was read from the current directory); absolute paths and
    /// built-in names are as written.
    #[test]
    fn a_theme_file_named_by_a_relative_path_is_read_beside_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        for (written, read) in [
            (
                "mine.toml",
                dir.path().join("mine.toml").display().to_string(),
            ),
            (
                "themes/mine",
                dir.path().join("themes/mine").display().to_string(),
            ),
            ("/etc/idem/mine.toml", "/etc/idem/mine.toml".to_string()),
            ("light", "light".to_string()),
        ] {
            std::fs::write(&file, format!("theme = \"{written}\"\n")).unwrap();
            let user = UserConfig::read(&file).unwrap();
            assert_eq!(user.theme(None), Some(read), "{written}");
        }
    }

    #[test]
    fn key_overrides_read_as_one_key_or_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "[keys.main]\nrun = \"F5\"\nquit = [\"q\", \"Ctrl-q\"]\n[keys.confirm]\nallow_shrink = \"!\"\n",
        )
        .unwrap();
        let user = UserConfig::read(&file).unwrap();
        assert_eq!(user.keys["main"]["run"].list(), ["F5"]);
        assert_eq!(user.keys["main"]["quit"].list(), ["q", "Ctrl-q"]);
        assert_eq!(user.keys["confirm"]["allow_shrink"].list(), ["!"]);
        std::fs::write(&file, "[keys.main]\nrun = 5\n").unwrap();
        let wrong = UserConfig::read(&file).unwrap_err();
        assert!(
            wrong.contains("config.toml") && wrong.contains("a list of keys"),
            "{wrong}"
        );
    }
}
