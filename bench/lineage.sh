#!/usr/bin/env bash
# A downstream job's state read over a long upstream ledger: a daily job
# reading an hourly one, both loaded over HOURS hours (default 87,600: ten
# years), one ledger row per partition, on each of ENGINES. Times, best of
# REPS (default 3), each a whole command: `idem status` of one week of the
# daily job, of the whole daily job, and of the whole hourly one. With
# BEFORE=path-to-an-older-build, that build takes turns with this one.
#
#   bench/lineage.sh
#   ENGINES=sqlite BEFORE=/tmp/idem-old bench/lineage.sh
#
# Servers: IDEM_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres),
# MariaDB through MARIADB_ARGS (default -h127.0.0.1 -P3306 -uroot).
# Prints a markdown table; also writes it to $OUT (bench/lineage-latest.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

ENGINES=${ENGINES:-"postgres mariadb sqlite"}
HOURS=${HOURS:-87600}
REPS=${REPS:-3}
scratch idem_lineage "${OUT:-bench/lineage-latest.md}"

days=$((HOURS / 24))
first_day=2016-01-01
last_day=$(date -u -d "$first_day + $((days - 1)) days" +%F)
week=$(date -u -d "$last_day - 200 days" +%F)
week_end=$(date -u -d "$week + 6 days" +%F)

setup() { # ENGINE: tables, config, one load of each job, ledgers inflated
  local e=$1 url ledger=idem_attempts ts=timestamp day hour_key day_key series
  case $e in
    postgres)
      psql -X -q "$PG" -c "create database $db" > /dev/null
      url="${PG%/*}/$db" ledger=idem.attempts day="cast(hr as date)"
      hour_key="to_char(timestamp '$first_day' + s.value * interval '1 hour', 'YYYY-MM-DD\"T\"HH24')"
      day_key="to_char(date '$first_day' + s.value, 'YYYY-MM-DD')"
      series() { echo "generate_series(1, $1) s(value)"; } ;;
    mariadb)
      mariadb "${MY[@]}" -e "create database $db"
      url="$MY_URL/$db" ts=datetime day="cast(hr as date)"
      hour_key="date_format(timestamp('$first_day') + interval s.value hour, '%Y-%m-%dT%H')"
      day_key="date_format(date('$first_day') + interval s.value day, '%Y-%m-%d')"
      series() { echo "(select seq as value from seq_1_to_$1) s"; } ;;
    sqlite)
      url="sqlite://$work/$db.db" day="date(hr)"
      hour_key="strftime('%Y-%m-%dT%H', '$first_day', '+' || s.value || ' hours')"
      day_key="strftime('%Y-%m-%d', '$first_day', '+' || s.value || ' days')"
      series() { echo "generate_series(1, $1) s"; } ;;
  esac
  sql "$e" <<SQL
create table src (id bigint not null, amount bigint not null, ts $ts not null);
create table ev_h (id bigint not null, amount bigint not null, hr $ts not null);
create index ev_h_hr on ev_h (hr);
create table agg_d (dt date not null, n bigint not null, total bigint not null);
create index agg_d_dt on agg_d (dt);
insert into src values (1, 5, '$first_day 00:30:00');
SQL
  cat > "$work/idem.toml" <<TOML
[warehouse]
url = "$url"

[[jobs]]
name = "ev_hourly"
target = "ev_h"
strategy = "replace_partition"
partition_column = "hr"
grain = "hour"
start = "${first_day}T00"
end = "${last_day}T23"
sql = "select id, amount, ts as hr from src where ts >= :start and ts < :end"

[[jobs]]
name = "daily"
target = "agg_d"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "$first_day"
end = "$last_day"
sql = "select $day as dt, count(*) as n, sum(amount) as total from ev_h where hr >= :start and hr < :end group by $day"
TOML
  for first in "ev_hourly ${first_day}T00" "daily $first_day"; do
    set -- $first
    "$bin" --config "$work/idem.toml" run "$1" --from "$2" --to "$2" \
      > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
  done
  # Each attempt copied to every other partition of its job.
  local columns="run_id, job, partition_key, attempt, status, started_at, locked_at, finished_at, rows_deleted, rows_inserted, rows_updated, rows_after, definition_hash, fingerprint, content_changed, error, operator, host, reason"
  local rest="attempt, status, started_at, locked_at, finished_at, rows_deleted, rows_inserted, rows_updated, rows_after, definition_hash, fingerprint, content_changed, error, operator, host, reason"
  sql "$e" <<SQL
insert into $ledger ($columns)
select run_id, job, $hour_key, $rest from $ledger, $(series $((HOURS - 1))) where job = 'ev_hourly';
insert into $ledger ($columns)
select run_id, job, $day_key, $rest from $ledger, $(series $((days - 1))) where job = 'daily';
SQL
}


say "## A daily job's states over an hourly upstream of $HOURS partitions"
say ""
say "| engine | build | status daily, one week | status daily, $days days | status ev_hourly, $HOURS hours |"
say "|---|---|---|---|---|"
builds="$bin"
[ -n "${BEFORE:-}" ] && builds="$BEFORE $bin"
for e in $ENGINES; do
  setup "$e"
  for b in $builds; do
    wk="" all="" hourly=""
    for ((r = 0; r < REPS; r++)); do
      wk=$(least "$wk" "$(seconds "$b" --config "$work/idem.toml" status daily --from "$week" --to "$week_end")")
      all=$(least "$all" "$(seconds "$b" --config "$work/idem.toml" status daily)")
      hourly=$(least "$hourly" "$(seconds "$b" --config "$work/idem.toml" status ev_hourly)")
    done
    label=this
    [ "$b" = "$bin" ] || label=before
    say "| $e | $label | $wk s | $all s | $hourly s |"
  done
  teardown
done
