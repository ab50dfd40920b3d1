//! The checks that read the SQL's tokens: what swallows duplicates, where
//! statements start, and, where no dialect parses the SQL, its volatile calls
//! and ranks.

use super::*;

/// The statements of the SQL by its `;` tokens, each taken for a query when
/// it starts as one (the parse, when there is one, says for sure).
pub(super) fn statement_starts(code: &[&TokenWithSpan]) -> Vec<StatementStart> {
    code.split(|t| t.token == Token::SemiColon)
        .filter_map(|statement| {
            let first = statement.first()?;
            let keyword = match &first.token {
                Token::Word(w) if w.quote_style.is_none() => w.value.to_uppercase(),
                other => other.to_string(),
            };
            let is_query = matches!(keyword.as_str(), "SELECT" | "WITH" | "VALUES" | "(");
            Some(StatementStart {
                line: line_of(first.span),
                keyword,
                is_query,
            })
        })
        .collect()
}

/// Where `<source>` stands (outside comments and strings): the placeholder
/// `idem init` writes for a starter job's source.
pub(super) fn placeholder(code: &[&TokenWithSpan]) -> Option<usize> {
    code.windows(3).find_map(|w| {
        (w[0].token == Token::Lt && is_word(Some(&w[1]), "source") && w[2].token == Token::Gt)
            .then(|| line_of(w[0].span))
    })
}

fn word(t: &TokenWithSpan) -> Option<&Word> {
    match &t.token {
        Token::Word(w) if w.quote_style.is_none() => Some(w),
        _ => None,
    }
}

fn is_word(t: Option<&&TokenWithSpan>, value: &str) -> bool {
    t.and_then(|t| word(t))
        .is_some_and(|w| w.value.eq_ignore_ascii_case(value))
}

/// `INSERT IGNORE`, `INSERT OR IGNORE`, `ON CONFLICT … DO NOTHING`: keyword
/// sequences, which tokens identify exactly (outside comments and strings).
pub(super) fn ignore_clauses(code: &[&TokenWithSpan]) -> Vec<IgnoreClause> {
    let mut out = Vec::new();
    for (i, t) in code.iter().enumerate() {
        let line = line_of(t.span);
        if is_word(Some(t), "insert") {
            if is_word(code.get(i + 1), "ignore") {
                out.push(IgnoreClause {
                    line,
                    clause: "INSERT IGNORE",
                });
            } else if is_word(code.get(i + 1), "or") && is_word(code.get(i + 2), "ignore") {
                out.push(IgnoreClause {
                    line,
                    clause: "INSERT OR IGNORE",
                });
            }
        } else if is_word(Some(t), "on") && is_word(code.get(i + 1), "conflict") {
            let rest = code[i + 2..]
                .iter()
                .take_while(|t| t.token != Token::SemiColon);
            let mut prev_do = false;
            for t in rest {
                if prev_do && is_word(Some(t), "nothing") {
                    out.push(IgnoreClause {
                        line,
                        clause: "ON CONFLICT DO NOTHING",
                    });
                    break;
                }
                prev_do = is_word(Some(t), "do");
                if is_word(Some(t), "update") {
                    break;
                }
            }
        }
    }
    out
}

/// Token-level [`Walk::function`], for SQL no dialect parses: a name followed
/// by `(` is a call; a clock keyword is one wherever it is not a qualified
/// name's part.
pub(super) fn volatile_tokens(code: &[&TokenWithSpan]) -> Vec<VolatileCall> {
    let mut out = Vec::new();
    for (i, t) in code.iter().enumerate() {
        let Some(w) = word(t) else { continue };
        let name = w.value.to_lowercase();
        let after_period = i > 0 && code[i - 1].token == Token::Period;
        let args = if code.get(i + 1).is_some_and(|t| t.token == Token::LParen) {
            Some(arguments(&code[i + 2..]))
        } else if after_period {
            continue;
        } else {
            None
        };
        if let Some(kind) = classify(&name, args) {
            out.push(VolatileCall {
                line: line_of(t.span),
                call: call_text(&name, args),
                kind,
            });
        }
    }
    out
}

/// Counts the arguments of a call whose tokens start after its `(`, and
/// whether one of them is the literal 'now'.
fn arguments(tokens: &[&TokenWithSpan]) -> (usize, bool) {
    let mut depth = 0usize;
    let mut count = 0;
    let mut any = false;
    let mut has_now = false;
    for t in tokens {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => count += 1,
            Token::SingleQuotedString(s) if depth == 0 && s.trim().eq_ignore_ascii_case("now") => {
                has_now = true;
            }
            _ => {}
        }
        any = true;
    }
    (if any { count + 1 } else { 0 }, has_now)
}

/// Token-level rank functions: `row_number (` … `) over`.
pub(super) fn rank_tokens(code: &[&TokenWithSpan]) -> Vec<RankColumn> {
    let mut out = Vec::new();
    for (i, t) in code.iter().enumerate() {
        let Some(w) = word(t) else { continue };
        let name = w.value.to_lowercase();
        if RANKS.contains(&name.as_str())
            && code.get(i + 1).is_some_and(|t| t.token == Token::LParen)
            && code.get(i + 2).is_some_and(|t| t.token == Token::RParen)
            && is_word(code.get(i + 3), "over")
        {
            out.push(RankColumn {
                line: line_of(t.span),
                function: name,
                alias: None,
            });
        }
    }
    out
}

/// `TABLESAMPLE`, a keyword wherever it is one (PostgreSQL's sampling
/// methods, SQL Server's): its rows are chosen at random, REPEATABLE or not
/// (a seed repeats the pick only while the table's pages stay as they are).
pub(super) fn sample_tokens(code: &[&TokenWithSpan]) -> Vec<VolatileCall> {
    code.iter()
        .filter(|t| is_word(Some(t), "tablesample"))
        .map(|t| VolatileCall {
            line: line_of(t.span),
            call: "tablesample".to_string(),
            kind: Volatile::Sample,
        })
        .collect()
}
