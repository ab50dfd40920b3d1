//! The live log lines of a run's partitions, bounded three ways: a ring per
//! partition, one over the whole run (the oldest line of any partition goes
//! first), and a cap on a line's length. A flood of lines costs a bounded
//! amount of memory, and each line costs constant time.

use std::collections::VecDeque;

/// Log lines kept per partition of a run.
pub const LOG_LINES: usize = 200;
/// Log lines kept over all the partitions of a run.
pub const RUN_LOG_LINES: usize = 20_000;
/// Characters kept of one log line.
pub const LINE_CHARS: usize = 1_000;

pub struct RunLogs {
    /// Each partition's newest lines, oldest first.
    lines: Vec<VecDeque<String>>,
    /// The partition of every line pushed, oldest first, at most
    /// `RUN_LOG_LINES`: lines its partition's own ring dropped stay here
    /// until they reach the front.
    order: VecDeque<usize>,
    /// How many entries of `order` name each partition; a partition holds
    /// at most that many lines.
    in_order: Vec<usize>,
    /// Lines of each partition let go by either bound.
    dropped: Vec<usize>,
}

impl RunLogs {
    /// Empty logs for `partitions` partitions.
    pub fn new(partitions: usize) -> RunLogs {
        RunLogs {
            lines: vec![VecDeque::new(); partitions],
            order: VecDeque::new(),
            in_order: vec![0; partitions],
            dropped: vec![0; partitions],
        }
    }

    /// Adds a message to partition `i`'s log, a line for each of its
    /// lines (a server's error with its DETAIL), dropping the oldest lines
    /// past either bound. Control characters (an escape sequence a server
    /// echoed) are shown, not obeyed ([`crate::terminal_text::visible_line`]).
    /// Returns the lines added.
    pub fn push(&mut self, i: usize, text: &str) -> usize {
        let mut added = 0;
        for line in text.split('\n') {
            let line = crate::terminal_text::visible_line(line.trim_end_matches('\r'));
            self.push_line(i, line);
            added += 1;
        }
        added
    }

    fn push_line(&mut self, i: usize, mut line: String) {
        let Some(ring) = self.lines.get_mut(i) else {
            return;
        };
        if let Some((cut, _)) = line.char_indices().nth(LINE_CHARS) {
            line.truncate(cut);
            line.push('…');
        }
        if ring.len() >= LOG_LINES {
            ring.pop_front();
            self.dropped[i] += 1;
        }
        ring.push_back(line);
        self.order.push_back(i);
        self.in_order[i] += 1;
        if self.order.len() > RUN_LOG_LINES
            && let Some(oldest) = self.order.pop_front()
        {
            self.in_order[oldest] -= 1;
            let ring = &mut self.lines[oldest];
            // Only when the partition's ring did not drop that line itself.
            if ring.len() > self.in_order[oldest] {
                ring.pop_front();
                self.dropped[oldest] += 1;
            }
        }
    }

    /// Makes room for a partition's log at row `i`, the rows from `i` on
    /// moving down one.
    pub fn insert(&mut self, i: usize) {
        let i = i.min(self.lines.len());
        self.lines.insert(i, VecDeque::new());
        self.in_order.insert(i, 0);
        self.dropped.insert(i, 0);
        for row in &mut self.order {
            if *row >= i {
                *row += 1;
            }
        }
    }

    /// Partition `i`'s lines, oldest first.
    pub fn of(&self, i: usize) -> &VecDeque<String> {
        const NONE: &VecDeque<String> = &VecDeque::new();
        self.lines.get(i).unwrap_or(NONE)
    }

    /// How many of partition `i`'s lines were let go to keep the bounds.
    pub fn dropped(&self, i: usize) -> usize {
        self.dropped.get(i).copied().unwrap_or(0)
    }

    /// Lines kept over all partitions.
    pub fn total(&self) -> usize {
        self.lines.iter().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_partition_keeps_its_newest_lines() {
        let mut logs = RunLogs::new(2);
        for k in 0..LOG_LINES + 5 {
            logs.push(1, &format!("line {k}"));
        }
        assert_eq!(logs.of(1).len(), LOG_LINES);
        assert_eq!(logs.of(1).front().map(String::as_str), Some("line 5"));
        assert!(logs.of(0).is_empty());
        assert!(logs.of(7).is_empty());
    }

    #[test]
    fn the_run_keeps_its_newest_lines_over_all_partitions() {
        let n = RUN_LOG_LINES / LOG_LINES * 3;
        let mut logs = RunLogs::new(n);
        // Every partition fills its ring, in turn; then one more line.
        for i in 0..n {
            for k in 0..LOG_LINES {
                logs.push(i, &format!("{i}:{k}"));
            }
        }
        assert_eq!(logs.total(), RUN_LOG_LINES);
        // The oldest partitions went first; the newest are whole.
        assert!(logs.of(0).is_empty());
        assert_eq!(logs.of(n - 1).len(), LOG_LINES);
        logs.push(0, "late");
        assert_eq!(logs.total(), RUN_LOG_LINES);
        assert_eq!(
            logs.of(0).iter().collect::<Vec<_>>(),
            ["late"],
            "a new line is kept whatever else is dropped"
        );
    }

    #[test]
    fn a_partition_flooding_its_own_ring_does_not_cost_others_lines() {
        let mut logs = RunLogs::new(2);
        logs.push(0, "quiet");
        for k in 0..RUN_LOG_LINES - 1 {
            logs.push(1, &format!("{k}"));
        }
        // The lines partition 1's own ring dropped are not counted twice.
        assert_eq!(logs.of(0).len(), 1);
        logs.push(1, "one more");
        assert!(logs.of(0).is_empty(), "the oldest line of the run goes");
        assert_eq!(logs.of(1).len(), LOG_LINES);
    }

    #[test]
    fn long_lines_are_cut() {
        let mut logs = RunLogs::new(1);
        logs.push(0, &"é".repeat(LINE_CHARS * 3));
        let kept = &logs.of(0)[0];
        assert_eq!(kept.chars().count(), LINE_CHARS + 1);
        assert!(kept.ends_with('…'));
    }

    /// QA: a server's error echoing data (an escape sequence, a DETAIL
    /// line) showed in the log pane with its line break and escape dropped
    /// by the terminal, "second lineDETAIL" glued and "[31m" left (then, its
    /// escape made a space: " [31m").
    #[test]
    fn a_message_of_several_lines_and_escapes_reads_as_lines() {
        let mut logs = RunLogs::new(1);
        logs.push(0, "failed: bad \u{1b}[31mred\r\nDETAIL: x\ty");
        assert_eq!(
            logs.of(0).iter().collect::<Vec<_>>(),
            ["failed: bad \\u{1b}[31mred", "DETAIL: x y"]
        );
    }

    /// A row inserted before others (a partition a cascade adds to a
    /// step) moves their lines down with them: the run's oldest line still
    /// goes from the partition that wrote it.
    #[test]
    fn an_inserted_row_keeps_the_others_lines_with_their_partitions() {
        let rows = RUN_LOG_LINES / LOG_LINES;
        let mut logs = RunLogs::new(rows + 2);
        logs.push(1, "oldest");
        logs.insert(0);
        assert!(logs.of(0).is_empty());
        assert_eq!(logs.of(2).iter().collect::<Vec<_>>(), ["oldest"]);
        // A full run's worth of lines in the other rows, none past its ring.
        for k in 0..RUN_LOG_LINES {
            logs.push(3 + k % rows, "newer");
        }
        logs.push(0, "newest");
        assert!(logs.of(2).is_empty(), "the oldest line went from its row");
        assert_eq!(logs.total(), RUN_LOG_LINES);
    }
}
