//! `merge_key`: the window's rows staged, checked (no NULL and no repeated
//! keys) and upserted by key, changing only rows whose values differ.

use sqlx::AnyConnection;

use crate::numbers::{n_rows, thousands};

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
    // A NULL key matches no row, not even the NULL-keyed row the last run
    // inserted: every re-run would add it again.
    let mut null_keys = Sql::new(dialect);
    null_keys
        .push("SELECT COUNT(*) FROM ")
        .push(&stage)
        .push(" WHERE ");
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            null_keys.push(" OR ");
        }
        null_keys.ident(k).push(" IS NULL");
    }
    let null_rows: i64 = null_keys.query().fetch_one(&mut *tx).await?.try_get(0)?;
    if null_rows > 0 {
        return Err(WarehouseError::Job(format!(
            "job emitted {null_rows} row{} with a NULL unique_key ({}) in window {}; a merge cannot match a NULL key, so every re-run would insert {} again. Filter them out or coalesce the key in the job's SQL",
            if null_rows == 1 { "" } else { "s" },
            keys.iter()
                .map(Ident::as_str)
                .collect::<Vec<_>>()
                .join(", "),
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
        .push(&stage)
        .push(" GROUP BY ")
        .push(&grouped.join(", "))
        .push(" HAVING COUNT(*) > 1) d");
    let duplicate_keys: i64 = dups.query().fetch_one(&mut *tx).await?.try_get(0)?;
    if duplicate_keys > 0 {
        return Err(WarehouseError::Job(format!(
            "job emitted {} of unique_key ({}) more than once in window {}; a merge needs one row per key",
            crate::numbers::count(duplicate_keys, "value", "values"),
            keys.iter()
                .map(Ident::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            partition.name()
        )));
    }

    let key_match = key_match(dialect, keys);
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
    let changed_test = typed
        .iter()
        .map(|c| {
            let n = dialect.quote(&c.name);
            dialect.differs(&format!("t.{n}"), &format!("s.{n}"), c)
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    let mut matched = Sql::new(dialect);
    matched
        .push("SELECT COUNT(*), COUNT(CASE WHEN ")
        .push(&changed_test)
        .push(" THEN 1 END) FROM ")
        .table(&job.target)
        .push(" t JOIN ")
        .push(&stage)
        .push(" s ON ")
        .push(&key_match);
    let row = matched.query().fetch_one(&mut *tx).await?;
    let existing: i64 = row.try_get(0)?;
    let rows_updated: i64 = row.try_get(1)?;
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
    })
}
