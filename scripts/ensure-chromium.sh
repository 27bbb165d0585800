#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed for the browser test (scripts/test-browser.ts).
# CI starts from a fresh machine, so .ci/run calls this before `npm test`; it does nothing when
# /usr/bin/chromium already works. Needs root (or sudo) for apt-get.
set -euo pipefail

if /usr/bin/chromium --version >/dev/null 2>&1; then
  echo "ensure-chromium: $(/usr/bin/chromium --version 2>/dev/null)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "ensure-chromium: installing Debian's chromium with apt-get"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
echo "ensure-chromium: $(/usr/bin/chromium --version 2>/dev/null)"
