//! The keys in force: the registry's (`keys`) with the user's overrides
//! (`[keys.SCOPE]` in the user config) applied and checked, installed once
//! per process. Key lookups, the footer and the help overlay read it; the
//! README's table keeps the registry's defaults.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{LazyLock, OnceLock};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keys::{Action, BINDINGS, Binding, Key, Scope};
use crate::user_config::Keys;

/// How keys are written in the user config, for error messages.
const KEY_SYNTAX: &str = "a character (case matters: R is shift-r), Ctrl-x, Enter, Esc, Tab, \
     S-Tab, Up, Down, Left, Right, Home, End, PgUp, PgDn, F1…F12, Space, Backspace or Delete";

/// One binding as it stands: the registry's entry with the keys in force.
#[derive(Debug, Clone)]
pub struct Bound {
    pub binding: &'static Binding,
    keys: Vec<Key>,
    /// How the keys are written: the registry's label, or the user's keys
    /// in the config's own syntax.
    pub label: Cow<'static, str>,
}

/// Every binding of the registry with the keys it has in this process.
#[derive(Debug, Clone)]
pub struct Keymap {
    bound: Vec<Bound>,
}

impl Default for Keymap {
    /// The registry's keys.
    fn default() -> Keymap {
        let bound = BINDINGS
            .iter()
            .map(|binding| Bound {
                binding,
                keys: binding.keys.to_vec(),
                label: Cow::Borrowed(binding.label),
            })
            .collect();
        Keymap { bound }
    }
}

impl Keymap {
    /// The registry's keys with `overrides` (scope → action → keys, as the
    /// user config names them) in place of the bindings they name, or what
    /// is wrong with them.
    pub fn with_overrides(
        overrides: &BTreeMap<String, BTreeMap<String, Keys>>,
    ) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        for (scope_name, actions) in overrides {
            let scope = scopes()
                .into_iter()
                .find(|s| snake_case(s) == *scope_name)
                .ok_or_else(|| {
                    let valid: Vec<String> = scopes().iter().map(snake_case).collect();
                    format!(
                        "[keys.{scope_name}]: no such scope; the scopes are {}",
                        valid.join(", ")
                    )
                })?;
            for (action_name, keys) in actions {
                let place = format!("[keys.{scope_name}] {action_name}");
                let bound = map
                    .bound
                    .iter_mut()
                    .find(|b| {
                        b.binding.scope == scope && snake_case(&b.binding.action) == *action_name
                    })
                    .ok_or_else(|| {
                        let valid: Vec<String> = BINDINGS
                            .iter()
                            .filter(|b| b.scope == scope)
                            .map(|b| snake_case(&b.action))
                            .collect();
                        format!(
                            "{place}: no such action; the actions in [keys.{scope_name}] are {}",
                            valid.join(", ")
                        )
                    })?;
                bound.keys = parse_override(scope, bound.binding.action, keys.list())
                    .map_err(|e| format!("{place}: {e}"))?;
                let labels: Vec<String> = bound.keys.iter().map(key_label).collect();
                bound.label = Cow::Owned(labels.join(" "));
            }
        }
        map.check_conflicts()?;
        Ok(map)
    }

    /// Refuses one key bound to two actions in one scope.
    fn check_conflicts(&self) -> Result<(), String> {
        for (i, a) in self.bound.iter().enumerate() {
            for b in self.bound[i + 1..]
                .iter()
                .filter(|b| b.binding.scope == a.binding.scope)
            {
                if let Some(key) = a.keys.iter().find(|k| b.keys.contains(k)) {
                    return Err(format!(
                        "`{}` is bound to both {} and {} in [keys.{}]; give one of them other keys",
                        key_label(key),
                        snake_case(&a.binding.action),
                        snake_case(&b.binding.action),
                        snake_case(&a.binding.scope)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The bindings in the registry's order, with the keys in force.
    pub fn bindings(&self) -> &[Bound] {
        &self.bound
    }

    /// The action a key means in a scope.
    pub fn action_for(&self, scope: Scope, event: &KeyEvent) -> Option<Action> {
        self.bound
            .iter()
            .filter(|b| b.binding.scope == scope)
            .find(|b| b.keys.iter().any(|key| matches(key, event)))
            .map(|b| b.binding.action)
    }

    /// The first key in force for `action` in `scope`, as hints name it.
    pub fn key(&self, scope: Scope, action: Action) -> &str {
        self.bound
            .iter()
            .find(|b| b.binding.scope == scope && b.binding.action == action)
            .map_or("?", |b| b.label.split(' ').next().unwrap_or(&b.label))
    }

    /// The footer's hints for a scope: each shown binding's first key and
    /// its word.
    pub fn footer(&self, scope: Scope) -> Vec<(&str, &'static str)> {
        self.footer_where(scope, &|_| true)
    }

    /// The footer's hints for a scope, of the actions `shown` keeps (those
    /// of the focused pane, those the open dialog offers).
    pub fn footer_where(
        &self,
        scope: Scope,
        shown: &dyn Fn(Action) -> bool,
    ) -> Vec<(&str, &'static str)> {
        self.bound
            .iter()
            .filter(|b| b.binding.scope == scope && shown(b.binding.action))
            .filter_map(|b| {
                let first = b.label.split(' ').next().unwrap_or(&b.label);
                b.binding.footer.map(|word| (first, word))
            })
            .collect()
    }
}

static INSTALLED: OnceLock<Keymap> = OnceLock::new();
static DEFAULT: LazyLock<Keymap> = LazyLock::new(Keymap::default);

/// Makes `keymap` this process's keys. The console's entry point does, once,
/// before it reads a key; a later install is ignored.
pub fn install(keymap: Keymap) {
    let _ = INSTALLED.set(keymap);
}

/// The keys in force: the installed keymap, else the registry's (as in
/// tests, which install none).
pub fn current() -> &'static Keymap {
    INSTALLED.get().unwrap_or_else(|| LazyLock::force(&DEFAULT))
}

/// The action a key means in a scope, with the keys in force.
pub fn action_for(scope: Scope, event: &KeyEvent) -> Option<Action> {
    current().action_for(scope, event)
}

/// The first key in force for `action` in `scope`: what a hint names.
pub fn key(scope: Scope, action: Action) -> &'static str {
    current().key(scope, action)
}

/// Two actions' keys, as a hint names a pair (`j k`).
pub fn key_pair(scope: Scope, a: Action, b: Action) -> String {
    format!("{} {}", key(scope, a), key(scope, b))
}

/// The footer's hints for a scope, of the actions `shown` keeps.
pub fn footer_where(
    scope: Scope,
    shown: &dyn Fn(Action) -> bool,
) -> Vec<(&'static str, &'static str)> {
    current().footer_where(scope, shown)
}

fn matches(key: &Key, event: &KeyEvent) -> bool {
    let mut mods = event.modifiers;
    // Capitals and symbols arrive with SHIFT on some terminals, not others.
    if matches!(event.code, KeyCode::Char(_) | KeyCode::BackTab) {
        mods.remove(KeyModifiers::SHIFT);
    }
    key.code == event.code && key.mods == mods
}

/// The scopes, in the registry's order.
fn scopes() -> Vec<Scope> {
    let mut out: Vec<Scope> = Vec::new();
    for b in BINDINGS {
        if !out.contains(&b.scope) {
            out.push(b.scope);
        }
    }
    out
}

/// How the user config names a scope or an action: its name in snake_case
/// (`SelectFailed` is `select_failed`).
fn snake_case(name: &impl std::fmt::Debug) -> String {
    let mut out = String::new();
    for c in format!("{name:?}").chars() {
        if c.is_uppercase() && !out.is_empty() {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// The keys an override gives a binding, checked: at least one, each
/// readable, none Ctrl-C (which always quits), and no typed characters
/// where text is being typed.
fn parse_override(scope: Scope, action: Action, written: &[String]) -> Result<Vec<Key>, String> {
    let ctrl_c = Key {
        code: KeyCode::Char('c'),
        mods: KeyModifiers::CONTROL,
    };
    if action == Action::Interrupt {
        return Err("Ctrl-C always quits; it cannot be rebound".into());
    }
    if written.is_empty() {
        return Err(format!("no keys; give at least one: {KEY_SYNTAX}"));
    }
    let mut keys: Vec<Key> = Vec::new();
    for text in written {
        let key =
            parse_key(text).ok_or_else(|| format!("{text:?} is not a key; write {KEY_SYNTAX}"))?;
        if key == ctrl_c {
            return Err("Ctrl-C always quits; it cannot be rebound".into());
        }
        if scope == Scope::Input && matches!(key.code, KeyCode::Char(_)) && key.mods.is_empty() {
            return Err(format!(
                "{text:?} would be typed into the filter or command line; use a key like Enter, Tab, Ctrl-x or F2"
            ));
        }
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Ok(keys)
}

/// Reads a key as the user config writes it: one character as typed, or
/// `Ctrl-` and a letter, or a key's name (in any case); `None` when it is
/// none of these.
pub fn parse_key(text: &str) -> Option<Key> {
    let plain = |code| Key {
        code,
        mods: KeyModifiers::NONE,
    };
    let mut chars = text.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Some(plain(KeyCode::Char(c)));
    }
    if let Some(rest) = text
        .get(..5)
        .filter(|p| p.eq_ignore_ascii_case("ctrl-"))
        .and_then(|_| text.get(5..))
    {
        let mut chars = rest.chars();
        return match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(Key {
                code: KeyCode::Char(c.to_ascii_lowercase()),
                mods: KeyModifiers::CONTROL,
            }),
            _ => None,
        };
    }
    let code = match text.to_ascii_lowercase().as_str() {
        "enter" => KeyCode::Enter,
        "esc" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "s-tab" => KeyCode::BackTab,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pgup" => KeyCode::PageUp,
        "pgdn" => KeyCode::PageDown,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        "delete" => KeyCode::Delete,
        name => {
            let n: u8 = name
                .strip_prefix('f')
                .filter(|n| n.chars().all(|c| c.is_ascii_digit()))?
                .parse()
                .ok()?;
            if !(1..=12).contains(&n) {
                return None;
            }
            KeyCode::F(n)
        }
    };
    Some(plain(code))
}

/// How a key is written in the footer and the help for a user's keys: the
/// syntax [`parse_key`] reads.
pub fn key_label(key: &Key) -> String {
    match key.code {
        KeyCode::Char(' ') => "Space".into(),
        KeyCode::Char(c) if key.mods.contains(KeyModifiers::CONTROL) => {
            format!("Ctrl-{}", c.to_ascii_uppercase())
        }
        KeyCode::Char(c) => c.to_string(),
        KeyCode::BackTab => "S-Tab".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::F(n) => format!("F{n}"),
        // Enter, Esc, Tab, the arrows, Home, End, Backspace, Delete.
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user_config::UserConfig;

    /// The keymap a user config's text makes.
    fn keymap(toml: &str) -> Result<Keymap, String> {
        let user: UserConfig = toml::from_str(toml).unwrap();
        Keymap::with_overrides(&user.keys)
    }

    fn press(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    fn typed(c: char) -> KeyEvent {
        press(KeyCode::Char(c), KeyModifiers::NONE)
    }

    /// QA: the run dialog closed with `q` labelled `Esc n`, the error list
    /// with `q` labelled `Esc`: every key the registry binds is written in
    /// its binding's label (an arrow as its glyph), so the footer and the
    /// help name every key that works.
    #[test]
    fn every_bound_key_is_in_its_label() {
        for b in BINDINGS {
            let written: Vec<&str> = b.label.split(' ').collect();
            for key in b.keys {
                let glyph = match key.code {
                    KeyCode::Left => "←",
                    KeyCode::Right => "→",
                    KeyCode::Up => "↑",
                    KeyCode::Down => "↓",
                    _ => "",
                };
                let label = key_label(key);
                assert!(
                    written.contains(&label.as_str()) || written.contains(&glyph),
                    "{:?} {:?}: {label} works but its label is {:?}",
                    b.scope,
                    b.action,
                    b.label
                );
            }
        }
    }

    #[test]
    fn the_registry_binds_no_key_twice_in_a_scope_and_names_are_unique() {
        Keymap::default().check_conflicts().unwrap();
        for (i, a) in BINDINGS.iter().enumerate() {
            for b in &BINDINGS[i + 1..] {
                assert!(
                    !(a.scope == b.scope && a.action == b.action),
                    "{:?} twice in {:?}: an override could not say which",
                    a.action,
                    a.scope
                );
            }
        }
    }

    #[test]
    fn shifted_capitals_match() {
        let map = Keymap::default();
        let e = press(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(map.action_for(Scope::Main, &e), Some(Action::Last));
        let e = press(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(map.action_for(Scope::Main, &e), Some(Action::Interrupt));
    }

    #[test]
    fn scopes_and_actions_are_named_in_snake_case() {
        let scopes: Vec<String> = scopes().iter().map(snake_case).collect();
        assert_eq!(
            scopes,
            [
                "main", "confirm", "question", "list", "help", "diff", "lineage", "input"
            ]
        );
        assert_eq!(snake_case(&Action::SelectOutOfDate), "select_out_of_date");
        assert_eq!(snake_case(&Action::AllowShrink), "allow_shrink");
    }

    #[test]
    fn keys_parse_in_the_documented_syntax_and_labels_read_back() {
        let cases = [
            ("x", KeyCode::Char('x'), KeyModifiers::NONE, "x"),
            ("R", KeyCode::Char('R'), KeyModifiers::NONE, "R"),
            ("!", KeyCode::Char('!'), KeyModifiers::NONE, "!"),
            (
                "Ctrl-q",
                KeyCode::Char('q'),
                KeyModifiers::CONTROL,
                "Ctrl-Q",
            ),
            (
                "ctrl-Q",
                KeyCode::Char('q'),
                KeyModifiers::CONTROL,
                "Ctrl-Q",
            ),
            ("Enter", KeyCode::Enter, KeyModifiers::NONE, "Enter"),
            ("esc", KeyCode::Esc, KeyModifiers::NONE, "Esc"),
            ("Tab", KeyCode::Tab, KeyModifiers::NONE, "Tab"),
            ("S-Tab", KeyCode::BackTab, KeyModifiers::NONE, "S-Tab"),
            ("Up", KeyCode::Up, KeyModifiers::NONE, "Up"),
            ("Down", KeyCode::Down, KeyModifiers::NONE, "Down"),
            ("Left", KeyCode::Left, KeyModifiers::NONE, "Left"),
            ("Right", KeyCode::Right, KeyModifiers::NONE, "Right"),
            ("Home", KeyCode::Home, KeyModifiers::NONE, "Home"),
            ("End", KeyCode::End, KeyModifiers::NONE, "End"),
            ("PgUp", KeyCode::PageUp, KeyModifiers::NONE, "PgUp"),
            ("PgDn", KeyCode::PageDown, KeyModifiers::NONE, "PgDn"),
            ("F1", KeyCode::F(1), KeyModifiers::NONE, "F1"),
            ("F12", KeyCode::F(12), KeyModifiers::NONE, "F12"),
            ("Space", KeyCode::Char(' '), KeyModifiers::NONE, "Space"),
            (
                "Backspace",
                KeyCode::Backspace,
                KeyModifiers::NONE,
                "Backspace",
            ),
            ("Delete", KeyCode::Delete, KeyModifiers::NONE, "Delete"),
        ];
        for (text, code, mods, label) in cases {
            let key = parse_key(text).unwrap_or_else(|| panic!("{text} did not parse"));
            assert_eq!(key, Key { code, mods }, "{text}");
            assert_eq!(key_label(&key), label, "{text}");
            assert_eq!(parse_key(label), Some(key), "{label} reads back");
        }
        for bad in [
            "", "F0", "F13", "F+1", "Ctrl-", "Ctrl-1", "Ctrl-ab", "Shift-x", "xx", "PageUp",
        ] {
            assert_eq!(parse_key(bad), None, "{bad:?} is no key");
        }
    }

    #[test]
    fn an_override_replaces_the_bindings_keys_in_its_scope_only() {
        let map = keymap(
            "[keys.main]\nrun = \"F5\"\nquit = [\"x\", \"Ctrl-q\"]\n[keys.confirm]\nallow_shrink = \"!\"\n",
        )
        .unwrap();
        assert_eq!(map.action_for(Scope::Main, &typed('x')), Some(Action::Quit));
        let ctrl_q = press(KeyCode::Char('q'), KeyModifiers::CONTROL);
        assert_eq!(map.action_for(Scope::Main, &ctrl_q), Some(Action::Quit));
        assert_eq!(map.action_for(Scope::Main, &typed('q')), None, "q is free");
        let f5 = press(KeyCode::F(5), KeyModifiers::NONE);
        assert_eq!(map.action_for(Scope::Main, &f5), Some(Action::Run));
        assert_eq!(map.action_for(Scope::Main, &typed('r')), None, "r is free");
        assert_eq!(
            map.action_for(Scope::Confirm, &typed('!')),
            Some(Action::AllowShrink)
        );
        assert_eq!(map.action_for(Scope::Confirm, &typed('S')), None);
        // Other scopes keep their q.
        assert_eq!(
            map.action_for(Scope::List, &typed('q')),
            Some(Action::Close)
        );
        // The footer and the labels show the user's keys, the rest stay.
        let footer = map.footer(Scope::Main);
        assert!(footer.contains(&("x", "quit")), "{footer:?}");
        assert!(footer.contains(&("F5", "run")), "{footer:?}");
        assert!(footer.contains(&("?", "help")), "{footer:?}");
        let label = |action| {
            let b = map.bindings().iter();
            b.filter(|b| b.binding.scope == Scope::Main && b.binding.action == action)
                .map(|b| b.label.to_string())
                .next()
                .unwrap()
        };
        assert_eq!(label(Action::Quit), "x Ctrl-Q");
        assert_eq!(
            label(Action::Left),
            "h ←",
            "untouched bindings keep their label"
        );
        // The registry itself is untouched.
        let default = Keymap::default();
        assert_eq!(
            default.action_for(Scope::Main, &typed('q')),
            Some(Action::Quit)
        );
    }

    #[test]
    fn an_unknown_scope_lists_the_scopes() {
        let e = keymap("[keys.mian]\nquit = \"x\"\n").unwrap_err();
        assert!(e.starts_with("[keys.mian]: no such scope"), "{e}");
        assert!(
            e.contains("main, confirm, question, list, help, diff, lineage, input"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_action_lists_the_scopes_actions() {
        let e = keymap("[keys.question]\nquit = \"x\"\n").unwrap_err();
        assert_eq!(
            e,
            "[keys.question] quit: no such action; the actions in [keys.question] are yes, no"
        );
        let e = keymap("[keys.main]\nSelectFailed = \"x\"\n").unwrap_err();
        assert!(e.contains("select_failed"), "{e}");
    }

    #[test]
    fn an_unreadable_key_gives_examples() {
        let e = keymap("[keys.main]\nrun = \"Ctrl-\"\n").unwrap_err();
        assert!(
            e.starts_with("[keys.main] run: \"Ctrl-\" is not a key"),
            "{e}"
        );
        assert!(
            e.contains("Ctrl-x") && e.contains("F1…F12") && e.contains("S-Tab"),
            "{e}"
        );
        let e = keymap("[keys.main]\nrun = []\n").unwrap_err();
        assert!(e.starts_with("[keys.main] run: no keys"), "{e}");
    }

    #[test]
    fn a_key_bound_twice_in_a_scope_is_a_conflict() {
        // Against a default binding.
        let e = keymap("[keys.main]\nquit = \"c\"\n").unwrap_err();
        assert_eq!(
            e,
            "`c` is bound to both cancel and quit in [keys.main]; give one of them other keys"
        );
        // Between two overrides.
        let e = keymap("[keys.confirm]\ncascade = \"F2\"\nallow_shrink = \"F2\"\n").unwrap_err();
        assert!(
            e.starts_with("`F2` is bound to both cascade and allow_shrink"),
            "{e}"
        );
        // Moving the other binding away first resolves it; the same key in
        // two scopes is no conflict.
        let map = keymap("[keys.main]\nquit = \"c\"\ncancel = \"C\"\n[keys.list]\nclose = \"c\"\n")
            .unwrap();
        assert_eq!(map.action_for(Scope::Main, &typed('c')), Some(Action::Quit));
        assert_eq!(
            map.action_for(Scope::Main, &typed('C')),
            Some(Action::Cancel)
        );
        // A key written twice for one action is one key.
        let map = keymap("[keys.main]\nquit = [\"x\", \"x\"]\n").unwrap();
        assert_eq!(map.footer(Scope::Main).last(), Some(&("x", "quit")));
    }

    #[test]
    fn ctrl_c_and_typed_characters_in_text_input_are_refused() {
        let e = keymap("[keys.main]\ninterrupt = \"Ctrl-x\"\n").unwrap_err();
        assert!(e.contains("Ctrl-C always quits"), "{e}");
        let e = keymap("[keys.main]\ncancel = \"Ctrl-c\"\n").unwrap_err();
        assert!(e.contains("Ctrl-C always quits"), "{e}");
        let e = keymap("[keys.input]\nconfirm = \"x\"\n").unwrap_err();
        assert!(e.contains("typed into the filter"), "{e}");
        let map = keymap("[keys.input]\nconfirm = \"Ctrl-j\"\n").unwrap();
        let ctrl_j = press(KeyCode::Char('j'), KeyModifiers::CONTROL);
        assert_eq!(map.action_for(Scope::Input, &ctrl_j), Some(Action::Confirm));
    }

    #[test]
    fn without_an_install_the_registrys_keys_are_in_force() {
        assert_eq!(action_for(Scope::Main, &typed('q')), Some(Action::Quit));
        assert!(footer_where(Scope::Main, &|_| true).contains(&("q", "quit")));
    }
}
