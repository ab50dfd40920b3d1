//! Reading a job's SQL the way a database would: idem's `:start` / `:end` /
//! `:partition` become marker identifiers, sqlparser parses the result (trying
//! the dialects idem runs on), and where no dialect parses it the checks fall
//! back to sqlparser's tokens. Comments, string literals and quoted names are
//! never mistaken for code either way.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Query, Select,
    SelectItem, SetExpr, Statement, Value, Visit, Visitor, visit_expressions,
};
use sqlparser::dialect::{Dialect, GenericDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};

use crate::warehouse::sql::{Piece, Syntax, in_default_quoting, split_parameters};

mod grouped;
mod tokens;
mod unordered;

pub(super) use grouped::bounds_as_row_filters;
use tokens::{
    ignore_clauses, placeholder, rank_tokens, sample_tokens, statement_starts, volatile_tokens,
};
pub(super) use unordered::Unordered;

/// The prefix of the identifiers that stand for idem's parameters.
const MARKER: &str = "__idem_param_";

/// Why a function makes a job's output differ between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Volatile {
    Clock,
    Random,
    Uuid,
    /// A sequence's next value: every run takes new numbers.
    Sequence,
    /// The connection's or transaction's id: another for every run.
    Session,
    /// `TABLESAMPLE`: a random part of a table's rows.
    Sample,
}

/// A call (or keyword) that makes the output non-deterministic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct VolatileCall {
    /// 1-based line in the job's SQL.
    pub line: usize,
    /// As written, lower-cased: `now()`, `current_date`, `date('now')`.
    pub call: String,
    pub kind: Volatile,
}

/// A `row_number()`-style window function in a SELECT list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RankColumn {
    pub line: usize,
    pub function: String,
    pub alias: Option<String>,
}

/// A statement form that swallows duplicates: `INSERT IGNORE` and friends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IgnoreClause {
    pub line: usize,
    pub clause: &'static str,
}

/// Where a statement of the job's SQL begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StatementStart {
    pub line: usize,
    /// Its first word, upper-cased: `SELECT`, `INSERT`, `MERGE`.
    pub keyword: String,
    pub is_query: bool,
}

/// A column compared with a window parameter: `created_at >= :start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WindowFilter {
    pub line: usize,
    pub column: String,
}

/// One output column of the job's SELECT.
#[derive(Debug, Clone)]
pub(super) struct OutputColumn {
    /// Its name, when the SELECT alone says it (an alias or a bare column).
    pub name: Option<String>,
    /// The columns its expression reads, lower-cased.
    pub sources: BTreeSet<String>,
}

/// What lint learns from a job's SQL.
#[derive(Debug, Default)]
pub(super) struct Reading {
    /// Parameters used, in order, with their 1-based lines.
    pub params: Vec<(String, usize)>,
    /// The tokenizer's complaint, when not even tokens could be read.
    pub unreadable: Option<String>,
    /// Whether a dialect parsed the SQL (otherwise only tokens were checked).
    pub parsed: bool,
    pub volatile: Vec<VolatileCall>,
    pub ranks: Vec<RankColumn>,
    pub ignores: Vec<IgnoreClause>,
    /// `LIMIT` and its kin in a query without `ORDER BY`, or over one that may tie.
    pub unordered: Vec<Unordered>,
    /// Each statement of the SQL: its first line and first keyword, and
    /// whether it is a query.
    pub statements: Vec<StatementStart>,
    pub window_filters: Vec<WindowFilter>,
    /// How many of `params` are compared with a column (`dt >= :start`).
    pub params_in_filters: usize,
    /// The top-level SELECT's columns; None when it has a `*` or is not a
    /// plain query.
    pub outputs: Option<Vec<OutputColumn>>,
    /// Every alias given in any SELECT list, and the columns it is computed
    /// from, for following a column through CTEs and subqueries.
    pub aliases: HashMap<String, BTreeSet<String>>,
    /// The tables the SQL reads, lower-cased and as qualified as written
    /// (`raw.orders`, `orders`), CTEs left out.
    pub tables: BTreeSet<String>,
    /// The same tables as written: each part of the name with whether it
    /// was quoted (PostgreSQL folds an unquoted one to lower case).
    pub tables_written: BTreeSet<Vec<(String, bool)>>,
    /// The parsed statements, when a dialect parsed the SQL.
    pub ast: Vec<Statement>,
    /// The line of `<source>`, `idem init`'s stand-in for the table a
    /// starter job loads from, while it is still there.
    pub placeholder: Option<usize>,
}

impl Reading {
    /// The lower-cased columns `name` is computed from, following aliases
    /// through every SELECT of the query (and `name` itself).
    pub fn lineage(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_lowercase()];
        while let Some(n) = todo.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            if let Some(sources) = self.aliases.get(&n) {
                todo.extend(sources.iter().cloned());
            }
        }
        seen
    }
}

pub(super) fn read(sql: &str, syntax: impl Into<Syntax>) -> Reading {
    // sqlparser reads MariaDB/MySQL's default quoting only: the SQL is
    // written as that default reads what the server does (a server with
    // ANSI_QUOTES reads `"fct"` as the name the parser reads in `` `fct` ``,
    // one with NO_BACKSLASH_ESCAPES `'C:\'` as the parser reads `'C:\\'`).
    let as_written = syntax.into();
    let sql = in_default_quoting(sql, as_written);
    let syntax = Syntax::from(as_written.engine);
    let mut reading = Reading::default();
    let mut text = String::with_capacity(sql.len() + 64);
    let mut line = 1;
    for piece in split_parameters(&sql, syntax) {
        match piece {
            Piece::Text(t) => {
                line += t.matches('\n').count();
                text.push_str(t);
            }
            Piece::Param(name) => {
                reading.params.push((name.to_string(), line));
                text.push_str(MARKER);
                text.push_str(name);
            }
        }
    }

    // The engine's own dialect first: it reads comments as its server does
    // (MariaDB's `0--1` is arithmetic, PostgreSQL's `/* /* */ */` one comment).
    let (postgres, mysql, sqlite) = (PostgreSqlDialect {}, MySqlDialect {}, SQLiteDialect {});
    let own: &dyn Dialect = match syntax.engine {
        crate::config::Engine::Postgres => &postgres,
        crate::config::Engine::MySql => &mysql,
        crate::config::Engine::Sqlite => &sqlite,
    };
    let dialects: [&dyn Dialect; 5] = [own, &postgres, &mysql, &sqlite, &GenericDialect {}];
    let parse = dialects
        .iter()
        .find_map(|d| Parser::parse_sql(*d, &text).ok().map(|s| (*d, s)));
    // Tokens as the dialect that parsed reads them: its comments and quotes.
    let dialect = parse.as_ref().map_or(dialects[4], |(d, _)| *d);
    let tokens = match Tokenizer::new(dialect, &text).tokenize_with_location() {
        Ok(tokens) => tokens,
        Err(e) => {
            reading.unreadable = Some(e.message);
            return reading;
        }
    };
    let code: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect();
    reading.ignores = ignore_clauses(&code);
    reading.statements = statement_starts(&code);
    reading.placeholder = placeholder(&code);

    let statements = parse.map(|(_, s)| s);
    match statements {
        Some(statements) => {
            reading.parsed = true;
            let mut walk = Walk::default();
            let _ = statements.visit(&mut walk);
            reading.volatile = walk.volatile;
            reading.window_filters = walk.window_filters;
            reading.params_in_filters = walk.params_in_filters;
            reading.tables = walk
                .relations
                .into_iter()
                .filter(|t| !walk.ctes.contains(t))
                .collect();
            reading.tables_written = walk
                .written
                .into_iter()
                .filter(|parts| {
                    let name: Vec<String> = parts.iter().map(|(p, _)| p.to_lowercase()).collect();
                    !walk.ctes.contains(&name.join("."))
                })
                .collect();
            reading.aliases = walk.aliases;
            reading.ranks = walk
                .ranks
                .into_iter()
                .filter(|r| {
                    r.alias
                        .as_ref()
                        .is_none_or(|a| !walk.filter_names.contains(a))
                })
                .collect();
            if let [Statement::Query(query)] = statements.as_slice() {
                reading.outputs = top_select(query).and_then(output_columns);
            }
            if statements.len() == reading.statements.len() {
                for (start, statement) in reading.statements.iter_mut().zip(&statements) {
                    start.is_query = matches!(statement, Statement::Query(_));
                }
            }
            reading.unordered = unordered::in_statements(&statements);
            reading.ast = statements;
        }
        None => {
            reading.volatile = volatile_tokens(&code);
            reading.ranks = rank_tokens(&code);
            reading.unordered = unordered::in_tokens(&code);
        }
    }
    reading.volatile.extend(sample_tokens(&code));
    reading
}

fn line_of(span: sqlparser::tokenizer::Span) -> usize {
    (span.start.line as usize).max(1)
}

fn is_param(ident: &str) -> bool {
    ident.starts_with(MARKER)
}

const CLOCK: &[&str] = &[
    "now",
    "sysdate",
    "getdate",
    "getutcdate",
    "sysdatetime",
    "sysdatetimeoffset",
    "sysutcdatetime",
    "systimestamp",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "curdate",
    "curtime",
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
    "utc_date",
    "utc_time",
    "utc_timestamp",
];
/// The keywords among [`CLOCK`] that need no parentheses.
const CLOCK_KEYWORDS: &[&str] = &[
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
];
/// Clock functions only when called without arguments: `unix_timestamp()`
/// is now, `unix_timestamp(created_at)` is not.
const CLOCK_WITHOUT_ARGS: &[&str] = &["unix_timestamp", "unixepoch"];
/// SQLite's date functions read the clock with no argument or with 'now'.
const SQLITE_DATE: &[&str] = &[
    "date",
    "datetime",
    "time",
    "julianday",
    "strftime",
    "unixepoch",
    "timediff",
];
const RANDOM: &[&str] = &[
    "random",
    "rand",
    "randomblob",
    "random_bytes",
    "gen_random_bytes",
];
const UUID: &[&str] = &[
    "uuid",
    "uuid_short",
    "gen_random_uuid",
    "uuid_generate_v1",
    "uuid_generate_v1mc",
    "uuid_generate_v4",
    "uuidv4",
    "uuidv7",
    "newid",
    "newsequentialid",
    "sys_guid",
    "generate_uuid",
];
/// Sequences, which hand out new numbers on every call.
const SEQUENCE: &[&str] = &["nextval", "lastval", "setval"];
/// Ids of the connection or transaction that runs the SQL.
const SESSION: &[&str] = &[
    "txid_current",
    "txid_current_if_assigned",
    "pg_current_xact_id",
    "pg_current_xact_id_if_assigned",
    "pg_backend_pid",
    "connection_id",
    "last_insert_id",
    "last_insert_rowid",
];
const RANKS: &[&str] = &["row_number", "rank", "dense_rank"];

/// The string literals PostgreSQL reads as the current time.
fn is_now_literal(s: &str) -> bool {
    matches!(
        s.trim().to_lowercase().as_str(),
        "now" | "today" | "tomorrow" | "yesterday"
    )
}

/// Classifies a call of `name` with `args` (None: no parentheses; Some: the
/// argument count and whether one of them is the literal 'now').
fn classify(name: &str, args: Option<(usize, bool)>) -> Option<Volatile> {
    match args {
        None => CLOCK_KEYWORDS.contains(&name).then_some(Volatile::Clock),
        Some((n, has_now)) => {
            if CLOCK.contains(&name)
                || (n == 0 && CLOCK_WITHOUT_ARGS.contains(&name))
                || (SQLITE_DATE.contains(&name) && (n == 0 || has_now))
                // SQLite's strftime(format) formats the current time.
                || (name == "strftime" && n == 1)
            {
                Some(Volatile::Clock)
            } else if RANDOM.contains(&name) {
                Some(Volatile::Random)
            } else if UUID.contains(&name) {
                Some(Volatile::Uuid)
            } else if SEQUENCE.contains(&name) {
                Some(Volatile::Sequence)
            } else if SESSION.contains(&name) {
                Some(Volatile::Session)
            } else {
                None
            }
        }
    }
}

fn call_text(name: &str, args: Option<(usize, bool)>) -> String {
    match args {
        None => name.to_string(),
        Some((_, true)) => format!("{name}('now')"),
        Some((0, false)) => format!("{name}()"),
        Some(_) => format!("{name}(…)"),
    }
}

#[derive(Default)]
struct Walk {
    volatile: Vec<VolatileCall>,
    ranks: Vec<RankColumn>,
    filter_names: HashSet<String>,
    window_filters: Vec<WindowFilter>,
    params_in_filters: usize,
    aliases: HashMap<String, BTreeSet<String>>,
    relations: BTreeSet<String>,
    written: BTreeSet<Vec<(String, bool)>>,
    ctes: HashSet<String>,
}

impl Walk {
    fn function(&mut self, f: &Function) {
        let Some(ident) = f.name.0.last().and_then(|p| p.as_ident()) else {
            return;
        };
        let name = ident.value.to_lowercase();
        let args = match &f.args {
            FunctionArguments::None => None,
            FunctionArguments::Subquery(_) => Some((1, false)),
            FunctionArguments::List(list) => {
                let has_now = list.args.iter().any(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => {
                        matches!(&v.value, Value::SingleQuotedString(s) if s.trim().eq_ignore_ascii_case("now"))
                    }
                    _ => false,
                });
                Some((list.args.len(), has_now))
            }
        };
        if let Some(kind) = classify(&name, args) {
            self.volatile.push(VolatileCall {
                line: line_of(ident.span),
                call: call_text(&name, args),
                kind,
            });
        }
    }

    /// `'now'::timestamp`, `cast('today' as date)`, `timestamp 'now'`.
    fn now_literal(&mut self, value: &Expr, type_name: String) {
        let Expr::Value(v) = value else { return };
        let Value::SingleQuotedString(s) = &v.value else {
            return;
        };
        let type_name = type_name.to_lowercase();
        if is_now_literal(s) && (type_name.contains("date") || type_name.contains("time")) {
            self.volatile.push(VolatileCall {
                line: line_of(v.span),
                call: format!("'{}'::{type_name}", s.trim().to_lowercase()),
                kind: Volatile::Clock,
            });
        }
    }

    fn comparison(&mut self, column_side: &Expr, param_side: &Expr) {
        if contains_param(param_side) && !contains_param(column_side) {
            self.params_in_filters += params_in(param_side);
            for (column, line) in columns_in(column_side) {
                self.window_filters.push(WindowFilter { line, column });
            }
        }
    }
}

impl Visitor for Walk {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.ctes.insert(cte.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &sqlparser::ast::ObjectName) -> ControlFlow<()> {
        let parts: Vec<String> = relation
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(|i| i.value.to_lowercase()))
            .collect();
        if !parts.is_empty() {
            self.relations.insert(parts.join("."));
            self.written.insert(
                relation
                    .0
                    .iter()
                    .filter_map(|p| p.as_ident())
                    .map(|i| (i.value.clone(), i.quote_style.is_some()))
                    .collect(),
            );
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(f) => self.function(f),
            Expr::Cast {
                expr, data_type, ..
            } => self.now_literal(expr, data_type.to_string()),
            Expr::TypedString(ts) => {
                if let Value::SingleQuotedString(s) = &ts.value.value
                    && is_now_literal(s)
                {
                    self.volatile.push(VolatileCall {
                        line: line_of(ts.value.span),
                        call: format!("{} '{}'", ts.data_type, s.trim()).to_lowercase(),
                        kind: Volatile::Clock,
                    });
                }
            }
            Expr::BinaryOp {
                left,
                op:
                    BinaryOperator::Gt
                    | BinaryOperator::GtEq
                    | BinaryOperator::Lt
                    | BinaryOperator::LtEq
                    | BinaryOperator::Eq,
                right,
            } => {
                self.comparison(left, right);
                self.comparison(right, left);
            }
            Expr::Between {
                expr, low, high, ..
            } if (contains_param(low) || contains_param(high)) && !contains_param(expr) => {
                self.params_in_filters += params_in(low) + params_in(high);
                for (column, line) in columns_in(expr) {
                    self.window_filters.push(WindowFilter { line, column });
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        for item in &select.projection {
            let (expr, alias) = match item {
                SelectItem::UnnamedExpr(e) => (e, None),
                SelectItem::ExprWithAlias { expr, alias } => {
                    (expr, Some(alias.value.to_lowercase()))
                }
                _ => continue,
            };
            if let Some(alias) = &alias {
                let sources: BTreeSet<String> =
                    columns_in(expr).into_iter().map(|(c, _)| c).collect();
                self.aliases
                    .entry(alias.clone())
                    .or_default()
                    .extend(sources);
            }
            let _ = visit_expressions(expr, |e| {
                if let Expr::Function(f) = e
                    && f.over.is_some()
                    && let Some(ident) = f.name.0.last().and_then(|p| p.as_ident())
                {
                    let name = ident.value.to_lowercase();
                    if RANKS.contains(&name.as_str()) {
                        self.ranks.push(RankColumn {
                            line: line_of(ident.span),
                            function: name,
                            alias: alias.clone(),
                        });
                    }
                }
                ControlFlow::<()>::Continue(())
            });
        }
        // A ranked column that a WHERE / QUALIFY / HAVING filters on is
        // deduplication (`where rn = 1`), not a key.
        for filter in [&select.selection, &select.having, &select.qualify]
            .into_iter()
            .flatten()
        {
            for (name, _) in columns_in(filter) {
                self.filter_names.insert(name);
            }
        }
        ControlFlow::Continue(())
    }
}

/// How many parameters an expression holds.
fn params_in(expr: &Expr) -> usize {
    let mut n = 0;
    let _ = visit_expressions(expr, |e| {
        if matches!(e, Expr::Identifier(i) if is_param(&i.value)) {
            n += 1;
        }
        ControlFlow::<()>::Continue(())
    });
    n
}

fn contains_param(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Identifier(i) if is_param(&i.value) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The columns an expression reads (last name part, lower-cased), with lines.
fn columns_in(expr: &Expr) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let _ = visit_expressions(expr, |e| {
        let ident = match e {
            Expr::Identifier(i) => Some(i),
            Expr::CompoundIdentifier(parts) => parts.last(),
            _ => None,
        };
        if let Some(i) = ident
            && !is_param(&i.value)
        {
            out.push((i.value.to_lowercase(), line_of(i.span)));
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// The SELECT whose columns the query returns (the first branch of a UNION).
fn top_select(query: &Query) -> Option<&Select> {
    let mut body = query.body.as_ref();
    loop {
        match body {
            SetExpr::Select(select) => return Some(select),
            SetExpr::Query(q) => body = q.body.as_ref(),
            SetExpr::SetOperation { left, .. } => body = left.as_ref(),
            _ => return None,
        }
    }
}

fn output_columns(select: &Select) -> Option<Vec<OutputColumn>> {
    let mut out = Vec::new();
    for item in &select.projection {
        let (expr, name) = match item {
            SelectItem::UnnamedExpr(e) => {
                let name = match e {
                    Expr::Identifier(i) => Some(i.value.to_lowercase()),
                    Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.to_lowercase()),
                    // Engines name other expressions each their own way.
                    _ => None,
                };
                (e, name)
            }
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.to_lowercase())),
            _ => return None,
        };
        out.push(OutputColumn {
            name,
            sources: columns_in(expr).into_iter().map(|(c, _)| c).collect(),
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests;
