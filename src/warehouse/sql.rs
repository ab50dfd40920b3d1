//! The one place SQL is assembled at run time: identifiers are quoted by the
//! dialect, values are bound as parameters, never spliced into the text.

use std::borrow::Cow;

use chrono::NaiveDateTime;
use sqlx::any::AnyArguments;
use sqlx::{Arguments, AssertSqlSafe};

use super::{ColumnKind, Dialect};
use crate::config::{Engine, Ident, TableName};
use crate::partition::{Grain, Partition};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Int(i64),
    /// A NULL of a text column.
    Null,
    /// An integer column's value or NULL: typed, since PostgreSQL will not
    /// put a text-typed NULL into a bigint column.
    NullableInt(Option<i64>),
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}
impl From<Option<i64>> for Value {
    fn from(v: Option<i64>) -> Value {
        Value::NullableInt(v)
    }
}
impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Value {
        v.map_or(Value::Null, Value::Text)
    }
}

/// SQL text with its bound values, built for one dialect.
#[derive(Clone)]
pub struct Sql {
    dialect: &'static dyn Dialect,
    text: String,
    binds: Vec<Value>,
}

/// A named parameter in a job's SQL that idem does not provide.
#[derive(Debug, thiserror::Error)]
#[error("unknown parameter :{0} in the job's SQL; idem binds :start, :end and :partition")]
pub struct UnknownParameter(pub String);

impl Sql {
    pub fn new(dialect: &'static dyn Dialect) -> Sql {
        Sql {
            dialect,
            text: String::new(),
            binds: Vec::new(),
        }
    }

    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    pub fn ident(&mut self, ident: &Ident) -> &mut Self {
        let q = self.dialect.quote(ident);
        self.text.push_str(&q);
        self
    }

    /// Quoted identifiers separated by commas, each optionally prefixed by a
    /// table alias (`s.`).
    pub fn ident_list(&mut self, alias: &str, idents: &[Ident]) -> &mut Self {
        for (i, c) in idents.iter().enumerate() {
            if i > 0 {
                self.text.push_str(", ");
            }
            self.text.push_str(alias);
            self.ident(c);
        }
        self
    }

    pub fn table(&mut self, table: &TableName) -> &mut Self {
        let q = self.dialect.quote_table(table);
        self.text.push_str(&q);
        self
    }

    pub fn bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.binds.push(value.into());
        let p = self.dialect.placeholder(self.binds.len());
        self.text.push_str(&p);
        self
    }

    /// `column = name` for a job name in the ledger, byte for byte on every
    /// engine: MariaDB/MySQL compare the ledger's text under the database's
    /// collation, where a `_ci` one reads job "Orders" as "orders" (a job
    /// renamed by case, or two jobs of one config, would share a history).
    /// The plain equality is kept ahead for the index's seek; job names are
    /// ASCII, so their bytes are the same in any character set.
    pub fn job_is(&mut self, column: &str, name: &str) -> &mut Self {
        self.push(column).push(" = ").bind(name);
        if self.dialect.engine() == Engine::MySql {
            self.push(" AND CAST(")
                .push(column)
                .push(" AS BINARY) = CAST(")
                .bind(name)
                .push(" AS BINARY)");
        }
        self
    }

    /// The end of a catalogue condition naming `table`, after its schema
    /// column's `= `: the schema, bound, or `current` (the session's
    /// schema, as the engine names it) for a table named without one;
    /// then ` AND name_column = ` the table's name, bound.
    pub fn table_named(
        &mut self,
        table: &TableName,
        current: &str,
        name_column: &str,
    ) -> &mut Self {
        match &table.schema {
            Some(s) => self.bind(s.as_str()),
            None => self.push(current),
        };
        self.push(" AND ")
            .push(name_column)
            .push(" = ")
            .bind(table.name.as_str())
    }

    /// Binds a window boundary so that it compares correctly with the
    /// engine's date and timestamp columns (as a timestamp where the engine
    /// has the type).
    pub fn bind_instant(&mut self, t: NaiveDateTime, partition: &Partition) -> &mut Self {
        self.bind_instant_as(t, partition, ColumnKind::Other)
    }

    /// Binds a window boundary as a value of the column's own type, so that
    /// comparing it costs no cast per row and an index on the column serves.
    pub fn bind_instant_as(
        &mut self,
        t: NaiveDateTime,
        partition: &Partition,
        kind: ColumnKind,
    ) -> &mut Self {
        // An hour's boundary is no date: compared as a timestamp, the date
        // column's values still fall in the right window.
        let kind = if kind == ColumnKind::Date && partition.grain == Grain::Hour {
            ColumnKind::Timestamp
        } else {
            kind
        };
        self.binds
            .push(self.dialect.instant_value(t, partition.grain));
        let p = self.dialect.placeholder(self.binds.len());
        let expr = self.dialect.instant_param(&p, kind);
        self.text.push_str(&expr);
        self
    }

    /// `col >= :start AND col < :end` for the partition's window.
    pub fn window_filter(
        &mut self,
        alias: &str,
        column: &Ident,
        partition: &Partition,
    ) -> &mut Self {
        self.window_filter_as(alias, column, partition, ColumnKind::Other)
    }

    /// [`Sql::window_filter`] with boundaries of the column's own type.
    pub fn window_filter_as(
        &mut self,
        alias: &str,
        column: &Ident,
        partition: &Partition,
        kind: ColumnKind,
    ) -> &mut Self {
        self.range_filter_as(alias, column, (partition, partition), kind)
    }

    /// [`Sql::window_filter_as`] for the windows from `first` through
    /// `last`: from the start of the one to the end of the other.
    pub fn range_filter_as(
        &mut self,
        alias: &str,
        column: &Ident,
        (first, last): (&Partition, &Partition),
        kind: ColumnKind,
    ) -> &mut Self {
        self.push(alias).ident(column).push(" >= ");
        self.bind_instant_as(first.start, first, kind);
        self.push(" AND ").push(alias).ident(column).push(" < ");
        self.bind_instant_as(last.end(), last, kind);
        self
    }

    /// Appends a job's SELECT with `:start`, `:end` and `:partition` bound.
    pub fn job_sql(
        &mut self,
        sql: &str,
        partition: &Partition,
    ) -> Result<&mut Self, UnknownParameter> {
        self.job_sql_over(sql, partition, partition)
    }

    /// The job's SQL over the windows `first` through `last` at once:
    /// `:start` is the first's start, `:end` the last's end (`:partition`
    /// names the first).
    pub fn job_sql_over(
        &mut self,
        sql: &str,
        first: &Partition,
        last: &Partition,
    ) -> Result<&mut Self, UnknownParameter> {
        // The job's SQL is read as the server reads it, so that each
        // `:start` bound is one the server would see outside a string.
        let syntax = Syntax::of(self.dialect);
        let body = query_body(sql, syntax);
        for piece in split_parameters(body, syntax) {
            match piece {
                Piece::Text(t) => {
                    self.push(t);
                }
                Piece::Param("start") => {
                    self.bind_instant(first.start, first);
                }
                Piece::Param("end") => {
                    self.bind_instant(last.end(), last);
                }
                // Written as a literal, not bound: a bound value is text,
                // which PostgreSQL will not compare with a date (`dt =
                // :partition`: "operator does not exist: date = text"),
                // where a literal takes the type its context asks for, as
                // the describe of the SELECT (whose parameters have no type)
                // took it. A name is digits, `-` and `T`.
                Piece::Param("partition") => {
                    let name = first.name();
                    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                        self.push("'").push(&name).push("'");
                    } else {
                        self.bind(name);
                    }
                }
                Piece::Param(other) => return Err(UnknownParameter(other.to_string())),
            }
        }
        Ok(self)
    }

    pub fn dialect(&self) -> &'static dyn Dialect {
        self.dialect
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn binds(&self) -> &[Value] {
        &self.binds
    }

    /// The statement, ready to run through sqlx.
    pub fn query(&self) -> sqlx::query::Query<'static, sqlx::Any, AnyArguments> {
        let mut args = AnyArguments::default();
        for v in &self.binds {
            // Adding a plain value to AnyArguments cannot fail.
            let _ = match v {
                Value::Text(s) => args.add(s.clone()),
                Value::Int(n) => args.add(*n),
                Value::Null => args.add(Option::<String>::None),
                Value::NullableInt(v) => args.add(*v),
            };
        }
        // Safe by construction: identifiers are validated and quoted, values bound.
        sqlx::query_with(AssertSqlSafe(self.text.clone()), args)
    }
}

#[derive(Debug, PartialEq)]
pub(crate) enum Piece<'a> {
    Text(&'a str),
    Param(&'a str),
}

/// How a server reads the quoting of SQL text: its engine's rules,
/// whether a backslash in a string escapes the next character, and whether
/// a double quote quotes a name or a string. Both are the engine's default
/// ([`Engine::backslash_escapes`], [`Engine::ansi_quotes`]) unless the
/// server says otherwise: a MariaDB/MySQL server whose `sql_mode` has
/// `NO_BACKSLASH_ESCAPES` reads `'C:\'` as a whole string, where by
/// default it is the start of one, and one with `ANSI_QUOTES` reads
/// `"fct"` as the table fct, where by default it is a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syntax {
    pub engine: Engine,
    pub backslash_escapes: bool,
    pub ansi_quotes: bool,
}

impl Syntax {
    /// The syntax `dialect`'s server reads.
    pub fn of(dialect: &dyn Dialect) -> Syntax {
        Syntax {
            engine: dialect.engine(),
            backslash_escapes: dialect.backslash_escapes(),
            ansi_quotes: dialect.ansi_quotes(),
        }
    }

    /// Whether `quote` opens a string (its backslashes may escape), not a
    /// name.
    fn quotes_a_string(self, quote: u8) -> bool {
        quote == b'\'' || (quote == b'"' && !self.ansi_quotes)
    }
}

impl From<Engine> for Syntax {
    fn from(engine: Engine) -> Syntax {
        Syntax {
            engine,
            backslash_escapes: engine.backslash_escapes(),
            ansi_quotes: engine.ansi_quotes(),
        }
    }
}

/// A string literal, quoted name or comment starting at `i`, as `syntax`
/// reads them: whether it is a comment, and where it ends. A backslash
/// escapes the next character where the syntax says so, and in
/// PostgreSQL's `E'…'` strings; PostgreSQL also quotes with `$tag$…$tag$`,
/// and MariaDB/MySQL also comment with `#`.
fn quoted_or_comment(bytes: &[u8], mut i: usize, syntax: Syntax) -> Option<(bool, usize)> {
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
                if bytes[i] == b'\\' && escapes && syntax.quotes_a_string(q) {
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

/// `sql` quoted so that its engine's default reads it as a server reading
/// `syntax` does, for a parser that knows only the default; lines kept.
/// On a MariaDB/MySQL server with `ANSI_QUOTES` in its `sql_mode` a name
/// in double quotes is quoted in backticks instead, and with
/// `NO_BACKSLASH_ESCAPES` a string's backslashes are doubled. Unchanged
/// elsewhere: the other engines' parsers read their servers' quoting.
pub(crate) fn in_default_quoting(sql: &str, syntax: Syntax) -> Cow<'_, str> {
    let default = Syntax::from(syntax.engine);
    if syntax.engine != Engine::MySql || syntax == default {
        return Cow::Borrowed(sql);
    }
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        let Some((_, next)) = quoted_or_comment(bytes, i, syntax) else {
            i += 1;
            continue;
        };
        let q = bytes[i];
        let name = q == b'"' && syntax.ansi_quotes;
        let plain = syntax.quotes_a_string(q) && !syntax.backslash_escapes;
        if name || plain {
            let closed = next >= i + 2 && bytes[next - 1] == q;
            let inner = &sql[i + 1..if closed { next - 1 } else { next }];
            let (quote, inner) = if name {
                ('`', inner.replace("\"\"", "\"").replace('`', "``"))
            } else {
                (char::from(q), inner.replace('\\', "\\\\"))
            };
            out.push_str(&sql[copied..i]);
            out.push(quote);
            out.push_str(&inner);
            if closed {
                out.push(quote);
            }
            copied = next;
        }
        i = next;
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
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

/// Splits SQL into text and `:name` parameters, skipping string literals,
/// quoted identifiers, comments, PostgreSQL `::` casts and the bounds of
/// its array slices (`arr[lo:hi]`), as `syntax` reads them.
pub(crate) fn split_parameters(sql: &str, syntax: impl Into<Syntax>) -> Vec<Piece<'_>> {
    let syntax = syntax.into();
    let bytes = sql.as_bytes();
    let mut pieces = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    // How deep in PostgreSQL's `[…]` subscripts: none of idem's parameters
    // is an index, and a colon there divides a slice's bounds.
    let mut subscripts = 0usize;
    while i < bytes.len() {
        if let Some((_, next)) = quoted_or_comment(bytes, i, syntax) {
            i = next;
            continue;
        }
        match bytes[i] {
            b'[' if syntax.engine == Engine::Postgres => {
                subscripts += 1;
                i += 1;
            }
            b']' if syntax.engine == Engine::Postgres => {
                subscripts = subscripts.saturating_sub(1);
                i += 1;
            }
            b':' if bytes.get(i + 1) == Some(&b':') => i += 2,
            b':' if subscripts == 0
                && bytes
                    .get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
            {
                let name_start = i + 1;
                let mut j = name_start;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                if text_start < i {
                    pieces.push(Piece::Text(&sql[text_start..i]));
                }
                pieces.push(Piece::Param(&sql[name_start..j]));
                i = j;
                text_start = j;
            }
            _ => i += 1,
        }
    }
    if text_start < sql.len() {
        pieces.push(Piece::Text(&sql[text_start.min(sql.len())..]));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(sql: &str) -> Vec<&str> {
        params_of(sql, Engine::Postgres)
    }

    fn params_of(sql: &str, engine: impl Into<Syntax>) -> Vec<&str> {
        split_parameters(sql, engine)
            .into_iter()
            .filter_map(|p| match p {
                Piece::Param(n) => Some(n),
                Piece::Text(_) => None,
            })
            .collect()
    }

    #[test]
    fn finds_parameters_but_not_casts_strings_or_comments() {
        assert_eq!(
            params(
                "select x::date from t where a >= :start and a < :end -- :nope\n and b = ':no' /* :no */ and c = :partition"
            ),
            vec!["start", "end", "partition"]
        );
        assert_eq!(
            params("select 'it''s :x' as a, \"col:y\" from t"),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn a_postgres_slices_bounds_are_no_parameters() {
        let sql = "select arr[lo:hi], m[1:n][a:b] from t where d >= :start and d < :end";
        assert_eq!(params(sql), ["start", "end"]);
        // Elsewhere brackets are no subscripts (SQLite's quote a name).
        assert_eq!(
            params_of(
                "select a from t where x = :start and y[:end]",
                Engine::MySql
            ),
            ["start", "end"]
        );
    }

    #[test]
    fn a_query_body_ends_at_its_last_token() {
        for (sql, body) in [
            ("select 1", "select 1"),
            ("select 1;", "select 1"),
            ("select 1 ;\n\n", "select 1"),
            ("select 1; -- done", "select 1"),
            ("select 1 -- done", "select 1"),
            ("select 1 /* c */ ;", "select 1"),
            ("select 1 /* open", "select 1"),
            ("select 1;;", "select 1"),
            ("select ';' as x;", "select ';' as x"),
            ("select '--' as x -- c\n;\n", "select '--' as x"),
            ("select \"a;\" from t", "select \"a;\" from t"),
            ("select 'é' ; -- fin", "select 'é'"),
            ("select 1 -- it's\nfrom t", "select 1 -- it's\nfrom t"),
            ("select 'open", "select 'open"),
            ("", ""),
        ] {
            assert_eq!(query_body(sql, Engine::Postgres), body, "{sql:?}");
        }
    }

    #[test]
    fn a_backslash_escapes_where_the_engine_says_so() {
        // `'\'` is one backslash on PostgreSQL and SQLite, and the start of
        // a string on MariaDB, where one backslash is written `'\\'`.
        let standard = "select replace(p, '\\', '/') from t where d >= :start and d < :end";
        for engine in [Engine::Postgres, Engine::Sqlite] {
            assert_eq!(params_of(standard, engine), ["start", "end"], "{engine:?}");
        }
        let mysql = "select replace(p, '\\\\', '/'), 'it\\'s :no' from t where d >= :start";
        assert_eq!(params_of(mysql, Engine::MySql), ["start"]);
        // A server with NO_BACKSLASH_ESCAPES ends `'C:\'` at its quote.
        let plain = "select 'C:\\' as p, ':end' as l from t where d >= :start";
        assert_eq!(params_of(plain, Engine::MySql), ["end"]);
        let syntax = Syntax {
            backslash_escapes: false,
            ..Engine::MySql.into()
        };
        assert_eq!(params_of(plain, syntax), ["start"]);
        // PostgreSQL's E'…' strings escape; a name ending in e does not.
        let e_string = "select E'it\\'s :no' from t where d >= :start";
        assert_eq!(params_of(e_string, Engine::Postgres), ["start"]);
        let keyword = "select case when a then 'x' else'\\' end from t where d >= :start";
        assert_eq!(params_of(keyword, Engine::Postgres), ["start"]);
    }

    #[test]
    fn a_servers_quoting_is_written_as_its_engines_default_reads_it() {
        let sql = "select \"a\"\"b`\", 'C:\\', \"x\"\nfrom t";
        let ansi_plain = Syntax {
            backslash_escapes: false,
            ansi_quotes: true,
            ..Engine::MySql.into()
        };
        assert_eq!(
            in_default_quoting(sql, ansi_plain),
            "select `a\"b```, 'C:\\\\', `x`\nfrom t"
        );
        for syntax in [Engine::MySql, Engine::Postgres, Engine::Sqlite] {
            assert_eq!(in_default_quoting(sql, syntax.into()), sql);
        }
    }

    #[test]
    fn dollar_quotes_and_hash_comments_where_the_engine_has_them() {
        let dollars = "select $$it's :no$$, $q$ $$ :no $q$, $1 from t where d >= :start";
        assert_eq!(params_of(dollars, Engine::Postgres), ["start"]);
        assert_eq!(
            query_body("select $$;$$ ; -- c", Engine::Postgres),
            "select $$;$$"
        );
        assert_eq!(
            params_of("select $$ :open", Engine::Postgres),
            Vec::<&str>::new()
        );
        let hash = "select 1 # don't :no\nfrom t where d >= :start";
        assert_eq!(params_of(hash, Engine::MySql), ["start"]);
        assert_eq!(query_body("select 1; # done", Engine::MySql), "select 1");
        // Elsewhere `#` is an operator.
        assert_eq!(params_of("select 5 # :x", Engine::Postgres), ["x"]);
        assert_eq!(
            query_body("select '\\' as p; -- c", Engine::Sqlite),
            "select '\\' as p"
        );
    }

    #[test]
    fn comments_are_read_as_each_engine_reads_them() {
        // MariaDB/MySQL: `--` starts a comment only before whitespace or a
        // control character; `0--1` is arithmetic, and `:start` after it
        // must be bound.
        let dashes = "select id from t where 0--1 and dt >= :start and dt < :end";
        assert_eq!(params_of(dashes, Engine::MySql), ["start", "end"]);
        assert_eq!(params_of(dashes, Engine::Postgres), Vec::<&str>::new());
        assert_eq!(params_of(dashes, Engine::Sqlite), Vec::<&str>::new());
        for comment in ["-- :no", "--\t:no", "--"] {
            let sql = format!("select 1 {comment}\nfrom t where d >= :start");
            assert_eq!(params_of(&sql, Engine::MySql), ["start"], "{sql:?}");
        }
        assert_eq!(query_body("select 1; --", Engine::MySql), "select 1");
        assert_eq!(query_body("select 0--1", Engine::MySql), "select 0--1");
        // PostgreSQL: block comments nest; elsewhere the first `*/` ends one.
        let nested = "select 1 /* /* */ :x */ from t where d >= :start";
        assert_eq!(params_of(nested, Engine::Postgres), ["start"]);
        assert_eq!(params_of(nested, Engine::Sqlite), ["x", "start"]);
        assert_eq!(params_of(nested, Engine::MySql), ["x", "start"]);
        assert_eq!(
            query_body("select 1 /* a /* b */ c */", Engine::Postgres),
            "select 1"
        );
        assert_eq!(
            params_of("select 1 /* /* :no */ from t", Engine::Postgres),
            Vec::<&str>::new()
        );
        // MariaDB/MySQL run what `/*! … */` holds.
        let versioned = "select 1 /*!50000 + :x */ from t where d >= :start";
        assert_eq!(params_of(versioned, Engine::MySql), ["x", "start"]);
        assert_eq!(params_of(versioned, Engine::Postgres), ["start"]);
    }

    #[test]
    fn text_pieces_reassemble_the_sql() {
        let sql = "select a from t where d >= :start and d < :end";
        let joined: String = split_parameters(sql, Engine::Postgres)
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) => t.to_string(),
                Piece::Param(n) => format!(":{n}"),
            })
            .collect();
        assert_eq!(joined, sql);
    }
}
