//! Whether one statement over a range of windows, grouped by the partition
//! column, returns each window's rows as the windows one by one would: the
//! SQL's rows must each stand alone (no window function, LIMIT, DISTINCT ON,
//! aggregate across rows of several partitions, outer join to the windowed
//! rows, subquery expression, join of two windowed sources) and its bounds
//! must be half-open row filters.

use super::*;
use sqlparser::ast::{
    Distinct, DuplicateTreatment, GroupByExpr, InTarget, JoinOperator, SetOperator, SetQuantifier,
    TableFactor,
};

/// Functions that fold many rows into one: with a GROUP BY that keeps
/// partitions apart they are per-partition, anywhere else they span windows.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "total",
    "group_concat",
    "string_agg",
    "array_agg",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "json_arrayagg",
    "json_objectagg",
    "json_group_array",
    "json_group_object",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "bit_xor",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "std",
    "variance",
    "var_pop",
    "var_samp",
    "listagg",
    "percentile_cont",
    "percentile_disc",
    "mode",
    "median",
    "any_value",
    "xmlagg",
    "corr",
    "covar_pop",
    "covar_samp",
    "range_agg",
    "range_intersect_agg",
];

/// How many of the SQL's parameters are half-open row filters
/// (`col >= :start`, `col < :end`, each column bounded on both sides in the
/// same WHERE), or None where the SQL's shape makes a window's rows depend
/// on rows outside it. `pcol` is the partition column of the SELECT's output.
pub(in crate::lint) fn bounds_as_row_filters(
    statements: &[Statement],
    pcol: &str,
) -> Option<usize> {
    let [Statement::Query(query)] = statements else {
        return None;
    };
    let top = match query.body.as_ref() {
        SetExpr::Select(select) => Some(select.as_ref() as *const Select),
        _ => None,
    };
    let mut shape = Shape {
        pcol: pcol.to_lowercase(),
        top,
        ctes_with_params: HashSet::new(),
        folds: Vec::new(),
        bounds: 0,
    };
    if query.visit(&mut shape).is_break() {
        return None;
    }
    // A window filter only in a CTE the query never reads filters nothing.
    windowed(query.body.as_ref(), &shape.ctes_with_params).then_some(shape.bounds)
}

struct Shape {
    pcol: String,
    /// The SELECT whose rows the job writes, where the query is one.
    top: Option<*const Select>,
    /// CTEs whose rows depend on the window.
    ctes_with_params: HashSet<String>,
    /// Per SELECT being visited: whether its aggregates stay per-partition.
    folds: Vec<bool>,
    bounds: usize,
}

/// Whether the tree holds a parameter, or reads a CTE that does.
fn windowed<V: Visit>(node: &V, ctes: &HashSet<String>) -> bool {
    struct Find<'a>(&'a HashSet<String>);
    impl Visitor for Find<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(i) if is_param(&i.value) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
        fn pre_visit_relation(&mut self, r: &sqlparser::ast::ObjectName) -> ControlFlow<()> {
            let name = r.0.last().and_then(|p| p.as_ident());
            match name {
                Some(i) if self.0.contains(&i.value.to_lowercase()) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    node.visit(&mut Find(ctes)).is_break()
}

impl Shape {
    /// UNION ALL of branches that each read the window; any other set
    /// operation compares rows across windows.
    fn set_ok(&self, body: &SetExpr) -> bool {
        match body {
            SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                *op == SetOperator::Union
                    && *set_quantifier == SetQuantifier::All
                    && [left, right].iter().all(|side| {
                        (matches!(side.as_ref(), SetExpr::SetOperation { .. })
                            || windowed(side.as_ref(), &self.ctes_with_params))
                            && self.set_ok(side)
                    })
            }
            SetExpr::Query(q) => self.set_ok(&q.body),
            _ => true,
        }
    }

    /// Whether a GROUP BY key is the output's partition column: by name,
    /// position, or the same expression.
    fn is_partition_key(&self, key: &Expr, select: &Select) -> bool {
        let output = select.projection.iter().enumerate().find_map(|(i, item)| {
            let (expr, name) = match item {
                SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.to_lowercase()),
                SelectItem::UnnamedExpr(e @ Expr::Identifier(i)) => (e, i.value.to_lowercase()),
                SelectItem::UnnamedExpr(e @ Expr::CompoundIdentifier(parts)) => {
                    (e, parts.last()?.value.to_lowercase())
                }
                _ => return None,
            };
            (name == self.pcol).then_some((i + 1, expr))
        });
        let Some((position, expr)) = output else {
            return false;
        };
        match key {
            Expr::Identifier(i) if i.value.to_lowercase() == self.pcol => true,
            Expr::Value(v) => matches!(&v.value, Value::Number(n, _) if n.parse() == Ok(position)),
            _ => key.to_string() == expr.to_string(),
        }
    }

    /// Counts the WHERE's `col >= :start` / `col < :end` conjuncts, and
    /// returns how many columns they bound; None when a column is bounded
    /// on one side only.
    fn where_bounds(&mut self, selection: &Expr) -> Option<usize> {
        let mut conjuncts = vec![selection];
        let mut starts = BTreeSet::new();
        let mut ends = BTreeSet::new();
        while let Some(e) = conjuncts.pop() {
            match e {
                Expr::Nested(inner) => conjuncts.push(inner),
                Expr::BinaryOp {
                    left,
                    op: BinaryOperator::And,
                    right,
                } => {
                    conjuncts.push(left);
                    conjuncts.push(right);
                }
                Expr::BinaryOp { left, op, right } => {
                    let bound = match (op, param_name(left), param_name(right)) {
                        (BinaryOperator::GtEq, None, Some("start")) => Some((left, true)),
                        (BinaryOperator::Lt, None, Some("end")) => Some((left, false)),
                        (BinaryOperator::LtEq, Some("start"), None) => Some((right, true)),
                        (BinaryOperator::Gt, Some("end"), None) => Some((right, false)),
                        _ => None,
                    };
                    if let Some((column, is_start)) = bound
                        && let Some(column) = column_name(column)
                    {
                        self.bounds += 1;
                        if is_start {
                            starts.insert(column);
                        } else {
                            ends.insert(column);
                        }
                    }
                }
                _ => {}
            }
        }
        (starts == ends).then_some(starts.len())
    }
}

/// `:start`, `:end` (bare or cast) as their names.
fn param_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Identifier(i) => i.value.strip_prefix(MARKER),
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => param_name(inner),
        _ => None,
    }
}

/// A column (bare, qualified or cast), as written, lower-cased.
fn column_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) if !is_param(&i.value) => Some(i.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => Some(
            parts
                .iter()
                .map(|p| p.value.to_lowercase())
                .collect::<Vec<_>>()
                .join("."),
        ),
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => column_name(inner),
        _ => None,
    }
}

impl Visitor for Shape {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if query.limit_clause.is_some() || query.fetch.is_some() {
            return ControlFlow::Break(());
        }
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                if windowed(cte.query.as_ref(), &self.ctes_with_params) {
                    self.ctes_with_params
                        .insert(cte.alias.name.value.to_lowercase());
                }
            }
        }
        if self.set_ok(&query.body) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        let is_top = self.top == Some(select as *const Select);
        let grouped = match &select.group_by {
            GroupByExpr::All(_) => return ControlFlow::Break(()),
            GroupByExpr::Expressions(keys, modifiers) => {
                if keys.is_empty() && modifiers.is_empty() {
                    false
                } else if is_top
                    && modifiers.is_empty()
                    && keys.iter().any(|k| self.is_partition_key(k, select))
                {
                    true
                } else {
                    return ControlFlow::Break(());
                }
            }
        };
        let distinct_ok = match &select.distinct {
            None | Some(Distinct::All) => true,
            // Rows of different partitions differ in the partition column.
            Some(Distinct::Distinct) => is_top,
            Some(Distinct::On(_)) => false,
        };
        let spans_rows = !distinct_ok
            || select.top.is_some()
            || (select.having.is_some() && !grouped)
            || select.qualify.is_some()
            || !select.named_window.is_empty()
            || !select.connect_by.is_empty()
            || select.prewhere.is_some()
            || !select.lateral_views.is_empty();
        if spans_rows {
            return ControlFlow::Break(());
        }
        // Each row of the SELECT may come from one windowed source only:
        // two (a join of two bounded tables, a bounded table and a windowed
        // subquery, two bounded columns of one row) keep, grouped over the
        // range, the pairs whose sides lie in different windows, which no
        // window alone gives.
        let mut windowed_sources = 0;
        for from in &select.from {
            windowed_sources += usize::from(windowed(&from.relation, &self.ctes_with_params));
            for join in &from.joins {
                windowed_sources += usize::from(windowed(&join.relation, &self.ctes_with_params));
                match &join.join_operator {
                    JoinOperator::Join(_)
                    | JoinOperator::Inner(_)
                    | JoinOperator::CrossJoin(_)
                    | JoinOperator::StraightJoin(_) => {}
                    // Left rows without a match in the window would be in
                    // every window's result.
                    JoinOperator::Left(_) | JoinOperator::LeftOuter(_)
                        if !windowed(&join.relation, &self.ctes_with_params)
                            && !matches!(
                                join.relation,
                                TableFactor::Derived { lateral: true, .. }
                            ) => {}
                    _ => return ControlFlow::Break(()),
                }
            }
        }
        if let Some(selection) = &select.selection {
            match self.where_bounds(selection) {
                Some(columns) => windowed_sources += columns,
                None => return ControlFlow::Break(()),
            }
        }
        if windowed_sources > 1 {
            return ControlFlow::Break(());
        }
        self.folds.push(grouped);
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, _select: &Select) -> ControlFlow<()> {
        self.folds.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        let spans_rows = match expr {
            Expr::Subquery(_) | Expr::Exists { .. } => true,
            Expr::In { target, .. } => {
                matches!(target, InTarget::Subquery(_) | InTarget::Table { .. })
            }
            Expr::Function(f) => {
                let name = f
                    .name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.to_lowercase())
                    .unwrap_or_default();
                let folds = AGGREGATES.contains(&name.as_str())
                    || !f.within_group.is_empty()
                    || f.filter.is_some()
                    || matches!(&f.args, FunctionArguments::List(l)
                        if l.duplicate_treatment == Some(DuplicateTreatment::Distinct));
                f.over.is_some()
                    || matches!(f.args, FunctionArguments::Subquery(_))
                    || (folds && self.folds.last() != Some(&true))
            }
            _ => false,
        };
        if spans_rows {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}
