//! The one registry of keys: every key maps to an [`Action`] here, and the
//! same table renders the footer, the help overlay and the README's keys
//! table. `keymap` holds the keys in force: these, or the user's overrides.

use crossterm::event::{KeyCode, KeyModifiers};

mod actions;

pub use actions::{Action, Scope};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const fn k(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::NONE,
    }
}

const fn code(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::NONE,
    }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

#[derive(Debug)]
pub struct Binding {
    pub scope: Scope,
    pub keys: &'static [Key],
    /// How the keys are written in the footer, help and README.
    pub label: &'static str,
    pub action: Action,
    pub description: &'static str,
    /// Short word for the footer, when the binding is shown there.
    pub footer: Option<&'static str>,
}

macro_rules! bind {
    ($scope:ident, [$($key:expr),+], $label:expr, $action:ident, $desc:expr, $footer:expr) => {
        Binding {
            scope: Scope::$scope,
            keys: &[$($key),+],
            label: $label,
            action: Action::$action,
            description: $desc,
            footer: $footer,
        }
    };
}

pub static BINDINGS: &[Binding] = &[
    bind!(
        Main,
        [k('h'), code(KeyCode::Left)],
        "h ←",
        Left,
        "previous partition (calendar); previous run (runs pane)",
        None
    ),
    bind!(
        Main,
        [k('j'), code(KeyCode::Down)],
        "j ↓",
        Down,
        "next week / day / year (calendar); next job; next partition (runs pane)",
        Some("next job")
    ),
    bind!(
        Main,
        [k('k'), code(KeyCode::Up)],
        "k ↑",
        Up,
        "previous week / day / year (calendar); previous job; previous partition (runs pane)",
        Some("prev job")
    ),
    bind!(
        Main,
        [k('l'), code(KeyCode::Right)],
        "l →",
        Right,
        "next partition (calendar); next run (runs pane); to the calendar (jobs pane)",
        None
    ),
    bind!(
        Main,
        [k('['), code(KeyCode::PageUp)],
        "[ PgUp",
        PrevMonth,
        "previous month (year for monthly jobs); runs pane: the log a page back",
        None
    ),
    bind!(
        Main,
        [k(']'), code(KeyCode::PageDown)],
        "] PgDn",
        NextMonth,
        "next month (year for monthly jobs); runs pane: the log a page on",
        None
    ),
    bind!(
        Main,
        [k('g'), code(KeyCode::Home)],
        "g Home",
        First,
        "first partition of the job; runs pane: the log's first line",
        None
    ),
    bind!(
        Main,
        [k('G'), code(KeyCode::End)],
        "G End",
        Last,
        "last complete partition; runs pane: the log's newest line, following it",
        None
    ),
    bind!(
        Main,
        [k('}')],
        "}",
        NextFailed,
        "runs pane: the run's next partition that did not load (failed, retrying, refused, cancelled, not run, skipped), round to the first after the last",
        None
    ),
    bind!(
        Main,
        [k('{')],
        "{",
        PrevFailed,
        "runs pane: the run's previous partition that did not load, round to the last before the first",
        None
    ),
    bind!(
        Main,
        [k('<')],
        "<",
        FirstRow,
        "runs pane: the run's first partition",
        None
    ),
    bind!(
        Main,
        [k('>')],
        ">",
        LastRow,
        "runs pane: the run's last partition",
        None
    ),
    bind!(Main, [k('J')], "J", NextJob, "next job", None),
    bind!(Main, [k('K')], "K", PrevJob, "previous job", None),
    bind!(
        Main,
        [code(KeyCode::Tab)],
        "Tab",
        FocusNext,
        "focus next pane (jobs, calendar, runs)",
        Some("focus")
    ),
    bind!(
        Main,
        [code(KeyCode::BackTab)],
        "S-Tab",
        FocusPrev,
        "focus previous pane",
        None
    ),
    bind!(
        Main,
        [code(KeyCode::Enter)],
        "Enter",
        Activate,
        "open the job (jobs pane); run the selection (calendar); show the run's partition in the calendar (runs pane)",
        None
    ),
    bind!(
        Main,
        [k('v')],
        "v",
        RangeSelect,
        "start / end a range selection; movement extends it",
        Some("select")
    ),
    bind!(
        Main,
        [k('f')],
        "f",
        SelectFailed,
        "select all failed partitions of the job (none failed: those the shrink guard refused)",
        Some("failed")
    ),
    bind!(
        Main,
        [k('m')],
        "m",
        SelectMissing,
        "select all missing partitions of the job",
        None
    ),
    bind!(
        Main,
        [k('s')],
        "s",
        SelectStale,
        "select all stale partitions of the job",
        None
    ),
    bind!(
        Main,
        [k('o')],
        "o",
        SelectOutOfDate,
        "select all partitions out of date with their source (after O)",
        None
    ),
    bind!(
        Main,
        [code(KeyCode::Esc)],
        "Esc",
        ClearSelection,
        "clear the selection",
        None
    ),
    bind!(
        Main,
        [k('e')],
        "e",
        ErrorGroups,
        "failures grouped by error signature",
        Some("errors")
    ),
    bind!(
        Main,
        [k('r')],
        "r",
        Run,
        "re-run the selection (or the cursor's partition), after a confirm",
        Some("run")
    ),
    bind!(
        Main,
        [k('V')],
        "V",
        Verify,
        "prove the cursor's partition idempotent (loads it twice, rolls back)",
        None
    ),
    bind!(
        Main,
        [k('d')],
        "d",
        WhatChanged,
        "what changed since a stale partition was loaded (definition diff)",
        None
    ),
    bind!(
        Main,
        [k('L')],
        "L",
        Lineage,
        "lineage: the jobs this job reads and the jobs that read it, with their health",
        None
    ),
    bind!(
        Main,
        [k('c')],
        "c",
        Cancel,
        "cancel the selected run (asks first, starting no new partition while it asks)",
        Some("cancel")
    ),
    bind!(
        Main,
        [k('n')],
        "n",
        ToggleRows,
        "colour cells by row count instead of state",
        None
    ),
    bind!(
        Main,
        [k('z')],
        "z",
        ToggleChart,
        "large rows chart in the detail area (again: back); [ ] move it a span",
        None
    ),
    bind!(
        Main,
        [k('Z')],
        "Z",
        ChartSpan,
        "large chart's span: month, quarter, year (day, week for hourly jobs)",
        None
    ),
    bind!(
        Main,
        [k('O')],
        "O",
        Reconcile,
        "reconcile the partitions on screen with their source (again: stop)",
        None
    ),
    bind!(
        Main,
        [k('/')],
        "/",
        Filter,
        "filter jobs by name",
        Some("filter")
    ),
    bind!(
        Main,
        [k(':')],
        ":",
        Command,
        "command line: run A..B [--only S], goto D, job N, theme T, q",
        Some("command")
    ),
    bind!(
        Main,
        [k('R')],
        "R",
        Refresh,
        "refresh states from the warehouse",
        None
    ),
    bind!(
        Main,
        [k('?'), code(KeyCode::F(1))],
        "? F1",
        Help,
        "this help",
        Some("help")
    ),
    bind!(
        Main,
        [k('q')],
        "q",
        Quit,
        "quit (asks first while a run is in flight)",
        Some("quit")
    ),
    bind!(
        Main,
        [ctrl('c')],
        "Ctrl-C",
        Interrupt,
        "quit, asking first while a run is in flight",
        None
    ),
    bind!(
        Confirm,
        [code(KeyCode::Enter), k('y')],
        "Enter y",
        Confirm,
        "start the run",
        Some("run")
    ),
    bind!(
        Confirm,
        [code(KeyCode::Esc), k('n'), k('q')],
        "Esc n q",
        Close,
        "close without running",
        Some("back")
    ),
    bind!(
        Confirm,
        [k('a')],
        "a",
        OnlyAll,
        "run every selected partition",
        Some("all")
    ),
    bind!(
        Confirm,
        [k('f')],
        "f",
        OnlyFailed,
        "only the failed ones",
        Some("failed")
    ),
    bind!(
        Confirm,
        [k('m')],
        "m",
        OnlyMissing,
        "only the missing ones",
        Some("missing")
    ),
    bind!(
        Confirm,
        [k('s')],
        "s",
        OnlyStale,
        "only the stale ones",
        Some("stale")
    ),
    bind!(
        Confirm,
        [code(KeyCode::Tab), k('e')],
        "Tab e",
        EditReason,
        "type a reason (Enter or Tab to finish)",
        Some("reason")
    ),
    bind!(
        Confirm,
        [k('c')],
        "c",
        Cascade,
        "cascade: also run the downstream partitions the run makes stale (again: off)",
        Some("cascade")
    ),
    bind!(
        Confirm,
        [k('S')],
        "S",
        AllowShrink,
        "replace jobs: allow the run to shrink partitions past the shrink guard (again: off)",
        Some("shrink")
    ),
    bind!(
        Confirm,
        [k('x')],
        "x",
        ThroughLatest,
        "merge jobs: extend the run through the latest loaded window (again: undo)",
        Some("through latest")
    ),
    bind!(
        Confirm,
        [k('Y')],
        "Y",
        CopyCommand,
        "copy the same-as command to the clipboard, through the terminal (OSC 52)",
        Some("copy")
    ),
    bind!(
        Question,
        [k('y'), code(KeyCode::Enter)],
        "y Enter",
        Yes,
        "yes",
        Some("yes")
    ),
    bind!(
        Question,
        [k('n'), code(KeyCode::Esc)],
        "n Esc",
        No,
        "no",
        Some("no")
    ),
    bind!(
        List,
        [k('j'), code(KeyCode::Down)],
        "j ↓",
        Down,
        "next group",
        None
    ),
    bind!(
        List,
        [k('k'), code(KeyCode::Up)],
        "k ↑",
        Up,
        "previous group",
        None
    ),
    bind!(
        List,
        [code(KeyCode::Enter)],
        "Enter",
        Confirm,
        "select the group's partitions",
        Some("select")
    ),
    bind!(
        List,
        [code(KeyCode::Esc), k('q')],
        "Esc q",
        Close,
        "close",
        Some("close")
    ),
    bind!(
        Help,
        [k('j'), code(KeyCode::Down)],
        "j ↓",
        Down,
        "scroll down",
        Some("scroll")
    ),
    bind!(
        Help,
        [k('k'), code(KeyCode::Up)],
        "k ↑",
        Up,
        "scroll up",
        None
    ),
    bind!(
        Help,
        [code(KeyCode::PageDown), k(' ')],
        "PgDn Space",
        PageDown,
        "a page down",
        Some("page")
    ),
    bind!(
        Help,
        [code(KeyCode::PageUp)],
        "PgUp",
        PageUp,
        "a page up",
        None
    ),
    bind!(
        Help,
        [k('g'), code(KeyCode::Home)],
        "g Home",
        First,
        "to the top",
        None
    ),
    bind!(
        Help,
        [k('G'), code(KeyCode::End)],
        "G End",
        Last,
        "to the end",
        None
    ),
    bind!(
        Help,
        [code(KeyCode::Esc), k('q'), k('?'), code(KeyCode::F(1))],
        "Esc q ? F1",
        Close,
        "close the help (so does any other key)",
        Some("close")
    ),
    bind!(
        Diff,
        [k('j'), code(KeyCode::Down)],
        "j ↓",
        Down,
        "scroll down",
        Some("scroll")
    ),
    bind!(
        Diff,
        [k('k'), code(KeyCode::Up)],
        "k ↑",
        Up,
        "scroll up",
        None
    ),
    bind!(
        Diff,
        [code(KeyCode::PageDown), k(' ')],
        "PgDn Space",
        PageDown,
        "a page down",
        Some("page")
    ),
    bind!(
        Diff,
        [code(KeyCode::PageUp)],
        "PgUp",
        PageUp,
        "a page up",
        None
    ),
    bind!(
        Diff,
        [k('g'), code(KeyCode::Home)],
        "g Home",
        First,
        "to the top",
        None
    ),
    bind!(
        Diff,
        [k('G'), code(KeyCode::End)],
        "G End",
        Last,
        "to the end",
        None
    ),
    bind!(
        Diff,
        [code(KeyCode::Esc), k('q'), k('d')],
        "Esc q d",
        Close,
        "close",
        Some("close")
    ),
    bind!(
        Lineage,
        [k('j'), code(KeyCode::Down)],
        "j ↓",
        Down,
        "next job",
        None
    ),
    bind!(
        Lineage,
        [k('k'), code(KeyCode::Up)],
        "k ↑",
        Up,
        "previous job",
        None
    ),
    bind!(
        Lineage,
        [code(KeyCode::Enter)],
        "Enter",
        Confirm,
        "show the job",
        Some("show")
    ),
    bind!(
        Lineage,
        [code(KeyCode::Esc), k('q'), k('L')],
        "Esc q L",
        Close,
        "close",
        Some("close")
    ),
    bind!(
        Input,
        [code(KeyCode::Enter)],
        "Enter",
        Confirm,
        "run the command / keep the filter",
        Some("done")
    ),
    bind!(
        Input,
        [code(KeyCode::Esc)],
        "Esc",
        Close,
        "cancel the command / clear the filter",
        Some("cancel")
    ),
];

/// The keys table for the README, generated from the registry.
pub fn markdown_table() -> String {
    let mut out = String::new();
    let mut scope = None;
    for b in BINDINGS {
        if scope != Some(b.scope) {
            if scope.is_some() {
                out.push('\n');
            }
            out.push_str(&format!(
                "**{}**\n\n| keys | action |\n|---|---|\n",
                b.scope.title()
            ));
            scope = Some(b.scope);
        }
        let keys: Vec<String> = b
            .label
            .split(' ')
            .map(|k| format!("`{}`", k.replace('|', "\\|")))
            .collect();
        out.push_str(&format!("| {} | {} |\n", keys.join(" "), b.description));
    }
    out
}
