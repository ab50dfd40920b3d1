//! `merge_key`: the window's rows staged, checked (no NULL and no repeated
//! keys) and upserted by key, changing only rows whose values differ.

use sqlx::AnyConnection;

use crate::numbers::{n_rows, thousands};
use crate::warehouse::MatchForm;

use super::*;

pub(super) async fn merge(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> Result<LoadOutcome, WarehouseError> {
    let Target {
        job,
        partition,
        shape,
        ..
    } = t;
    let columns = &shape.insert;
    let target_columns = &shape.columns;
    let stage_table = stage();
    let stage = dialect.quote(&stage_table);
    run(tx, dialect.drop_stage(&stage_table)).await?;
    let mut create = Sql::new(dialect);
    create
        .push(&dialect.create_stage(&stage_table))
        .push("SELECT ")
        .ident_list("", columns)
        .push(" FROM ")
        .table(&job.target)
        .push(" WHERE 1 = 0");
    create.query().execute(&mut *tx).await.map_err(|e| {
        // MariaDB/MySQL say "Access denied … to database", which reads
        // as a right on the data the role has.
        match e.as_database_error() {
            Some(db) if db.message().contains("denied") => WarehouseError::Job(format!(
                "{}: a merge stages its window in a temporary table, so the role needs CREATE TEMPORARY TABLES on the target's database",
                db.message()
            )),
            _ => e.into(),
        }
    })?;
    let mut fill = Sql::new(dialect);
    insert_job_rows(&mut fill, &stage, columns, job, partition)?;
    let source_rows = fill.query().execute(&mut *tx).await?.rows_affected() as i64;
    log(format!("staged {source_rows} source rows"));
    if let Some(analyze) = dialect.analyze_stage(&stage_table) {
        run(tx, analyze).await?;
    }

    let keys = &job.unique_key;
    check_keys(dialect, tx, &stage, job, partition, shape).await?;
    if !shape.key_unique {
        check_target_keys(dialect, tx, job, partition, shape).await?;
    }

    let key_match = dialect.key_match(keys);
    // The stage's columns are the target's (made from it), with its types.
    let typed: Vec<Column> = columns
        .iter()
        .map(|c| {
            target_columns
                .iter()
                .find(|t| t.name == *c)
                .cloned()
                .unwrap_or_else(|| Column {
                    name: c.clone(),
                    type_name: String::new(),
                    nullable: true,
                })
        })
        .collect();
    // Keys too: one that matched by its collation (`Alice@x.com` and
    // `alice@x.com` under NOCASE, citext or `_ci`) may still differ, and is
    // written as the source spells it.
    let changed_test = dialect.any_differs("t", "s", &typed);
    let old = job.partition_column.as_ref();
    // The target row's partition column, selected beside the test where
    // the relation is a subquery's.
    let old_column = |sql: &mut String| {
        if let Some(c) = old {
            sql.push_str(&format!(", t.{} AS idem_old", dialect.quote(c)));
        }
    };
    let target = {
        let mut name = Sql::new(dialect);
        name.table(&job.target);
        name.text().to_string()
    };
    let changed;
    let mut inner = String::new();
    let matched_rows = match dialect.match_form(typed.len()) {
        // Compared within each target row's own lookup (its key's unique
        // index), which yields the test alone. `OFFSET 0` keeps the
        // planner from pulling it up.
        MatchForm::Lateral => {
            inner.push_str(&format!(
                " FROM {stage} s CROSS JOIN LATERAL (SELECT {changed_test} AS idem_d"
            ));
            old_column(&mut inner);
            inner.push_str(&format!(" FROM {} t WHERE {key_match} OFFSET 0) m", target));
            moves::Matched {
                from: inner,
                differs: "m.idem_d",
                old: old.map(|_| ("m.", Ident::from_static("idem_old"))),
            }
        }
        // The test made in a subquery that aggregates nothing, which
        // `LIMIT -1` keeps SQLite from flattening into the count.
        MatchForm::Subquery => {
            inner.push_str(&format!(" FROM (SELECT {changed_test} AS idem_d"));
            old_column(&mut inner);
            inner.push_str(&format!(
                " FROM {} t JOIN {stage} s ON {key_match} LIMIT -1) m",
                target
            ));
            moves::Matched {
                from: inner,
                differs: "m.idem_d",
                old: old.map(|_| ("m.", Ident::from_static("idem_old"))),
            }
        }
        MatchForm::Join => {
            changed = format!("({changed_test})");
            inner.push_str(&format!(" FROM {} t JOIN {stage} s ON {key_match}", target));
            moves::Matched {
                from: inner,
                differs: &changed,
                old: old.map(|c| ("t.", c.clone())),
            }
        }
    };
    let mut matched = Sql::new(dialect);
    moves::push_matched_count(&mut matched, &t, &matched_rows);
    let (existing, rows_updated, mut other_windows) =
        moves::matched_count(tx, matched, job.grain).await?;
    other_windows.extend(moves::windows_entered(dialect, tx, &t, &changed_test).await?);
    other_windows.remove(&partition.name());
    let rows_inserted = source_rows - existing;
    let before = if existing == 0 {
        Fingerprint::default()
    } else {
        fingerprint::of(tx, dialect, target_columns, "t.", |sql| {
            touched_rows(dialect, sql, job)
        })
        .await?
    };

    run(tx, dialect.upsert(&job.target, &stage_table, &typed, keys)).await?;
    log(format!(
        "MERGE {} by ({}): {} inserted, {} updated, {} unchanged",
        n_rows(source_rows),
        keys.iter()
            .map(Ident::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        thousands(rows_inserted),
        thousands(rows_updated),
        thousands(existing - rows_updated)
    ));

    if !other_windows.is_empty() {
        log(format!(
            "rows moved in or out of other windows too: {} (content changed there as well)",
            other_windows.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let after = {
        fingerprint::of(tx, dialect, target_columns, "t.", |sql| {
            touched_rows(dialect, sql, job)
        })
        .await?
    };
    let rows_after = match &job.partition_column {
        Some(_) => count_window(dialect, tx, &Window::of(&t)?).await?,
        None => source_rows,
    };
    let content_changed = before != after;
    log_fingerprint(log, &after, content_changed);
    Ok(LoadOutcome {
        rows_deleted: 0,
        rows_inserted,
        rows_updated,
        rows_after,
        fingerprint: after,
        content_changed,
        other_windows: other_windows.into_iter().collect(),
    })
}

/// Fails a window whose staged rows have a NULL in the key or a key more
/// than once, naming a key value (or a row) the operator can look for.
async fn check_keys(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    stage: &str,
    job: &Job,
    partition: &Partition,
    shape: &TargetShape,
) -> Result<(), WarehouseError> {
    let keys = &job.unique_key;
    let key_names = keys
        .iter()
        .map(Ident::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    // Each key column as text, for naming a value (typed as the target's).
    let texts: Vec<String> = keys
        .iter()
        .map(|k| {
            let type_name = shape
                .columns
                .iter()
                .find(|c| c.name == *k)
                .map_or("", |c| c.type_name.as_str());
            dialect.value_text(&dialect.quote(k), type_name)
        })
        .collect();
    // A NULL key matches no row, not even the NULL-keyed row the last run
    // inserted: every re-run would add it again. (MariaDB's IS NULL also
    // matches a NOT NULL date's '0000-00-00', a key like any other.)
    let is_null = match dialect.engine() {
        crate::warehouse::Engine::MySql => " <=> NULL",
        _ => " IS NULL",
    };
    let mut any_null = Sql::new(dialect);
    for (i, k) in keys.iter().enumerate() {
        any_null.push(if i > 0 { " OR " } else { "" });
        any_null.ident(k).push(is_null);
    }
    let mut null_keys = Sql::new(dialect);
    null_keys.push("SELECT COUNT(*)");
    for k in keys {
        null_keys
            .push(", COUNT(CASE WHEN ")
            .ident(k)
            .push(is_null)
            .push(" THEN 1 END)");
    }
    null_keys
        .push(" FROM ")
        .push(stage)
        .push(" WHERE ")
        .push(any_null.text());
    let row = null_keys.query().fetch_one(&mut *tx).await?;
    let null_rows: i64 = row.try_get(0)?;
    if null_rows > 0 {
        // Of a key of several columns, say which are NULL, and one such
        // row by the parts it has.
        let mut which = String::new();
        if keys.len() > 1 {
            let mut nulls = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                let n: i64 = row.try_get(i + 1)?;
                if n > 0 {
                    nulls.push(format!("{k} is NULL in {}", n_rows(n)));
                }
            }
            let mut example = Sql::new(dialect);
            example
                .push("SELECT ")
                .push(&texts.join(", "))
                .push(" FROM ")
                .push(stage)
                .push(" WHERE ")
                .push(any_null.text())
                .push(" LIMIT 1");
            let row = example.query().fetch_one(&mut *tx).await?;
            which = format!(
                " ({}; one of them has {})",
                nulls.join(", "),
                key_values(keys, &row)?
            );
        }
        return Err(WarehouseError::Job(format!(
            "job emitted {} with a NULL unique_key ({key_names}) in window {}{which}; a merge cannot match a NULL key, so every re-run would insert {} again. Filter them out or coalesce the key in the job's SQL",
            n_rows(null_rows),
            partition.name(),
            if null_rows == 1 { "it" } else { "them" },
        )));
    }
    // Grouped as the target's unique index tells keys apart (the stage
    // may have lost the key's collation: SQLite's CREATE … AS SELECT).
    let grouped: Vec<String> = keys
        .iter()
        .enumerate()
        .map(
            |(i, k)| match shape.key_collations.get(i).and_then(Option::as_ref) {
                Some(c) => format!("{} COLLATE {c}", dialect.quote(k)),
                None => dialect.quote(k),
            },
        )
        .collect();
    let mut dups = Sql::new(dialect);
    dups.push("SELECT COUNT(*) FROM (SELECT COUNT(*) AS n FROM ")
        .push(stage)
        .push(" GROUP BY ")
        .push(&grouped.join(", "))
        .push(" HAVING COUNT(*) > 1) d");
    let duplicate_keys: i64 = dups.query().fetch_one(&mut *tx).await?.try_get(0)?;
    if duplicate_keys == 0 {
        return Ok(());
    }
    // The key the most rows share (a value as the group spells one: keys
    // that match by collation may be written in several ways).
    let mut most = Sql::new(dialect);
    most.push("SELECT COUNT(*) AS idem_n");
    for (i, text) in texts.iter().enumerate() {
        most.push(&format!(", MIN({text}) AS idem_k{i}"));
    }
    most.push(" FROM ")
        .push(stage)
        .push(" GROUP BY ")
        .push(&grouped.join(", "))
        .push(" HAVING COUNT(*) > 1 ORDER BY idem_n DESC");
    for i in 0..keys.len() {
        most.push(&format!(", idem_k{i}"));
    }
    most.push(" LIMIT 1");
    let row = most.query().fetch_one(&mut *tx).await?;
    let shared: i64 = row.try_get(0)?;
    let mut values = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        values.push(crate::warehouse::text_column(&row, i + 1)?);
    }
    Err(WarehouseError::Job(format!(
        "job emitted {} of unique_key ({key_names}) more than once in window {} ({}{} share {}); a merge needs one row per key",
        crate::numbers::count(duplicate_keys, "value", "values"),
        partition.name(),
        if duplicate_keys > 1 { "the most: " } else { "" },
        n_rows(shared),
        key_list(keys, &values),
    )))
}

/// Fails a window of keys the target holds more than once, which only a
/// target without a unique index on the key can (PostgreSQL's MERGE needs
/// none): the merge would update each of those rows to the one source row,
/// and count each as a row of the window (more updated than merged, fewer
/// inserted than none).
async fn check_target_keys(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    job: &Job,
    partition: &Partition,
    shape: &TargetShape,
) -> Result<(), WarehouseError> {
    let keys = &job.unique_key;
    let mut most = Sql::new(dialect);
    most.push("SELECT COUNT(*) AS idem_n");
    for (i, k) in keys.iter().enumerate() {
        let type_name = shape
            .columns
            .iter()
            .find(|c| c.name == *k)
            .map_or("", |c| c.type_name.as_str());
        let text = dialect.value_text(&format!("t.{}", dialect.quote(k)), type_name);
        most.push(&format!(", MIN({text}) AS idem_k{i}"));
    }
    touched_rows(dialect, &mut most, job);
    most.push(" GROUP BY ");
    for (i, k) in keys.iter().enumerate() {
        most.push(if i > 0 { ", t." } else { "t." }).ident(k);
    }
    most.push(" HAVING COUNT(*) > 1 ORDER BY idem_n DESC LIMIT 1");
    let Some(row) = most.query().fetch_optional(&mut *tx).await? else {
        return Ok(());
    };
    let shared: i64 = row.try_get(0)?;
    let mut values = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        values.push(crate::warehouse::text_column(&row, i + 1)?);
    }
    let key_names = keys
        .iter()
        .map(Ident::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    Err(WarehouseError::Job(format!(
        "{} holds {} of {} that window {} merges, and has no primary key or unique index on ({key_names}): a merge would set each of them to the one source row; delete the extra rows, then add one: create unique index on {} ({key_names})",
        job.target,
        n_rows(shared),
        key_list(keys, &values),
        partition.name(),
        job.target,
    )))
}

/// `region = 'EU', id = NULL`: the key values of a row whose columns are
/// the key's, as text.
fn key_values(keys: &[Ident], row: &sqlx::any::AnyRow) -> Result<String, WarehouseError> {
    let mut values = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        values.push(crate::warehouse::text_column(row, i)?);
    }
    Ok(key_list(keys, &values))
}

fn key_list(keys: &[Ident], values: &[Option<String>]) -> String {
    keys.iter()
        .zip(values)
        .map(|(k, v)| format!("{k} = {}", literal(v.as_deref())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A key value as it would be written in SQL: a number bare, other text
/// quoted (a long one cut short: it names the key, it need not be whole).
fn literal(value: Option<&str>) -> String {
    const LONGEST: usize = 60;
    match value {
        None => "NULL".to_string(),
        Some(v) if v.parse::<f64>().is_ok_and(f64::is_finite) => v.to_string(),
        Some(v) if v.chars().count() > LONGEST => {
            let start: String = v.chars().take(LONGEST).collect();
            format!("'{}'…", start.replace('\'', "''"))
        }
        Some(v) => format!("'{}'", v.replace('\'', "''")),
    }
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn key_values_read_as_sql_literals() {
        assert_eq!(literal(Some("42")), "42");
        assert_eq!(literal(Some("-1.5")), "-1.5");
        assert_eq!(literal(Some("O'Brien")), "'O''Brien'");
        assert_eq!(literal(Some("2026-01-02")), "'2026-01-02'");
        assert_eq!(literal(Some("inf")), "'inf'");
        assert_eq!(literal(Some(" 7")), "' 7'");
        assert_eq!(literal(None), "NULL");
        let long = "ö".repeat(70);
        assert_eq!(literal(Some(&long)), format!("'{}'…", "ö".repeat(60)));
    }
}
