//! The folders of the XDG Base Directory spec idem keeps files in:
//! `$XDG_CONFIG_HOME` (else `~/.config`) for the user config and
//! `$XDG_STATE_HOME` (else `~/.local/state`) for run logs. As the spec says,
//! a variable set to a relative path is invalid and ignored, as an empty one
//! is: neither folder depends on the directory idem runs in.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// One of the XDG base folders idem uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    Config,
    State,
}

impl Base {
    /// The variable that names the folder.
    fn variable(self) -> &'static str {
        match self {
            Base::Config => "XDG_CONFIG_HOME",
            Base::State => "XDG_STATE_HOME",
        }
    }

    /// The folder under HOME where the variable names none.
    fn under_home(self) -> &'static str {
        match self {
            Base::Config => ".config",
            Base::State => ".local/state",
        }
    }

    /// The folder for this process; `None` where neither the variable
    /// (as an absolute path) nor HOME gives one.
    pub fn dir(self) -> Option<PathBuf> {
        self.dir_from(
            std::env::var_os(self.variable()).as_deref(),
            std::env::var_os("HOME").as_deref(),
        )
    }

    /// HOME, where this folder would be under it and HOME is no folder:
    /// a system user's `/nonexistent`, which is not to be made.
    pub fn missing_home(self) -> Option<PathBuf> {
        let xdg = std::env::var_os(self.variable());
        if xdg.as_deref().map(Path::new).is_some_and(Path::is_absolute) {
            return None;
        }
        let home = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
        (!home.is_dir()).then_some(home)
    }

    /// The folder the variable's value `xdg` names where it is an
    /// absolute path, else `home`'s default one.
    pub fn dir_from(self, xdg: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
        match (xdg.map(Path::new), home) {
            (Some(xdg), _) if xdg.is_absolute() => Some(xdg.to_path_buf()),
            (_, Some(home)) if !home.is_empty() => Some(Path::new(home).join(self.under_home())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QA: `XDG_STATE_HOME=state` kept run logs in `./state`, a folder
    /// per directory idem ran in; the spec says a relative path is ignored.
    #[test]
    fn a_relative_or_empty_variable_is_ignored() {
        let home = Some(OsStr::new("/home/u"));
        for base in [Base::Config, Base::State] {
            let dir = |xdg: &str| base.dir_from(Some(OsStr::new(xdg)), home);
            let default = Path::new("/home/u").join(base.under_home());
            assert_eq!(dir("/x"), Some(PathBuf::from("/x")), "{base:?}");
            for ignored in ["", "state", "./x", "x/../y", "~/x"] {
                assert_eq!(dir(ignored), Some(default.clone()), "{base:?} {ignored:?}");
                assert_eq!(base.dir_from(Some(OsStr::new(ignored)), None), None);
            }
            assert_eq!(base.dir_from(None, home), Some(default), "{base:?}");
            assert_eq!(base.dir_from(None, Some(OsStr::new(""))), None);
            assert_eq!(base.dir_from(None, None), None);
        }
    }
}
