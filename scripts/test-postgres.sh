#!/usr/bin/env bash
# Runs the server test suites against PostgreSQL: a throwaway cluster on loopback (Debian's postgresql binaries),
# TEST_DATABASE_URL pointing at it (each test gets a fresh database), stopped and removed at the end.
#   npm run test:postgres [-- <test files>]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ]; then echo "PostgreSQL server binaries not found (apt-get install postgresql)"; exit 2; fi
dir=$(mktemp -d /tmp/market-pg.XXXXXX)
port=${PG_PORT:-54329}
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R nobody "$dir"; su nobody -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
as_pg "$bin/initdb -D $dir/data -U market --auth=trust >/dev/null"
as_pg "$bin/pg_ctl -D $dir/data -l $dir/log -o '-p $port -k $dir -c listen_addresses=127.0.0.1' -w start >/dev/null"
trap 'as_pg "$bin/pg_ctl -D $dir/data -m fast stop >/dev/null" || true; rm -rf "$dir"' EXIT
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(test/server/posting.test.ts test/server/lifecycle-smoke.test.ts test/server/smoke.test.ts); fi
TEST_DATABASE_URL="postgres://market@127.0.0.1:$port/postgres" npx hardhat test "${files[@]}"
