#!/usr/bin/env bash
# idem against each engine's own shell, side by side in one run.
#
#   bench/peers.sh                  # everything below, default sizes
#   PARTS=loads SIZES=2000 ENGINES=sqlite bench/peers.sh
#
# loads:  one fresh database per (engine, rows per day): a source table `orders`
#         (DAYS days × SIZE rows, indexed on created_at) and, per runner, a
#         fresh target of the same shape (indexed on dt). Runners: the
#         engine's shell (psql, mariadb, sqlite3: one session running
#         `BEGIN; DELETE …; INSERT … SELECT …; COMMIT;` per day, the floor),
#         the same shell with the statements idem's guarantees need written
#         by hand in their cheapest form ("guarded": a lock, bare reads of
#         the window for the fingerprints and the window check, a ledger
#         row; see shell_script), then `idem run` at each of CONCURRENCY. Each runner's first load
#         and re-run are timed, and after each the target's contents are
#         checked equal to the source's rows (count and column sums). The
#         runners take turns REPS times (default 3); each one's best counts.
# scan:   `idem status` of a daily job over 3,650 days against the raw
#         `select dt, count(*) from t group by dt`, at each of SCAN_ROWS.
# native: PostgreSQL only, the loads into a target partitioned by range on
#         dt (a partition per day): idem's TRUNCATE of a day's partition
#         against the psql session's DELETE (not in the default PARTS).
# statements: PostgreSQL only, at the first of SIZES rows a day: the
#         server's own time per kind of statement for a re-run by the psql
#         session and by `idem run --concurrency 1`, each on a target it has
#         just loaded (log_min_duration_statement = 0 in both sessions, read
#         back from PG_LOG, the server's log file). Far steadier than wall
#         time on a shared machine, and it says where a gap goes. Not in the
#         default PARTS.
# memory: peak RSS of a headless backfill (SQLite, 10 rows per partition,
#         concurrency 4) for each GRAIN:PARTITIONS of MEMORY (default
#         "day:365 day:3650"; "hour:36500" is an hourly job over ~4 years).
#
# Needs: a release build (made here), psql, mariadb, sqlite3 (Debian:
# `apt-get install sqlite3`), GNU time (`apt-get install time`).
# Servers: IDEM_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres),
# MariaDB through MARIADB_ARGS (default -h127.0.0.1 -P3306 -uroot).
# Prints markdown tables; also writes them to $OUT (bench/peers-latest.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

PARTS=${PARTS:-"loads scan memory"}
ENGINES=${ENGINES:-"postgres mariadb sqlite"}
SIZES=${SIZES:-"2000 100000"}
DAYS=${DAYS:-45}
CONCURRENCY=${CONCURRENCY:-"1 4"}
REPS=${REPS:-3}
SCAN_ROWS=${SCAN_ROWS:-10000000}
SCAN_ENGINES=${SCAN_ENGINES:-$ENGINES}
MEMORY=${MEMORY:-"day:365 day:3650"}

for tool in psql mariadb sqlite3 /usr/bin/time; do
  command -v "$tool" > /dev/null || {
    echo "missing $tool (Debian: apt-get install postgresql-client mariadb-client sqlite3 time)" >&2
    exit 2
  }
done

# IDEM_BIN: another build to measure (e.g. of an older commit).
if [ -n "${IDEM_BIN:-}" ]; then
  bin=$IDEM_BIN
else
  cargo build --release --quiet
  bin="$PWD/target/release/idem"
fi
work=$(mktemp -d)
dbs=()
cleanup() {
  for d in "${dbs[@]}"; do
    case $d in
      pg:*) psql -X -q "$PG" -c "drop database if exists ${d#pg:} with (force)" > /dev/null 2>&1 || true ;;
      my:*) mariadb "${MY[@]}" -e "drop database if exists ${d#my:}" > /dev/null 2>&1 || true ;;
    esac
  done
  rm -rf "$work"
}
trap cleanup EXIT
out=${OUT:-bench/peers-latest.md}
: > "$out"
say() { printf '%s\n' "$*" | tee -a "$out"; }

now() { date +%s.%N; }
elapsed() { printf '%.2f' "$(echo "$(now) - $1" | bc -l)"; }
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
day_after() { date -u -d "$1 + $2 days" +%F; }

# --- per-engine plumbing -------------------------------------------------

# new_db ENGINE NAME: creates a fresh database (dropped on exit).
new_db() {
  case $1 in
    postgres) psql -X -q "$PG" -c "create database $2" > /dev/null; dbs+=("pg:$2") ;;
    mariadb) mariadb "${MY[@]}" -e "create database $2"; dbs+=("my:$2") ;;
    sqlite) ;;
  esac
}

# db_url ENGINE NAME: the database's idem URL.
db_url() {
  case $1 in
    postgres) echo "${PG%/*}/$2" ;;
    mariadb) echo "$MY_URL/$2" ;;
    sqlite) echo "sqlite://$work/$2.db" ;;
  esac
}

# query ENGINE NAME SQL: prints the result, one line, fields separated by |.
query() {
  case $1 in
    postgres) psql -X -qAt "${PG%/*}/$2" -c "$3" ;;
    mariadb) mariadb "${MY[@]}" -N -B "$2" -e "$3" | tr '\t' '|' ;;
    sqlite) sqlite3 "$work/$2.db" "$3" ;;
  esac
}

# The partition column of a created_at value, in the engine's SQL.
dt_of() {
  case $1 in
    sqlite) echo "date($2)" ;;
    *) echo "cast($2 as date)" ;;
  esac
}

# Days since 2026-01-01 of a date expression, for the content check.
days_of() {
  case $1 in
    postgres) echo "($2 - date '2026-01-01')" ;;
    mariadb) echo "datediff($2, '2026-01-01')" ;;
    sqlite) echo "cast(julianday($2) - julianday('2026-01-01') as integer)" ;;
  esac
}

create_source() { # ENGINE DB ROWS_PER_DAY TOTAL
  local e=$1 db=$2 r=$3 n=$4
  case $e in
    postgres) sql "$e" "$db" <<SQL
create table orders (order_id bigint not null, customer_id bigint not null, amount_cents bigint not null, created_at timestamp not null);
insert into orders select i, i % 10007, (i * 37) % 100000,
  timestamp '2026-01-01' + (i / $r) * interval '1 day' + ((i % $r) * 86399 / $r) * interval '1 second'
  from generate_series(0, $n - 1::bigint) i;
create index on orders (created_at);
vacuum analyze orders;
SQL
    ;;
    mariadb) sql "$e" "$db" <<SQL
create table orders (order_id bigint not null, customer_id bigint not null, amount_cents bigint not null, created_at datetime not null, key (created_at));
insert into orders select seq, seq % 10007, (seq * 37) % 100000,
  timestamp('2026-01-01') + interval (seq div $r) day + interval ((seq % $r) * 86399 div $r) second
  from seq_0_to_$((n - 1));
analyze table orders;
SQL
    ;;
    sqlite) sql "$e" "$db" <<SQL
pragma journal_mode = wal;
create table orders (order_id integer not null, customer_id integer not null, amount_cents integer not null, created_at timestamp not null);
insert into orders select value, value % 10007, (value * 37) % 100000,
  datetime('2026-01-01', '+' || (value / $r) || ' days', '+' || ((value % $r) * 86399 / $r) || ' seconds')
  from generate_series(0, $n - 1);
create index orders_created on orders (created_at);
analyze;
SQL
    ;;
  esac
}

create_target() { # ENGINE DB TABLE
  local ty=bigint
  [ "$1" = sqlite ] && ty=integer
  sql "$1" "$2" <<SQL
drop table if exists $3;
create table $3 (order_id $ty not null, customer_id $ty not null, amount_cents $ty not null, dt date not null);
create index ${3}_dt on $3 (dt);
SQL
}

# The day-by-day script a person would run in the engine's shell: plain
# (the floor), or guarded: the same with the statements idem's guarantees
# need, each in the cheapest form a person would write by hand. That is one
# lock (SQLite: BEGIN IMMEDIATE is the lock), a bare read of the window's
# values after the INSERT (the new rows' fingerprint and the window check,
# without a hash), the same read before the DELETE on MariaDB and SQLite
# (the old rows' fingerprint: their rows do not name the transaction that
# wrote them, as PostgreSQL's xmin does), and one ledger row.
shell_script() { # ENGINE TABLE [guarded]
  local e=$1 t=$2 guarded=${3:-} begin="begin;" d next read
  [ "$e" = sqlite ] && begin="begin immediate;"
  [ "$e" = mariadb ] && begin="start transaction;"
  if [ -n "$guarded" ]; then
    echo "create table if not exists guard_ledger (job varchar(64) not null, part varchar(16) not null, rows_after bigint not null, fingerprint varchar(64) not null);"
  fi
  for ((i = 0; i < DAYS; i++)); do
    d=$(day_after 2026-01-01 "$i")
    next=$(day_after 2026-01-01 $((i + 1)))
    read="select count(*), sum(order_id), sum(customer_id), sum(amount_cents), max(dt) from $t where dt >= '$d' and dt < '$next';"
    echo "$begin"
    if [ -n "$guarded" ]; then
      case $e in
        postgres) echo "select pg_advisory_xact_lock(hashtext('$t/$d'));" ;;
        mariadb) echo "select get_lock('$t/$d', 60);"; echo "$read" ;;
        sqlite) echo "$read" ;;
      esac
    fi
    echo "delete from $t where dt >= '$d' and dt < '$next';"
    echo "insert into $t (order_id, customer_id, amount_cents, dt) select order_id, customer_id, amount_cents, $(dt_of "$e" created_at) from orders where created_at >= '$d' and created_at < '$next';"
    if [ -n "$guarded" ]; then
      echo "$read"
      echo "insert into guard_ledger values ('$t', '$d', 2000, 'v5:2000:0123456789abcdef0123456789abcdef');"
    fi
    echo "commit;"
    if [ -n "$guarded" ] && [ "$e" = mariadb ]; then echo "do release_all_locks();"; fi
  done
}

write_config() { # URL ENGINE TABLE FILE [JOB]
  cat > "$4" <<TOML
[warehouse]
url = "$1"
lock_timeout = "60s"

[[jobs]]
name = "${5:-fct}"
target = "$3"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
end = "$(day_after 2026-01-01 $((DAYS - 1)))"
sql = "select order_id, customer_id, amount_cents, $(dt_of "$2" created_at) as dt from orders where created_at >= :start and created_at < :end"
TOML
}

digest() { # ENGINE DB TABLE
  query "$1" "$2" "select count(*), sum(order_id), sum(customer_id), sum(amount_cents), sum($(days_of "$1" dt)) from $3"
}

expected_digest() { # ENGINE DB
  local end
  end=$(day_after 2026-01-01 "$DAYS")
  query "$1" "$2" "select count(*), sum(order_id), sum(customer_id), sum(amount_cents), sum($(days_of "$1" "$(dt_of "$1" created_at)")) from orders where created_at >= '2026-01-01' and created_at < '$end'"
}

check() { # ENGINE DB TABLE EXPECTED
  local got
  got=$(digest "$1" "$2" "$3")
  if [ "$got" != "$4" ]; then
    echo "CONTENTS DIFFER in $1 $3: $got, expected $4" >&2
    exit 1
  fi
}

# --- loads -------------------------------------------------------------

loads() {
  say ""
  say "## Loads: $DAYS daily partitions, replace_partition, idem vs the engine's shell"
  say ""
  say "| engine | rows/day | runner | first load | × shell | re-run | × shell | first × guarded | re-run × guarded | contents |"
  say "|---|---|---|---|---|---|---|---|---|---|"
  for e in $ENGINES; do
    for size in $SIZES; do
      side_by_side "$e" "$size" create_target
    done
  done
}

# The same on PostgreSQL into a target partitioned by range on dt, one
# partition per day: idem empties a day by TRUNCATE of its partition (in
# the load's transaction), the psql session by DELETE, as before.
native() {
  say ""
  say "## Native partitions (PostgreSQL): $DAYS daily partitions of a range-partitioned target, idem's TRUNCATE vs the psql session's DELETE"
  say ""
  say "| engine | rows/day | runner | first load | × shell | re-run | × shell | first × guarded | re-run × guarded | contents |"
  say "|---|---|---|---|---|---|---|---|---|---|"
  for size in $SIZES; do
    side_by_side postgres "$size" create_native_target
  done
}

create_native_target() { # ENGINE DB TABLE
  local i d next
  {
    echo "drop table if exists $3;"
    echo "create table $3 (order_id bigint not null, customer_id bigint not null, amount_cents bigint not null, dt date not null) partition by range (dt);"
    for ((i = 0; i < DAYS; i++)); do
      d=$(day_after 2026-01-01 "$i")
      next=$(day_after 2026-01-01 $((i + 1)))
      echo "create table ${3}_${d//-/} partition of $3 for values from ('$d') to ('$next');"
    done
    echo "create index on $3 (dt);"
  } | sql "$1" "$2"
}

# filenodes DB TABLE: the file nodes of the table's partitions, which a
# TRUNCATE replaces and a DELETE keeps.
filenodes() {
  query postgres "$1" "select string_agg(c.relfilenode::text, ',') from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = '$2'::regclass"
}

# truncated DB TABLE NODES: fails unless every partition's file node has
# changed since NODES (the re-run emptied each by TRUNCATE).
truncated() {
  local kept
  kept=$(query postgres "$1" "select count(*) from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = '$2'::regclass and c.relfilenode::text = any(string_to_array('$3', ','))")
  [ "$kept" = 0 ] || { echo "$kept partitions of $2 were not truncated by idem's re-run" >&2; exit 1; }
}

# side_by_side ENGINE SIZE CREATE: on a fresh database of SIZE rows a day,
# the shell and idem at each of CONCURRENCY take turns REPS times, each
# into a fresh target made by CREATE; one table row per runner, its best
# first load and re-run.
side_by_side() {
  local e=$1 size=$2 create=$3
  local db="idem_peer_${e}_${size}_$$"
  new_db "$e" "$db"
  local url
  url=$(db_url "$e" "$db")
  create_source "$e" "$db" "$size" $((size * DAYS))
  local want
  want=$(expected_digest "$e" "$db")
  local runners="shell guarded" runner
  for c in $CONCURRENCY; do runners="$runners idem$c"; done
  # Each runner in turn, REPS times over (the machine is shared and its
  # load moves): the best first load and re-run of each count.
  # The order of the runners turns by one each time, so that none always
  # follows the same one; and each timed run starts on a settled server.
  declare -A best_first=() best_rerun=()
  local -a order
  read -r -a order <<< "$runners"
  for ((rep = 0; rep < REPS; rep++)); do
    local turn=("${order[@]:rep % ${#order[@]}}" "${order[@]:0:rep % ${#order[@]}}")
    for runner in "${turn[@]}"; do
      local table="fct_$runner" first rerun t
      "$create" "$e" "$db" "$table"
      if [ "$runner" = shell ] || [ "$runner" = guarded ]; then
        shell_script "$e" "$table" "${runner#shell}" > "$work/day.sql"
        settle "$e" "$db"
        t=$(now); sql "$e" "$db" < "$work/day.sql"; first=$(elapsed "$t")
        check "$e" "$db" "$table" "$want"
        settle "$e" "$db"
        t=$(now); sql "$e" "$db" < "$work/day.sql"; rerun=$(elapsed "$t")
        check "$e" "$db" "$table" "$want"
      else
        # A job of its own each time: its target is new, and so is its
        # history in the ledger, as at a real first load.
        write_config "$url" "$e" "$table" "$work/$runner.toml" "fct_$rep"
        settle "$e" "$db"
        t=$(now); idem_run "$runner" "fct_$rep"; first=$(elapsed "$t")
        check "$e" "$db" "$table" "$want"
        local nodes=""
        [ "$create" = create_native_target ] && nodes=$(filenodes "$db" "$table")
        settle "$e" "$db"
        t=$(now); idem_run "$runner" "fct_$rep"; rerun=$(elapsed "$t")
        check "$e" "$db" "$table" "$want"
        [ -z "$nodes" ] || truncated "$db" "$table" "$nodes"
      fi
      best_first[$runner]=$(least "${best_first[$runner]:-}" "$first")
      best_rerun[$runner]=$(least "${best_rerun[$runner]:-}" "$rerun")
    done
  done
  for runner in $runners; do
    local f=${best_first[$runner]} r=${best_rerun[$runner]}
    local label="$(shell_name "$e") session"
    case $runner in
      guarded) label="$(shell_name "$e") session with the guarantees' statements" ;;
      idem*) label="idem run --concurrency ${runner#idem}" ;;
    esac
    say "| $e | $size | $label | ${f} s | $(ratio "$f" "${best_first[shell]}") | ${r} s | $(ratio "$r" "${best_rerun[shell]}") | $(ratio "$f" "${best_first[guarded]}") | $(ratio "$r" "${best_rerun[guarded]}") | equal |"
  done
  unset best_first best_rerun
  drop_db "$e" "$db"
}

# settle ENGINE DB: waits for the work a runner leaves the server to do
# after it (PostgreSQL's autovacuum of the rows a re-run deleted, InnoDB's
# purge of them), and on PostgreSQL and SQLite writes the changes out (a
# checkpoint), so that no runner pays for the one before it. Gives up
# waiting after 60 s.
settle() {
  local i
  case $1 in
    postgres)
      for ((i = 0; i < 600; i++)); do
        [ "$(query postgres "$2" "select count(*) from pg_stat_activity where backend_type = 'autovacuum worker'")" = 0 ] && break
        sleep 0.1
      done
      query postgres "$2" "checkpoint" > /dev/null
      ;;
    mariadb)
      for ((i = 0; i < 600; i++)); do
        [ "$(query mariadb "$2" "select count from information_schema.innodb_metrics where name = 'trx_rseg_history_len'")" -lt 100 ] && break
        sleep 0.1
      done
      ;;
    sqlite) query sqlite "$2" "pragma wal_checkpoint(truncate)" > /dev/null ;;
  esac
}

idem_run() { # RUNNER [JOB]
  "$bin" --config "$work/$1.toml" run "${2:-fct}" --concurrency "${1#idem}" > "$work/run.log" 2>&1 || {
    cat "$work/run.log"
    exit 1
  }
}

drop_db() { # ENGINE DB
  case $1 in
    postgres) psql -X -q "$PG" -c "drop database $2 with (force)" > /dev/null ;;
    mariadb) mariadb "${MY[@]}" -e "drop database $2" ;;
    sqlite) rm -f "$work/$2.db"* ;;
  esac
}

shell_name() {
  case $1 in
    postgres) echo psql ;;
    mariadb) echo mariadb ;;
    sqlite) echo sqlite3 ;;
  esac
}

# --- statements, by the server's clock -----------------------------------

# by_kind LOG DB: from the server's log, the milliseconds per kind of
# statement of database DB's sessions, as "kind<TAB>step<TAB>ms" lines
# (step: simple, parse, bind or execute).
by_kind() {
  awk -v db="@$2 " '
    index($0, db) && index($0, "LOG:  duration: ") {
      line = $0
      sub(/.*LOG:  duration: /, "", line)
      ms = line; sub(/ ms.*/, "", ms)
      sub(/^[0-9.]+ ms  /, "", line)
      step = line; sub(/[ :].*/, "", step)
      if (step == "statement") step = "simple"
      text = line; sub(/^[^:]*: /, "", text); text = tolower(text)
      if (text ~ /pg_advisory_xact_lock/ || text ~ /^begin/) kind = "BEGIN (idem: with the partition locks)"
      else if (text ~ /^commit/) kind = "COMMIT"
      else if (text ~ /^(with gone as \()?delete/) kind = "DELETE (idem: with the read of the window before it, or trusting the last load)"
      else if (text ~ /^insert into "idem"/) kind = "ledger row"
      else if (text ~ /^insert into/) kind = "INSERT of the job rows"
      else if (text ~ /^select count\(\*\), cast\(coalesce\(sum/) kind = "read of the window after the INSERT"
      else if (text ~ /^set log_min_duration/) next
      else kind = "the run start (catalogue, ledger, plan)"
      ms_of[kind "\t" step] += ms
    }
    END { for (k in ms_of) printf "%s\t%.1f\n", k, ms_of[k] }
  ' "$1"
}

statements() {
  if [ -z "${PG_LOG:-}" ] || [ ! -r "$PG_LOG" ]; then
    echo "statements: set PG_LOG to the PostgreSQL server's log file (Debian: /var/log/postgresql/postgresql-15-main.log)" >&2
    exit 2
  fi
  local size=${SIZES%% *} db="idem_stmt_$$" from
  new_db postgres "$db"
  local url
  url=$(db_url postgres "$db")
  create_source postgres "$db" "$size" $((size * DAYS))
  local want
  want=$(expected_digest postgres "$db")

  create_target postgres "$db" fct_shell
  shell_script postgres fct_shell > "$work/day.sql"
  sql postgres "$db" < "$work/day.sql"
  from=$(wc -l < "$PG_LOG")
  { echo "set log_min_duration_statement = 0;"; cat "$work/day.sql"; } | sql postgres "$db"
  tail -n +"$((from + 1))" "$PG_LOG" > "$work/shell.log"
  check postgres "$db" fct_shell "$want"

  create_target postgres "$db" fct_idem1
  write_config "$url" postgres fct_idem1 "$work/idem1.toml"
  idem_run idem1
  write_config "$url?options=-c%20log_min_duration_statement%3D0" postgres fct_idem1 "$work/idem1.toml"
  from=$(wc -l < "$PG_LOG")
  idem_run idem1
  tail -n +"$((from + 1))" "$PG_LOG" > "$work/idem.log"
  check postgres "$db" fct_idem1 "$want"

  by_kind "$work/shell.log" "$db" > "$work/shell.kinds"
  by_kind "$work/idem.log" "$db" > "$work/idem.kinds"
  say ""
  say "## Statements (PostgreSQL): the server's milliseconds for a re-run of $DAYS days of $size rows, by kind"
  say ""
  say "| statement | psql session | idem: planning (bind) | idem: parse and execute | idem: all |"
  say "|---|---|---|---|---|"
  # One row per kind seen in either log, in name order: the shell's
  # milliseconds, and idem's planning (bind) apart from the rest; then the
  # totals.
  awk -F'\t' -v totals="$work/totals.md" '
    FILENAME ~ /shell/ { shell[$1] += $3; kinds[$1] = 1; next }
    { if ($2 == "bind") bind[$1] += $3; else run[$1] += $3; kinds[$1] = 1 }
    END {
      for (k in kinds) {
        all = bind[k] + run[k]; ts += shell[k]; ti += all
        printf "| %s | %.1f | %.1f | %.1f | %.1f |\n", k, shell[k], bind[k], run[k], all
      }
      printf "| all | %.1f | | | %.1f (%.2f ×) |\n", ts, ti, ti / ts > totals
    }
  ' "$work/shell.kinds" "$work/idem.kinds" | sort > "$work/statements.md"
  cat "$work/totals.md" >> "$work/statements.md"
  while IFS= read -r row; do say "$row"; done < "$work/statements.md"
  drop_db postgres "$db"
}

# --- state scan ----------------------------------------------------------

scan_table() { # ENGINE DB ROWS
  local e=$1 db=$2 n=$3
  case $e in
    postgres) sql "$e" "$db" <<SQL
create table t (id bigint not null, amount int not null, dt date not null);
insert into t select i, i % 1000, date '2016-01-01' + (i % 3650) from generate_series(0, $n - 1) i;
create index on t (dt);
vacuum analyze t;
SQL
    ;;
    mariadb) sql "$e" "$db" <<SQL
create table t (id bigint not null, amount int not null, dt date not null, key (dt));
insert into t select seq, seq % 1000, date('2016-01-01') + interval (seq % 3650) day from seq_0_to_$((n - 1));
analyze table t;
SQL
    ;;
    sqlite) sql "$e" "$db" <<SQL
pragma journal_mode = wal;
create table t (id integer not null, amount integer not null, dt date not null);
insert into t select value, value % 1000, date('2016-01-01', '+' || (value % 3650) || ' days') from generate_series(0, $n - 1);
create index t_dt on t (dt);
analyze;
SQL
    ;;
  esac
}

# Best wall time of three runs of a command.
best_of_3() {
  local best="" t s
  for _ in 1 2 3; do
    t=$(now); "$@" > /dev/null; s=$(elapsed "$t")
    if [ -z "$best" ] || [ "$(echo "$s < $best" | bc -l)" = 1 ]; then best=$s; fi
  done
  echo "$best"
}

scan() {
  say ""
  say "## State scan: one daily job, 3,650 partitions (best of 3, wall time of the whole command)"
  say ""
  say "| engine | rows | raw \`select dt, count(*) from t group by dt\` | \`idem status\` | × raw |"
  say "|---|---|---|---|---|"
  for e in $SCAN_ENGINES; do
    for n in $SCAN_ROWS; do
      local db="idem_scan_${e}_${n}_$$"
      new_db "$e" "$db"
      local url
      url=$(db_url "$e" "$db")
      scan_table "$e" "$db" "$n"
      cat > "$work/scan.toml" <<TOML
[warehouse]
url = "$url"
statement_timeout = "1h"

[[jobs]]
name = "t"
target = "t"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2016-01-01"
end = "$(day_after 2016-01-01 3649)"
sql = "select id, amount, dt from t where dt >= :start and dt < :end"
TOML
      local raw status
      raw=$(best_of_3 query "$e" "$db" "select dt, count(*) from t group by dt")
      status=$(best_of_3 "$bin" --config "$work/scan.toml" status t --format csv)
      local partitions
      partitions=$("$bin" --config "$work/scan.toml" status t --format csv | tail -n +2 | grep -c ',unmanaged,')
      [ "$partitions" = 3650 ] || { echo "idem status saw $partitions partitions with rows, not 3650" >&2; exit 1; }
      say "| $e | $n | ${raw} s | ${status} s | $(ratio "$status" "$raw") |"
      drop_db "$e" "$db"
    done
  done
}

# --- memory --------------------------------------------------------------

memory() {
  say ""
  say "## Memory: peak RSS of a headless backfill (SQLite, 10 rows per partition, concurrency 4)"
  say ""
  say "| grain | partitions | wall time | max RSS |"
  say "|---|---|---|---|"
  local run
  for run in $MEMORY; do
    local grain=${run%%:*} n=${run#*:}
    local db="idem_mem_${grain}_$n" step=days within=hours last bucket="date(created_at)" type=date
    if [ "$grain" = hour ]; then
      step=hours within=minutes
      last=$(date -u -d "2016-01-01 + $((n - 1)) hours" +%FT%H)
      bucket="strftime('%Y-%m-%d %H:00:00', created_at)"
      type=timestamp
    else
      last=$(day_after 2016-01-01 $((n - 1)))
    fi
    local url
    url=$(db_url sqlite "$db")
    sql sqlite "$db" <<SQL
pragma journal_mode = wal;
create table orders (order_id integer not null, customer_id integer not null, amount_cents integer not null, created_at timestamp not null);
insert into orders select value, value % 10007, value % 1000,
  datetime('2016-01-01', '+' || (value / 10) || ' $step', '+' || (value % 10) || ' $within')
  from generate_series(0, $((n * 10)) - 1);
create index orders_created on orders (created_at);
create table fct (order_id integer not null, customer_id integer not null, amount_cents integer not null, dt $type not null);
create index fct_dt on fct (dt);
SQL
    cat > "$work/mem.toml" <<TOML
[warehouse]
url = "$url"
lock_timeout = "60s"

[[jobs]]
name = "fct"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "$grain"
start = "2016-01-01"
end = "$last"
sql = "select order_id, customer_id, amount_cents, $bucket as dt from orders where created_at >= :start and created_at < :end"
TOML
    # Builds that ask before loading over 100 partitions take --yes.
    local yes=()
    if "$bin" run --help 2>/dev/null | grep -q -- '--yes'; then yes=(--yes); fi
    /usr/bin/time -f "%e %M" -o "$work/mem.time" "$bin" --config "$work/mem.toml" run fct --concurrency 4 "${yes[@]}" > /dev/null 2>&1
    read -r secs kib < "$work/mem.time"
    local loaded
    loaded=$(query sqlite "$db" "select count(*) from fct")
    [ "$loaded" = $((n * 10)) ] || { echo "memory run loaded $loaded rows, not $((n * 10))" >&2; exit 1; }
    say "| $grain | $n | ${secs} s | $((kib / 1024)) MiB ($kib KiB) |"
    drop_db sqlite "$db"
  done
}

say "# Peer benchmark, $(date -u '+%F %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
say ""
say "Binary: $bin"
say "Command: \`REPS=$REPS PARTS=\"$PARTS\" ENGINES=\"$ENGINES\" SIZES=\"$SIZES\" DAYS=$DAYS CONCURRENCY=\"$CONCURRENCY\" SCAN_ROWS=\"$SCAN_ROWS\" MEMORY=\"$MEMORY\" bench/peers.sh\`"
for part in $PARTS; do
  "$part"
done
say ""
say "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
