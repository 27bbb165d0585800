#!/usr/bin/env bash
# Makes sure `redis-server` is installed, for the sluice/redis test suites (each suite starts its own
# server on 127.0.0.1 and a free port; nothing here starts one). Idempotent; CI calls it from .ci/run.
# Debian/Ubuntu: installs the distribution's `redis-server` package (no service is started here).
# Opt out of the Redis suites instead with SLUICE_SKIP_REDIS=1 (the test run then says so loudly).
set -euo pipefail

if [ "${SLUICE_SKIP_REDIS:-}" = "1" ]; then
  echo "ensure-redis: SLUICE_SKIP_REDIS=1, not installing redis-server (the Redis suites will be skipped)"
  exit 0
fi

if command -v "${SLUICE_REDIS_SERVER:-redis-server}" >/dev/null 2>&1; then
  echo "ensure-redis: $("${SLUICE_REDIS_SERVER:-redis-server}" --version)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-redis: redis-server is missing and apt-get is not available; install Redis 6.2+ (or Valkey) yourself," >&2
  echo "ensure-redis: point SLUICE_REDIS_SERVER at its redis-server binary, or set SLUICE_SKIP_REDIS=1." >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

echo "ensure-redis: installing redis-server with apt-get"
# Keep the package's service from starting: the tests run their own servers.
export DEBIAN_FRONTEND=noninteractive RUNLEVEL=1
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null
# A package install may start a system-wide instance where an init system runs; the tests never use it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet redis-server 2>/dev/null; then
  $SUDO systemctl stop redis-server || true
fi
echo "ensure-redis: $(redis-server --version)"
