//! What a key can ask the console to do, and where a binding applies: the
//! names the registry, the user config's `[keys.SCOPE]` tables and the
//! panes' key handling share.

/// What a key asks the console to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Left,
    Down,
    Up,
    Right,
    PrevMonth,
    NextMonth,
    First,
    Last,
    /// The runs pane: the selected run's next (previous) partition that did
    /// not load, and its first and last partition.
    NextFailed,
    PrevFailed,
    FirstRow,
    LastRow,
    /// A screenful down or up, in a scrolled overlay.
    PageDown,
    PageUp,
    NextJob,
    PrevJob,
    FocusNext,
    FocusPrev,
    Activate,
    RangeSelect,
    SelectFailed,
    SelectMissing,
    SelectStale,
    SelectOutOfDate,
    ClearSelection,
    ErrorGroups,
    Run,
    Verify,
    WhatChanged,
    Lineage,
    Cancel,
    ToggleRows,
    ToggleChart,
    ChartSpan,
    Reconcile,
    Filter,
    Command,
    Refresh,
    Help,
    Quit,
    Interrupt,
    // Confirm dialog.
    Confirm,
    Close,
    OnlyAll,
    OnlyFailed,
    OnlyMissing,
    OnlyStale,
    EditReason,
    ThroughLatest,
    Cascade,
    AllowShrink,
    CopyCommand,
    // Questions (cancel a run? quit?).
    Yes,
    No,
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Main,
    Confirm,
    Question,
    List,
    Help,
    Input,
    Diff,
    Lineage,
}

impl Scope {
    pub fn title(self) -> &'static str {
        match self {
            Scope::Main => "Main screen",
            Scope::Confirm => "Confirm dialog",
            Scope::Question => "Questions (cancel, quit)",
            Scope::List => "Error groups list",
            Scope::Help => "Help",
            Scope::Diff => "What changed (definition diff)",
            Scope::Lineage => "Lineage view",
            Scope::Input => {
                "Filter and command line (text editing as in a shell: ← → Home End, Ctrl-W, Ctrl-U)"
            }
        }
    }
}
