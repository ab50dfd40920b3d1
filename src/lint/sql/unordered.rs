//! `LIMIT`, `OFFSET`, `FETCH FIRST` and `TOP` without an `ORDER BY` in the
//! same query keep whichever rows the plan reads first: another plan, or
//! the same one over pages written since, keeps others. With an `ORDER BY`
//! that may tie they keep whichever of the tied rows comes first: an
//! `ORDER BY` over every column the query selects cannot (tied rows are the
//! same rows); any other may, unless its columns are unique, which the SQL
//! alone does not say. A subquery under `EXISTS` is left alone: whether it
//! finds a row does not depend on which.

use sqlparser::ast::{LimitClause, OrderByKind, SetExpr, Spanned};

use super::*;

/// A row-count clause of a query that has no `ORDER BY`, or one that may tie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::lint) struct Unordered {
    /// 1-based line in the job's SQL.
    pub line: usize,
    /// `LIMIT`, `OFFSET`, `FETCH FIRST` or `TOP`.
    pub clause: &'static str,
    /// The `ORDER BY`'s terms as written, where the query has one but it
    /// leaves out a column the query selects (`None`: no `ORDER BY`).
    pub may_tie: Option<String>,
}

/// The unordered row-count clauses of parsed statements.
pub(super) fn in_statements(statements: &[Statement]) -> Vec<Unordered> {
    let mut walk = Walk::default();
    for statement in statements {
        let _ = statement.visit(&mut walk);
    }
    walk.found
}

#[derive(Default)]
struct Walk {
    found: Vec<Unordered>,
    /// The subqueries of `EXISTS`, by address.
    exists: Vec<*const Query>,
}

impl Visitor for Walk {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Exists { subquery, .. } = expr {
            self.exists.push(&**subquery as *const Query);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if self.exists.contains(&(query as *const Query)) {
            return ControlFlow::Continue(());
        }
        let may_tie = match &query.order_by {
            None => None,
            Some(order_by) => match (&order_by.kind, query.body.as_ref()) {
                (OrderByKind::Expressions(terms), SetExpr::Select(select))
                    if !orders_every_column(terms, &select.projection) =>
                {
                    let terms: Vec<String> = terms.iter().map(ToString::to_string).collect();
                    Some(terms.join(", "))
                }
                // ORDER BY ALL, every column, or a set operation's (which
                // this does not follow).
                _ => return ControlFlow::Continue(()),
            },
        };
        let top = match query.body.as_ref() {
            SetExpr::Select(select) if select.top.is_some() => Some(select.select_token.0.span),
            _ => None,
        };
        // One finding a query: its clause that keeps rows, else its OFFSET.
        let (span, clause) = match (&query.limit_clause, &query.fetch, top) {
            (Some(LimitClause::LimitOffset { limit: Some(l), .. }), _, _) => (l.span(), "LIMIT"),
            (Some(c @ LimitClause::OffsetCommaLimit { .. }), _, _) => (c.span(), "LIMIT"),
            (_, Some(fetch), _) => (fetch.span(), "FETCH FIRST"),
            (_, _, Some(span)) => (span, "TOP"),
            (
                Some(LimitClause::LimitOffset {
                    offset: Some(o), ..
                }),
                _,
                _,
            ) => (o.value.span(), "OFFSET"),
            _ => return ControlFlow::Continue(()),
        };
        let span = if span.start.line > 0 {
            span
        } else {
            query.span()
        };
        self.found.push(Unordered {
            line: line_of(span),
            clause,
            may_tie,
        });
        ControlFlow::Continue(())
    }
}

/// Whether `terms` order by every column of `projection`: by its
/// expression, its alias, its place (`order by 1`) or, for a column
/// (`o.id`), its name. Rows alike in all of them are the same output row,
/// so it does not matter which of them is kept. A `*` is never covered.
fn orders_every_column(terms: &[sqlparser::ast::OrderByExpr], projection: &[SelectItem]) -> bool {
    let text = |e: &Expr| e.to_string().to_lowercase();
    let name = |e: &Expr| match e {
        Expr::Identifier(i) => Some(i.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.to_lowercase()),
        _ => None,
    };
    let ordered: Vec<(String, Option<String>)> = terms
        .iter()
        .map(|t| (text(&t.expr), name(&t.expr)))
        .collect();
    projection.iter().enumerate().all(|(i, item)| {
        let place = (i + 1).to_string();
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.to_lowercase())),
            _ => return false,
        };
        let (expr_text, expr_name) = (text(expr), name(expr));
        ordered.iter().any(|(t, n)| {
            *t == expr_text || *t == place || (n.is_some() && (*n == alias || *n == expr_name))
        })
    })
}

/// Token-level [`in_statements`], for SQL no dialect parses: a row-count
/// keyword with no `ORDER BY` at its own level of parentheses (before it;
/// after it for `TOP`), outside an `EXISTS (…)`. Whether an `ORDER BY`
/// may tie needs the parse: it is not said here.
pub(super) fn in_tokens(code: &[&TokenWithSpan]) -> Vec<Unordered> {
    /// One level of parentheses (or the statement): whether an ORDER BY
    /// was seen in it, whether it is an EXISTS, its clauses so far.
    #[derive(Default)]
    struct Level {
        ordered: bool,
        exists: bool,
        clauses: Vec<Unordered>,
    }
    fn close(level: Level, found: &mut Vec<Unordered>) {
        if !level.ordered && !level.exists {
            // One finding a level: a row-keeping clause before an OFFSET.
            let first = level
                .clauses
                .iter()
                .find(|c| c.clause != "OFFSET")
                .or(level.clauses.first());
            found.extend(first.cloned());
        }
    }
    let word = |t: Option<&&TokenWithSpan>, value: &str| {
        t.is_some_and(|t| {
            matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(value))
        })
    };
    let mut found = Vec::new();
    let mut levels = vec![Level::default()];
    for (i, t) in code.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|p| code.get(p));
        match &t.token {
            Token::LParen => levels.push(Level {
                exists: word(prev, "exists"),
                ..Level::default()
            }),
            Token::RParen if levels.len() > 1 => {
                if let Some(level) = levels.pop() {
                    close(level, &mut found);
                }
            }
            Token::SemiColon => {
                for level in levels.drain(..) {
                    close(level, &mut found);
                }
                levels.push(Level::default());
            }
            _ => {}
        }
        let Some(here) = levels.last_mut() else {
            continue;
        };
        let clause = if word(Some(t), "by") && word(prev, "order") {
            here.ordered = true;
            None
        } else if word(Some(t), "limit") {
            Some("LIMIT")
        } else if word(Some(t), "offset") {
            Some("OFFSET")
        } else if word(Some(t), "fetch")
            && (word(code.get(i + 1), "first") || word(code.get(i + 1), "next"))
        {
            Some("FETCH FIRST")
        } else if word(Some(t), "top") && (word(prev, "select") || word(prev, "distinct")) {
            Some("TOP")
        } else {
            None
        };
        if let Some(clause) = clause {
            here.clauses.push(Unordered {
                line: line_of(t.span),
                clause,
                may_tie: None,
            });
        }
    }
    for level in levels {
        close(level, &mut found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::super::read;
    use crate::config::Engine;

    /// SQL no dialect parses (three words in a row) is read by its tokens alike.
    #[test]
    fn tokens_find_what_the_parse_finds() {
        let clauses = |tail: &str| {
            let sql = format!(
                "select id, frobnicate frobnicate frobnicate from src where dt >= :start {tail}"
            );
            let reading = read(&sql, Engine::Postgres);
            assert!(!reading.parsed, "{sql}");
            reading
                .unordered
                .iter()
                .map(|u| u.clause)
                .collect::<Vec<_>>()
        };
        assert_eq!(clauses("limit 5"), ["LIMIT"]);
        assert_eq!(clauses("limit 5 offset 2"), ["LIMIT"]);
        assert_eq!(clauses("offset 2 fetch first 3 rows only"), ["FETCH FIRST"]);
        assert!(clauses("order by id limit 5").is_empty());
        assert!(clauses("and id in (select id from x order by id limit 5)").is_empty());
        assert_eq!(
            clauses("and id in (select id from x limit 5) order by id"),
            ["LIMIT"]
        );
        assert!(clauses("and exists (select 1 from x limit 1)").is_empty());
        assert_eq!(clauses("; select top 3 id from y"), ["TOP"]);
        assert!(clauses("; select top 3 id from y order by id").is_empty());
    }
}
