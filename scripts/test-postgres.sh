#!/usr/bin/env bash
# Runs the test suites that use the server's database against PostgreSQL: a throwaway cluster on loopback (Debian's
# postgresql binaries), TEST_DATABASE_URL pointing at it (the harness makes a database per test from a migrated
# template), stopped and removed at the end. `.ci/run` runs it after `npm test`.
#   npm run test:postgres                  every such suite (DEVELOPERS.md, "PostgreSQL")
#   npm run test:postgres -- <test files>  those files only
# PG_PORT picks the cluster's port (default 54329): give each concurrent run its own.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ]; then echo "PostgreSQL server binaries not found (apt-get install postgresql)"; exit 2; fi

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  # Every suite under these folders, except those that never open the server's database through the harness: pure
  # logic, a scripted API, or SQLite itself (its write lock and write races).
  not_database=(
    test/cli/instructions-file.test.ts
    test/cli/journal.test.ts
    test/indexer/log-range.test.ts
    test/indexer/write-lock.test.ts
    test/sandbox/command.test.ts
    test/sdk/lifecycle.test.ts
    test/sdk/schedule.test.ts
    test/server/chain-clock.test.ts
    test/server/config.test.ts
    test/server/db.test.ts
    test/server/listing-codec.test.ts
    test/web/node-crypto.test.ts
  )
  mapfile -t files < <(find test/server test/indexer test/hosted test/sandbox test/mcp test/sdk test/cli test/web -name '*.test.ts' | sort | grep -vxF -f <(printf '%s\n' "${not_database[@]}"))
  files+=(test/sdk-smoke.test.ts)
fi

dir=$(mktemp -d /tmp/market-pg.XXXXXX)
port=${PG_PORT:-54329}
# The server refuses to run as root: as root (CI), the cluster belongs to nobody.
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R nobody "$dir"; su nobody -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
as_pg "$bin/initdb -D $dir/data -U market --auth=trust >/dev/null"
# Durability is not what a throwaway cluster is for: no fsync, more connections for the worker threads and processes.
as_pg "$bin/pg_ctl -D $dir/data -l $dir/log -o '-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200' -w start >/dev/null"
trap 'as_pg "$bin/pg_ctl -D $dir/data -m fast stop >/dev/null" || true; rm -rf "$dir"' EXIT

started=$SECONDS
TEST_DATABASE_URL="postgres://market@127.0.0.1:$port/postgres" npx hardhat test "${files[@]}"
echo "PostgreSQL pass: ${#files[@]} files in $((SECONDS - started)) s"
