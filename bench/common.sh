# Helpers the benchmark scripts share; each sources this file.

# least BEST-SO-FAR VALUE: the smaller of the two (BEST-SO-FAR may be empty).
least() {
  if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc -l)" = 1 ]; then echo "$2"; else echo "$1"; fi
}

# seconds COMMAND...: the wall seconds of one run of the command, which
# must succeed (its output is dropped).
seconds() {
  local t
  t=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  printf '%.3f' "$(echo "$(date +%s.%N) - $t" | bc -l)"
}

# The servers: IDEM_BENCH_POSTGRES_URL (default
# postgres://postgres@127.0.0.1:5432/postgres), MariaDB through MARIADB_ARGS
# (default -h127.0.0.1 -P3306 -uroot) and IDEM_BENCH_MYSQL_URL.
PG=${IDEM_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
read -r -a MY <<< "${MARIADB_ARGS:--h127.0.0.1 -P3306 -uroot}"
MY_URL=${IDEM_BENCH_MYSQL_URL:-mysql://root@127.0.0.1:3306}

# scratch NAME OUT: builds idem ($bin), makes a work directory ($work),
# names one scratch database ($db, on every engine: see `sql` and
# `teardown`, which also runs on exit) and starts the report OUT (`say`).
scratch() {
  cargo build --release --quiet
  bin="${CARGO_TARGET_DIR:-$PWD/target}/release/idem"
  work=$(mktemp -d)
  db="$1_$$"
  out=$2
  : > "$out"
  trap 'teardown; rm -rf "$work"' EXIT
}

# teardown: drops the scratch database on every engine.
teardown() {
  psql -X -q "$PG" -c "drop database if exists $db with (force)" > /dev/null 2>&1 || true
  mariadb "${MY[@]}" -e "drop database if exists $db" > /dev/null 2>&1 || true
  rm -f "$work/$db.db"*
}

# say TEXT: prints a line of the report and appends it to OUT.
say() { printf '%s\n' "$*" | tee -a "$out"; }

# sql ENGINE [NAME]: runs the SQL on stdin in one session of the engine's
# shell, in database NAME (default: the scratch database).
sql() {
  local name=${2:-$db}
  case $1 in
    postgres) psql -X -q -v ON_ERROR_STOP=1 "${PG%/*}/$name" > /dev/null ;;
    mariadb) mariadb "${MY[@]}" "$name" > /dev/null ;;
    sqlite) sqlite3 -bail "$work/$name.db" > /dev/null ;;
  esac
}
