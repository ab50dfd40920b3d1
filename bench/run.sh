#!/usr/bin/env bash
# idem's own speed and memory on this machine: creating the demo, a full
# reload of its daily fact, reading every state, and a 3M-row backfill on
# PostgreSQL. Writes bench/own-latest.md (RESULTS.md quotes it). Needs a
# release build (made here).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="$PWD/target/release/idem"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${OUT:-bench/own-latest.md}

measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2> "$work/err" || { cat "$work/err"; exit 1; }
  read -r secs kib < "$work/t"
  printf '| %s | %s s | %s MiB |\n' "$label" "$secs" "$((kib / 1024))" >> "$work/rows"
}

measure "idem demo (120 days, ~1.3M source rows, 4 jobs, history)" "$bin" demo --path "$work/demo"
cfg="$work/demo/idem.toml"
measure "idem run fct_orders: every day again (~1.2M rows, concurrency 4)" "$bin" --config "$cfg" run fct_orders --yes
measure "idem status --format json (all jobs, ~500 partitions)" "$bin" --config "$cfg" status --format json
measure "idem verify fct_orders (one 10k-row day, 3 runs, rolled back)" "$bin" --config "$cfg" verify fct_orders "$(date -u -d '30 days ago' +%F)"

pg="${IDEM_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
if psql "$pg" -qc "select 1" > /dev/null 2>&1; then
  db="idem_bench_$$"
  psql "$pg" -qc "create database $db" > /dev/null
  url="${pg%/*}/$db"
  psql "$url" -q > /dev/null <<'SQL'
create table src (id bigint not null, amount int not null, dt date not null);
insert into src select i, i % 1000, date '2026-01-01' + (i / 100000)::int from generate_series(0, 2999999) i;
create index on src (dt);
create table fct (id bigint not null, amount int not null, dt date not null);
create index on fct (dt);
SQL
  cat > "$work/pg.toml" <<TOML
[warehouse]
url = "$url"
[[jobs]]
name = "fct"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
end = "2026-01-30"
sql = "select id, amount, dt from src where dt >= :start and dt < :end"
TOML
  measure "PostgreSQL: idem run, 30 days × 100k rows, first load (concurrency 4)" "$bin" --config "$work/pg.toml" run fct --concurrency 4 --yes
  measure "PostgreSQL: the same again (delete + insert every day)" "$bin" --config "$work/pg.toml" run fct --concurrency 4 --yes
  psql "$pg" -qc "drop database $db with (force)" > /dev/null
fi

{
  echo "# Benchmarks"
  echo
  echo "Run with \`bench/run.sh\` (release build) on $(nproc) cores, $(date -u +%F)."
  echo "Wall time and peak memory (max RSS) of the whole command."
  echo
  echo "| what | time | memory |"
  echo "|---|---|---|"
  cat "$work/rows"
} > "$out"
cat "$out"
