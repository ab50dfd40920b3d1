#!/usr/bin/env bash
# A state read over a long ledger: one daily job of 45 partitions whose
# ledger holds ATTEMPTS attempts (default 100,000: every partition loaded
# some 2,200 times over), on each of ENGINES. Times, best of REPS (default
# 3): `idem status` of the job and a one-day `idem run`, each a whole
# command. With BEFORE=path-to-an-older-build, that build takes turns with
# this one on the same ledger, repetition by repetition; with NUMBERS=1
# (an older build that predates the ledger's index on (partition_key, job,
# attempt)), each of its turns runs on the ledger without it, as its users
# have it, and the index is made again, untimed, before this build's turn
# (else this build's start would make it inside its time).
#
#   bench/ledger.sh
#   ENGINES=mariadb ATTEMPTS=20000 BEFORE=/tmp/idem-old bench/ledger.sh
#
# Servers: IDEM_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres),
# MariaDB through MARIADB_ARGS (default -h127.0.0.1 -P3306 -uroot).
# Prints a markdown table; also writes it to $OUT (bench/ledger-latest.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

ENGINES=${ENGINES:-"postgres mariadb sqlite"}
ATTEMPTS=${ATTEMPTS:-100000}
REPS=${REPS:-3}
scratch idem_ledger "${OUT:-bench/ledger-latest.md}"

setup() { # ENGINE: source, target, config, one load, ledger inflated
  local e=$1 url dt series ledger=idem_attempts ts=timestamp
  case $e in
    postgres)
      psql -X -q "$PG" -c "create database $db" > /dev/null
      url="${PG%/*}/$db" dt="cast(ts as date)" ledger=idem.attempts
      series="generate_series(1, $ATTEMPTS / 45) s(value)" ;;
    mariadb)
      mariadb "${MY[@]}" -e "create database $db"
      url="$MY_URL/$db" dt="cast(ts as date)" ts=datetime
      series="(select seq as value from seq_1_to_$((ATTEMPTS / 45))) s" ;;
    sqlite)
      url="sqlite://$work/$db.db" dt="date(ts)"
      series="generate_series(1, $ATTEMPTS / 45) s" ;;
  esac
  sql "$e" <<SQL
create table src (id bigint not null, ts $ts not null);
create table fct (id bigint not null, dt date not null);
create index fct_dt on fct (dt);
SQL
  for ((d = 0; d < 45; d++)); do
    echo "insert into src values ($d, '$(date -u -d "2026-01-01 + $d days" +%F) 12:00:00');"
  done | sql "$e"
  cat > "$work/idem.toml" <<TOML
[warehouse]
url = "$url"

[[jobs]]
name = "fct"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
end = "2026-02-14"
sql = "select id, $dt as dt from src where ts >= :start and ts < :end"
TOML
  # The ledger is made by the older build, as its users have it.
  "${BEFORE:-$bin}" --config "$work/idem.toml" run fct > /dev/null 2>&1
  sql "$e" <<SQL
insert into $ledger (run_id, job, partition_key, attempt, status, started_at, locked_at,
  finished_at, rows_deleted, rows_inserted, rows_updated, rows_after, definition_hash,
  fingerprint, content_changed, error, operator, host, reason)
select run_id, job, partition_key, attempt + s.value, status, started_at, locked_at,
  finished_at, rows_deleted, rows_inserted, rows_updated, rows_after, definition_hash,
  fingerprint, content_changed, error, operator, host, reason
from $ledger, $series;
SQL
}

say "## A state read over a ledger of $ATTEMPTS attempts of one 45-day job"
say ""
say "| engine | build | idem status | one-day idem run |"
say "|---|---|---|---|"
builds="$bin"
[ -n "${BEFORE:-}" ] && builds="$BEFORE $bin"
numbers() { # ENGINE old|new: the ledger without the index on (partition_key, job, attempt), or with it
  local index=idem_attempts_by_attempt table=idem_attempts on=""
  [ "$1" = postgres ] && index=idem.attempts_by_attempt table=idem.attempts
  [ "$1" = mariadb ] && on=" on $table"
  case $2 in
    old) echo "drop index if exists $index$on;" ;;
    new) echo "create index if not exists ${index#idem.} on $table (partition_key, job, attempt);" ;;
  esac | sql "$1"
}
for e in $ENGINES; do
  setup "$e"
  declare -A status=() run=()
  for ((r = 0; r < REPS; r++)); do
    for b in $builds; do
      if [ "${NUMBERS:-}" = 1 ]; then
        [ "$b" = "$bin" ] && numbers "$e" new || numbers "$e" old
      fi
      status[$b]=$(least "${status[$b]:-}" "$(seconds "$b" --config "$work/idem.toml" status fct)")
      run[$b]=$(least "${run[$b]:-}" "$(seconds "$b" --config "$work/idem.toml" run fct --from 2026-01-05 --to 2026-01-05)")
    done
  done
  for b in $builds; do
    label=this
    [ "$b" = "$bin" ] || label=before
    say "| $e | $label | ${status[$b]} s | ${run[$b]} s |"
  done
  unset status run
  teardown
done
