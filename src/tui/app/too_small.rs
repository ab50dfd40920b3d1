//! A terminal below the console's minimum shows only its size and how to
//! quit, so keys must not act on what it hides: a blind `r` then Enter
//! would start a run. It answers to the quit key, and to the question it
//! shows when one is open.

use crossterm::event::KeyEvent;

use super::{App, Modal};
use crate::tui::keymap::action_for;
use crate::tui::keys::{Action, Scope};
use crate::tui::layout::{MIN_HEIGHT, MIN_WIDTH};
use crate::tui::msg::Effect;

impl App {
    /// Whether the terminal is below the console's minimum size.
    pub fn too_small(&self) -> bool {
        self.shared.size.0 < MIN_WIDTH || self.shared.size.1 < MIN_HEIGHT
    }

    /// A key on the too-small screen, `None` when the screen shows what it
    /// acts on (a question) and it goes the usual way. The quit key quits,
    /// asking first while a run is in flight, and closes what was open
    /// unseen (a dialog, the help); any other key is dropped.
    pub(super) fn key_too_small(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        if matches!(self.shared.modal, Modal::Question(_)) {
            return None;
        }
        if action_for(Scope::Main, key) != Some(Action::Quit) {
            return Some(Vec::new());
        }
        let mut effects = Vec::new();
        if let Modal::Confirm(_) = std::mem::replace(&mut self.shared.modal, Modal::None) {
            // Closed without running: its source count is not needed.
            effects.extend(self.shared.reconciler.stop_for_run());
        }
        effects.extend(self.action(Action::Quit));
        Some(effects)
    }
}
