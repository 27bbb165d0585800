#!/usr/bin/env bash
# Runs before `npm test` (the `pretest` script), so that the README's two commands work on a fresh
# machine: the browser step needs Debian's Chromium and the Redis suites need Debian's redis-server.
# Each check is quick and does nothing when the program is already there; otherwise it installs
# the Debian package with apt-get (root or sudo), saying so. SLUICE_SKIP_REDIS=1 opts out of Redis,
# loudly (see docs/redis.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-chromium.sh
bash scripts/ensure-redis.sh
