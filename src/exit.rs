//! How idem ends: the one list of exit codes, shared by the engine's run
//! summary, the headless commands and the console.

/// The process's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for succeeded.
    Ok,
    /// Some partitions failed, or the command could not do its work.
    Failed,
    /// The command line or the config is wrong.
    Usage,
    /// The operator cancelled (Ctrl-C, or cancel in the console).
    Cancelled,
}

impl Exit {
    /// The number the process ends with.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Cancelled => 130,
        }
    }
}

/// Endings order by how much they say went wrong (their codes), so that
/// `max` of several keeps the worst.
impl Ord for Exit {
    fn cmp(&self, other: &Exit) -> std::cmp::Ordering {
        self.code().cmp(&other.code())
    }
}

impl PartialOrd for Exit {
    fn partial_cmp(&self, other: &Exit) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        let codes: Vec<u8> = [Exit::Ok, Exit::Failed, Exit::Usage, Exit::Cancelled]
            .into_iter()
            .map(Exit::code)
            .collect();
        assert_eq!(codes, vec![0, 1, 2, 130]);
    }

    #[test]
    fn the_worst_ending_wins() {
        assert_eq!(Exit::Ok.max(Exit::Failed), Exit::Failed);
        assert_eq!(Exit::Cancelled.max(Exit::Failed), Exit::Cancelled);
        assert_eq!(Exit::Usage.max(Exit::Ok), Exit::Usage);
    }
}
