//! Lineage: which jobs feed which. A job depends on the jobs it names in
//! `depends_on` and on every job whose target its SQL reads. Partitions map
//! across grains by their windows: a downstream partition reads every
//! upstream partition its window overlaps (24 hours for a day, the days of a
//! month, the month of a day).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::config::{Config, ConfigError, TableNames};
use crate::partition::{Grain, Partition};
use crate::warehouse::sql::Syntax;

/// Why one job depends on another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Because {
    /// Named in `depends_on`.
    Declared,
    /// Its SQL reads the other job's target.
    ReadsTarget(String),
}

/// The dependency graph of a config's jobs.
#[derive(Debug, Clone, Default)]
pub struct Lineage {
    /// Job → the jobs it reads, with why.
    upstream: BTreeMap<String, Vec<(String, Because)>>,
    /// Job → the jobs that read it.
    downstream: BTreeMap<String, Vec<String>>,
    /// Every job, each after all of its upstream jobs.
    order: Vec<String>,
}

impl Lineage {
    /// The graph of `config`'s jobs, SQL read and table names compared as
    /// its engine does where the server is not asked
    /// ([`crate::config::Engine::table_names`]): before connecting, and
    /// where nothing connects.
    pub fn of(config: &Config) -> Result<Lineage, ConfigError> {
        let engine = config.warehouse.engine();
        Lineage::comparing(config, engine.into(), engine.table_names())
    }

    /// The graph of `config`'s jobs, a job's SQL read as `syntax` reads it
    /// and reading another's target where table `names` compare as they
    /// do: on a connected warehouse, as the server reads and compares them
    /// ([`crate::warehouse::Warehouse::syntax`],
    /// [`crate::warehouse::Warehouse::table_names`]; a MariaDB/MySQL server
    /// with `ANSI_QUOTES` reads `"fct"` as a table, one folding names reads
    /// `fct` in `FCT`). A cycle is a config error at the job that closes it.
    pub fn comparing(
        config: &Config,
        syntax: Syntax,
        names: TableNames,
    ) -> Result<Lineage, ConfigError> {
        let mut lineage = Lineage::default();
        for job in &config.jobs {
            let mut ups: Vec<(String, Because)> = job
                .depends_on
                .iter()
                .map(|d| (d.name.clone(), Because::Declared))
                .collect();
            let declared: HashSet<&str> = job.depends_on.iter().map(|d| d.name.as_str()).collect();
            let read = crate::lint::tables_read_as_written(job, syntax);
            for other in config.jobs.iter().filter(|o| o.name != job.name) {
                if declared.contains(other.name.as_str()) {
                    continue;
                }
                if let Some(table) = read
                    .iter()
                    .find(|t| crate::lint::names_target(t, other, names))
                {
                    let written: Vec<&str> = table.iter().map(|(part, _)| part.as_str()).collect();
                    ups.push((other.name.clone(), Because::ReadsTarget(written.join("."))));
                }
            }
            for (up, _) in &ups {
                lineage
                    .downstream
                    .entry(up.clone())
                    .or_default()
                    .push(job.name.clone());
            }
            lineage.upstream.insert(job.name.clone(), ups);
        }
        lineage.order = lineage.topological(config)?;
        Ok(lineage)
    }

    /// The jobs `job` reads, with why.
    pub fn upstream(&self, job: &str) -> &[(String, Because)] {
        self.upstream.get(job).map_or(&[], Vec::as_slice)
    }

    /// The jobs that read `job`.
    pub fn downstream(&self, job: &str) -> &[String] {
        self.downstream.get(job).map_or(&[], Vec::as_slice)
    }

    /// Every job downstream of `job`, transitively, upstream ones first.
    pub fn downstream_closure(&self, job: &str) -> Vec<String> {
        let mut reached = BTreeSet::new();
        let mut todo = vec![job.to_string()];
        while let Some(j) = todo.pop() {
            for d in self.downstream(&j) {
                if reached.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        self.order
            .iter()
            .filter(|j| reached.contains(*j))
            .cloned()
            .collect()
    }

    /// Kahn's algorithm, taking ready jobs in config order so the order is
    /// stable; what is left over lies on a cycle.
    fn topological(&self, config: &Config) -> Result<Vec<String>, ConfigError> {
        let index: HashMap<&str, usize> = config
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.name.as_str(), i))
            .collect();
        let mut waiting: HashMap<&str, usize> = self
            .upstream
            .iter()
            .map(|(job, ups)| (job.as_str(), ups.len()))
            .collect();
        let mut ready: BTreeSet<usize> = config
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| waiting.get(j.name.as_str()) == Some(&0))
            .map(|(i, _)| i)
            .collect();
        let mut order = Vec::new();
        while let Some(i) = ready.pop_first() {
            let job = config.jobs[i].name.as_str();
            order.push(job.to_string());
            for d in self.downstream(job) {
                if let Some(n) = waiting.get_mut(d.as_str()) {
                    *n -= 1;
                    if *n == 0 {
                        ready.extend(index.get(d.as_str()));
                    }
                }
            }
        }
        if order.len() == config.jobs.len() {
            return Ok(order);
        }
        let ordered: HashSet<&str> = order.iter().map(String::as_str).collect();
        let Some(job) = config
            .jobs
            .iter()
            .find(|j| !ordered.contains(j.name.as_str()))
        else {
            return Ok(order);
        };
        let cycle = self.cycle_through(&job.name);
        // Point at a `depends_on` entry that closes the cycle, where there is
        // one; otherwise at the SQL whose reading made the dependency.
        let declared = cycle.windows(2).find_map(|pair| {
            let down = config.jobs.iter().find(|j| j.name == pair[1])?;
            let dep = down.depends_on.iter().find(|d| d.name == pair[0])?;
            Some((down, dep.line, dep.column, "depends_on"))
        });
        let (at, line, column, field) = declared.unwrap_or((job, job.sql_line, 1, "sql"));
        Err(ConfigError {
            file: config.path.display().to_string(),
            line,
            column,
            field: format!("jobs.{}.{field}", at.name),
            message: format!(
                "jobs depend on each other in a cycle: {}; remove one of these dependencies (a job reading another's target depends on it)",
                cycle.join(" → ")
            ),
        })
    }

    /// A cycle of dependencies through `job`, as names, `job` first and last.
    /// Each job is walked from once: one that led nowhere before leads
    /// nowhere again (QA: 2,000 jobs merging into one table they all read
    /// took 40 s to be told of their cycle).
    fn cycle_through(&self, job: &str) -> Vec<String> {
        fn walk<'a>(
            l: &'a Lineage,
            at: &str,
            goal: &str,
            path: &mut Vec<String>,
            seen: &mut HashSet<&'a str>,
        ) -> bool {
            for (up, _) in l.upstream(at) {
                if up == goal {
                    return true;
                }
                if !seen.insert(up.as_str()) {
                    continue;
                }
                path.push(up.clone());
                if walk(l, up, goal, path, seen) {
                    return true;
                }
                path.pop();
            }
            false
        }
        let mut path = vec![job.to_string()];
        walk(self, job, job, &mut path, &mut HashSet::new());
        // Found by walking upstream: read it the way data flows.
        path.reverse();
        path.insert(0, job.to_string());
        path
    }
}

/// The partitions of `grain` whose windows overlap `[start, end)`.
pub fn overlapping(
    start: chrono::NaiveDateTime,
    end: chrono::NaiveDateTime,
    grain: Grain,
) -> Vec<Partition> {
    let mut out = Vec::new();
    let mut p = Partition::containing(grain, start);
    while p.start < end {
        out.push(p);
        p = p.next();
    }
    out
}

/// The upstream partitions (of `grain`) a downstream partition reads.
pub fn read_by(downstream: &Partition, grain: Grain) -> Vec<Partition> {
    overlapping(downstream.start, downstream.end(), grain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Engine;
    use crate::partition::RangeEnd;

    fn p(grain: Grain, name: &str) -> Partition {
        Partition::parse(grain, name, RangeEnd::From).unwrap_or_else(|| panic!("{name}"))
    }

    #[test]
    fn grains_map_by_window() {
        let day = p(Grain::Day, "2026-06-03");
        let hours = read_by(&day, Grain::Hour);
        assert_eq!(hours.len(), 24);
        assert_eq!(hours[0].name(), "2026-06-03T00");
        assert_eq!(hours[23].name(), "2026-06-03T23");
        let month = p(Grain::Month, "2026-06");
        let days = read_by(&month, Grain::Day);
        assert_eq!((days.len(), days[0].name()), (30, "2026-06-01".into()));
        assert_eq!(read_by(&day, Grain::Month), vec![month]);
        assert_eq!(read_by(&day, Grain::Day), vec![day]);
        let hour = p(Grain::Hour, "2026-06-30T23");
        assert_eq!(read_by(&hour, Grain::Month), vec![month]);
        assert_eq!(read_by(&month, Grain::Hour).len(), 30 * 24);
    }

    /// A config on `url` whose jobs are (name, target, the table its SQL reads).
    fn config(url: &str, jobs: &[(&str, &str, &str)]) -> Config {
        let mut text = format!("[warehouse]\nurl = \"{url}\"\n");
        for (name, target, reads) in jobs {
            text.push_str(&format!(
                "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
                 partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\n\
                 sql = '''select id, dt from {reads} where dt >= :start and dt < :end'''\n"
            ));
        }
        crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn ups(lineage: &Lineage, job: &str) -> Vec<String> {
        lineage
            .upstream(job)
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    #[test]
    fn a_target_without_a_schema_is_in_the_home_schema_not_any() {
        // staging.orders → raw.orders → orders, the last in the home schema
        // (PostgreSQL's public, MariaDB's URL database): a chain, not a
        // cycle, and no job reads its own target.
        for url in ["postgres://h/db", "mysql://h/shop"] {
            let layers = config(
                url,
                &[
                    ("orders", "orders", "raw.orders"),
                    ("raw_orders", "raw.orders", "staging.orders"),
                ],
            );
            let lineage = Lineage::of(&layers).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(ups(&lineage, "orders"), ["raw_orders"], "{url}");
            assert_eq!(ups(&lineage, "raw_orders"), Vec::<String>::new(), "{url}");
        }
        // The home schema named, or a name without one, is the same table.
        let pg = config(
            "postgres://h/db",
            &[
                ("orders", "orders", "raw.orders"),
                ("reads_public", "r1", "public.orders"),
                ("reads_raw_bare", "r2", "orders"),
                ("raw_orders", "raw.orders", "staging.orders"),
            ],
        );
        let lineage = Lineage::of(&pg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&lineage, "reads_public"), ["orders"]);
        assert_eq!(ups(&lineage, "reads_raw_bare"), ["orders"]);
        let my = config(
            "mysql://h/shop",
            &[("orders", "orders", "raw.x"), ("r", "r", "shop.orders")],
        );
        let lineage = Lineage::of(&my).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&lineage, "r"), ["orders"]);
    }

    #[test]
    fn tables_apart_but_for_case_are_apart_where_the_engine_keeps_them_apart() {
        // Two tables, "Orders" and orders, each loaded by a job that reads it
        // (as a starter's job once did): no cycle where the engine tells
        // them apart. In the SQL an unquoted name folds to lower case on
        // PostgreSQL only.
        let pg = config(
            "postgres://h/db",
            &[
                ("upper", "Orders", "\"Orders\""),
                ("lower", "orders", "orders"),
                ("reads_quoted", "r1", "\"Orders\""),
                ("reads_unquoted", "r2", "Orders"),
            ],
        );
        let lineage = Lineage::of(&pg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&lineage, "upper"), Vec::<String>::new());
        assert_eq!(ups(&lineage, "lower"), Vec::<String>::new());
        assert_eq!(ups(&lineage, "reads_quoted"), ["upper"]);
        assert_eq!(ups(&lineage, "reads_unquoted"), ["lower"]);
        assert_eq!(
            lineage.upstream("reads_quoted")[0].1,
            Because::ReadsTarget("Orders".into())
        );

        let my = config(
            "mysql://h/db",
            &[
                ("upper", "Orders", "`Orders`"),
                ("lower", "orders", "orders"),
                ("reads_upper", "r1", "Orders"),
                ("reads_lower", "r2", "`orders`"),
            ],
        );
        let lineage = Lineage::of(&my).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&lineage, "upper"), Vec::<String>::new());
        assert_eq!(ups(&lineage, "reads_upper"), ["upper"]);
        assert_eq!(ups(&lineage, "reads_lower"), ["lower"]);

        // SQLite matches names in any case: ORDERS is Orders.
        let lite = config(
            "sqlite://w.db",
            &[("upper", "Orders", "raw"), ("reads", "r", "ORDERS")],
        );
        let lineage = Lineage::of(&lite).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&lineage, "reads"), ["upper"]);
        let cyclic = config(
            "sqlite://w.db",
            &[("upper", "Orders", "orders"), ("lower", "orders", "Orders")],
        );
        assert!(Lineage::of(&cyclic).is_err(), "one table on SQLite");

        // Two replace jobs on Orders and orders write one table on SQLite
        // alone.
        for (config, same) in [(&pg, false), (&my, false), (&cyclic, true)] {
            let names = config.warehouse.engine().table_names();
            let findings =
                crate::lint::shared_target_findings(&config.jobs, &config.jobs[1], names);
            assert_eq!(!findings.is_empty(), same, "{findings:?}");
        }
    }

    #[test]
    fn a_jobs_sql_is_read_as_the_server_reads_it() {
        // On a MariaDB with NO_BACKSLASH_ESCAPES, `'C:\'` is a whole string
        // and the `#` comment after it a comment; read with escapes, the
        // string runs on and no table is read.
        let reads = "fct # the day's facts\n";
        let my = config(
            "mysql://h/shop",
            &[
                ("fct", "fct", "raw.x"),
                (
                    "paths",
                    "paths",
                    &format!("(select 'C:\\' as p) c, {reads}"),
                ),
            ],
        );
        assert!(my.jobs[1].sql.contains("'C:\\'"), "{}", my.jobs[1].sql);
        let by_default = Lineage::of(&my).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&by_default, "paths"), Vec::<String>::new());
        let plain = Syntax {
            backslash_escapes: false,
            ..Engine::MySql.into()
        };
        let as_read = Lineage::comparing(&my, plain, TableNames::ByCase);
        let as_read = as_read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&as_read, "paths"), ["fct"]);
    }

    #[test]
    fn a_server_folding_table_names_reads_a_target_in_any_case() {
        // On MariaDB/MySQL compared by case (the config's default), ORDERS
        // is another table than orders; on a server folding names
        // (`lower_case_table_names = 1`) it is orders, in any schema case.
        let my = config(
            "mysql://h/shop",
            &[
                ("orders", "orders", "raw.x"),
                ("reads_capitals", "r1", "ORDERS"),
                ("reads_home_capitals", "r2", "SHOP.`Orders`"),
                ("reads_other", "r3", "raw.orders"),
            ],
        );
        let by_case = Lineage::of(&my).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&by_case, "reads_capitals"), Vec::<String>::new());
        let folded = Lineage::comparing(&my, Engine::MySql.into(), TableNames::AnyCase)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ups(&folded, "reads_capitals"), ["orders"]);
        assert_eq!(ups(&folded, "reads_home_capitals"), ["orders"]);
        assert_eq!(ups(&folded, "reads_other"), Vec::<String>::new());
        assert_eq!(
            folded.upstream("reads_capitals")[0].1,
            Because::ReadsTarget("ORDERS".into())
        );
        assert_eq!(
            folded.downstream_closure("orders"),
            ["reads_capitals", "reads_home_capitals"]
        );

        // Two jobs reading each other's target in capitals: a cycle only
        // where the server folds names, said as the config error it is.
        let each_other = config("mysql://h/shop", &[("a", "a", "B"), ("b", "b", "A")]);
        assert!(Lineage::of(&each_other).is_ok());
        let cycle = Lineage::comparing(&each_other, Engine::MySql.into(), TableNames::AnyCase)
            .err()
            .unwrap_or_else(|| panic!("a cycle"));
        assert!(cycle.message.contains("in a cycle: "), "{cycle}");
        assert_eq!(cycle.field, "jobs.a.sql", "{cycle}");
    }
}
