//! The code's shape, checked: no source file grows past about 700 lines,
//! and modules depend on each other one way only, among the crate's
//! top-level modules and among the console's panes. A dependency is any
//! `crate::…` (or, inside a folder, `super::…`) path in a file's code
//! outside its tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// "About 700 lines": room for a file to breathe, none for a second one
/// inside it.
const MAX_LINES: usize = 750;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path below `src/`: `tui/app/mod.rs` is `["tui", "app"]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The file's code before its `#[cfg(test)]` module, comments left out
/// (a doc link is no dependency).
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let code = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first names after each `prefix` in `code`: `crate::a::b` and
/// `crate::{a, b::c}` give `a` (and `b`).
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let word = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in code.match_indices(prefix) {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let w = word(item);
                if !w.is_empty() {
                    out.insert(w);
                }
            }
        } else {
            let w = word(rest);
            if !w.is_empty() {
                out.insert(w);
            }
        }
    }
    out
}

/// A cycle in `graph`, if there is one, as the path around it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// Edges between the children of module `parent` (`[]` for the crate's
/// top-level modules): the parent itself, which declares and re-exports
/// them, is no node.
fn graph_under(parent: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let depth = parent.len();
    let prefix: String = std::iter::once("crate".to_string())
        .chain(parent.iter().map(|s| s.to_string()))
        .map(|s| format!("{s}::"))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut children = BTreeSet::new();
    for file in &files {
        let m = module_of(file);
        if m.len() > depth && m[..depth] == *parent {
            children.insert(m[depth].clone());
        }
    }
    for file in files {
        let m = module_of(&file);
        if m.len() <= depth || m[..depth] != *parent {
            continue;
        }
        let me = m[depth].clone();
        let code = code(&file);
        let mut targets = names_after(&code, &prefix);
        // Inside a folder, `super::X` from a child's root file and
        // `super::super::X` from a file below it name siblings.
        if depth > 0 {
            if m.len() == depth + 1 {
                targets.extend(names_after(&code, "super::"));
            } else if m.len() == depth + 2 {
                targets.extend(names_after(&code, "super::super::"));
            }
        }
        let entry = graph.entry(me.clone()).or_default();
        for t in targets {
            if t != me && children.contains(&t) {
                entry.insert(t);
            }
        }
    }
    graph
}

#[test]
fn no_source_file_is_over_about_700_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these: {long:?}");
}

#[test]
fn top_level_modules_depend_one_way() {
    let graph = graph_under(&[]);
    assert!(graph.contains_key("tui") && graph.contains_key("engine"));
    assert!(graph["tui"].contains("engine"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("module cycle: {}", cycle.join(" → "));
    }
}

#[test]
fn console_panes_depend_one_way() {
    let graph = graph_under(&["tui"]);
    assert!(graph["view"].contains("app"), "{graph:?}");
    assert!(graph["app"].contains("confirm"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("module cycle in tui: {}", cycle.join(" → "));
    }
    // The panes draw and update themselves: none reaches back for the app
    // or the view.
    for (pane, deps) in &graph {
        if !["app", "view", "terminal", "background"].contains(&pane.as_str()) {
            assert!(
                !deps.contains("app") && !deps.contains("view"),
                "{pane} depends on {deps:?}"
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&graph), None);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        names_after(
            "use crate::{state::X, engine};\nlet y = crate::cli::f();",
            "crate::"
        ),
        ["cli", "engine", "state"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}
