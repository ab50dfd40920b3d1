#!/usr/bin/env bash
# The console's speed and memory on this machine (examples/console_bench.rs):
# a frame with a 3,650-partition run in flight, draws while idle, a flood of
# a million log lines, the real console's first frame over 50 jobs, and the
# first states of a large PostgreSQL table (ROWS, default 10,000,000).
# Prints markdown rows to paste into bench/RESULTS.md. Release build.
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${1:-10000000}"
cargo build --release --quiet --bin idem --example console_bench
bench="$PWD/target/release/examples/console_bench"
echo "| what | measured | target |"
echo "|---|---|---|"
"$bench" screen
"$bench" launch "$PWD/target/release/idem"
pg="${IDEM_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
if psql "$pg" -qc "select 1" > /dev/null 2>&1; then
  db=idem_bench_console
  # Kept between runs (the table takes a while to fill); drop it by hand.
  psql "$pg" -qtc "select 1 from pg_database where datname = '$db'" | grep -q 1 \
    || psql "$pg" -qc "create database $db" > /dev/null
  "$bench" postgres "${pg%/*}/$db" "$rows"
fi
