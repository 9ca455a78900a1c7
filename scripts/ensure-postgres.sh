#!/usr/bin/env bash
# The team-warehouse tests start a real PostgreSQL server (tests/support/postgres_support.py) from the
# distribution's package. Install it when missing (Debian/Ubuntu: apt-get, as root or through sudo);
# the server is only ever started by the tests, as an unprivileged user, on a private Unix socket.
set -euo pipefail
found() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; }
if found; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL is missing and this is not a Debian/Ubuntu system: install the PostgreSQL server (initdb, pg_ctl) and rerun" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "PostgreSQL is missing: run 'apt-get install postgresql' as root and rerun" >&2; exit 1; }
  as_root=(sudo)
fi
echo "installing PostgreSQL (apt-get install postgresql) for the team-warehouse tests" >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >/dev/null \
  || { "${as_root[@]}" apt-get update -q >/dev/null && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >/dev/null; }
# The Debian package starts a cluster of its own; the tests start theirs, so stop it.
"${as_root[@]}" service postgresql stop >/dev/null 2>&1 || true
found || { echo "PostgreSQL still missing after apt-get install postgresql" >&2; exit 1; }
