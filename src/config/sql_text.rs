//! How a server reads the text of SQL: where its string literals, quoted
//! names and comments begin and end. Loads bind parameters by it, lint
//! reads the job's SQL by it, and a job's definition is compared by it
//! (whitespace and comments aside).

use super::Engine;

/// How a server reads the quoting of SQL text: its engine's rules, and
/// whether a backslash in a string escapes the next character. That is
/// the engine's default ([`Engine::backslash_escapes`]) unless the server
/// says otherwise: a MariaDB/MySQL server whose `sql_mode` has
/// `NO_BACKSLASH_ESCAPES` reads `'C:\'` as a whole string, where by
/// default it is the start of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syntax {
    pub engine: Engine,
    pub backslash_escapes: bool,
}

impl From<Engine> for Syntax {
    fn from(engine: Engine) -> Syntax {
        Syntax {
            engine,
            backslash_escapes: engine.backslash_escapes(),
        }
    }
}

/// A string literal, quoted name or comment starting at `i`, as `syntax`
/// reads them: whether it is a comment, and where it ends. A backslash
/// escapes the next character where the syntax says so, and in
/// PostgreSQL's `E'…'` strings; PostgreSQL also quotes with `$tag$…$tag$`,
/// and MariaDB/MySQL also comment with `#`.
pub(crate) fn quoted_or_comment(
    bytes: &[u8],
    mut i: usize,
    syntax: Syntax,
) -> Option<(bool, usize)> {
    let engine = syntax.engine;
    let line_comment = |mut i: usize| {
        while i < bytes.len() && bytes[i] != b'\n' {
            i += 1;
        }
        Some((true, i))
    };
    match bytes[i] {
        q @ (b'\'' | b'"' | b'`') => {
            let escapes = syntax.backslash_escapes
                || (q == b'\''
                    && engine == Engine::Postgres
                    && i > 0
                    && matches!(bytes[i - 1], b'e' | b'E')
                    && (i < 2 || !(bytes[i - 2].is_ascii_alphanumeric() || bytes[i - 2] == b'_')));
            i += 1;
            while i < bytes.len() {
                if bytes[i] == q {
                    if bytes.get(i + 1) == Some(&q) {
                        i += 2;
                        continue;
                    }
                    break;
                }
                if bytes[i] == b'\\' && escapes && q != b'`' {
                    i += 1;
                }
                i += 1;
            }
            Some((false, (i + 1).min(bytes.len())))
        }
        // MariaDB/MySQL read `--` as a comment only before a space or a
        // control character: `0--1` is zero minus minus one there.
        b'-' if bytes.get(i + 1) == Some(&b'-')
            && (engine != Engine::MySql || bytes.get(i + 2).is_none_or(|b| *b <= b' ')) =>
        {
            line_comment(i)
        }
        b'#' if engine == Engine::MySql => line_comment(i),
        b'$' if engine == Engine::Postgres => {
            // `$$` or `$tag$`, the tag an identifier (`$1` is a parameter).
            let tag_end = bytes[i + 1..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                .map(|n| i + 1 + n)?;
            if bytes[tag_end] != b'$' || bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            let tag = &bytes[i..=tag_end];
            let close = bytes[tag_end + 1..]
                .windows(tag.len())
                .position(|w| w == tag)
                .map_or(bytes.len(), |n| tag_end + 1 + n + tag.len());
            Some((false, close))
        }
        // MariaDB/MySQL run the text of `/*! … */` and `/*M! … */`.
        b'/' if bytes.get(i + 1) == Some(&b'*')
            && engine == Engine::MySql
            && (bytes.get(i + 2) == Some(&b'!')
                || bytes.get(i + 2..i + 4) == Some(b"M!".as_slice())) =>
        {
            None
        }
        b'/' if bytes.get(i + 1) == Some(&b'*') => {
            // PostgreSQL's block comments nest; the others end at the first `*/`.
            let nests = engine == Engine::Postgres;
            let mut depth = 1;
            i += 2;
            while i < bytes.len() {
                if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        return Some((true, i));
                    }
                } else if nests && bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            Some((true, bytes.len()))
        }
        _ => None,
    }
}

/// A job's query without what may follow it: whitespace, comments and
/// semicolons (`select …; -- done`), which would break the statement idem
/// wraps it in.
pub(crate) fn query_body(sql: &str, syntax: impl Into<Syntax>) -> &str {
    let syntax = syntax.into();
    let bytes = sql.as_bytes();
    let (mut end, mut i) = (0, 0);
    while i < bytes.len() {
        if let Some((comment, next)) = quoted_or_comment(bytes, i, syntax) {
            if !comment {
                end = next;
            }
            i = next;
            continue;
        }
        if !bytes[i].is_ascii_whitespace() && bytes[i] != b';' {
            end = i + 1;
        }
        i += 1;
    }
    // `end` follows an ASCII byte or a whole literal: a char boundary.
    sql.get(..end).unwrap_or(sql)
}

/// The job's query as its server reads it, whitespace and comments aside:
/// each run of them one space (a comment separates tokens as a space
/// does), string literals, quoted names and optimizer hints (`/*+ … */`)
/// as written. Two texts alike so are one query; a definition compared by
/// it is not changed by re-indenting its SQL or editing a comment.
pub(crate) fn normalized(sql: &str, syntax: impl Into<Syntax>) -> String {
    let syntax = syntax.into();
    let body = query_body(sql, syntax);
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len());
    let mut space = false;
    let mut i = 0;
    let mut from = 0;
    let flush = |out: &mut String, text: &str, space: &mut bool| {
        if *space && !out.is_empty() {
            out.push(' ');
        }
        *space = false;
        out.push_str(text);
    };
    while i < bytes.len() {
        if let Some((comment, next)) = quoted_or_comment(bytes, i, syntax) {
            if from < i {
                flush(&mut out, &body[from..i], &mut space);
            }
            if comment && !body[i..next].starts_with("/*+") {
                space = true;
            } else {
                flush(&mut out, &body[i..next], &mut space);
            }
            i = next;
            from = next;
            continue;
        }
        if bytes[i].is_ascii_whitespace() {
            if from < i {
                flush(&mut out, &body[from..i], &mut space);
            }
            space = true;
            i += 1;
            from = i;
            continue;
        }
        i += 1;
    }
    if from < bytes.len() {
        flush(&mut out, &body[from..], &mut space);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_and_comments_are_one_space_and_the_rest_is_kept() {
        let pg =
            |a: &str, b: &str| normalized(a, Engine::Postgres) == normalized(b, Engine::Postgres);
        assert!(pg(
            "select id,\n       dt\n  from src   -- the source\n where dt >= :start;",
            "select id, dt from src where dt >= :start"
        ));
        assert!(pg("select a/* c */b", "select a b"));
        assert!(pg("select 1 /* a /* nested */ comment */", "select 1"));
        // Not alike: a string, a quoted name, a hint, tokens joined.
        assert!(!pg("select 'a  b'", "select 'a b'"));
        assert!(!pg("select \"a  b\"", "select \"a b\""));
        assert!(!pg("select /*+ SeqScan(t) */ 1", "select 1"));
        assert!(!pg("select a b", "select ab"));
        assert!(!pg("select $$x  y$$", "select $$x y$$"));
        // MariaDB: `--` without a space is no comment; `/*! … */` is run.
        let my = |a: &str, b: &str| normalized(a, Engine::MySql) == normalized(b, Engine::MySql);
        assert!(!my("select 0--1", "select 0"));
        assert!(my("select 1 # done\n", "select 1"));
        assert!(!my("select 1 /*! , 2 */", "select 1"));
    }
}
