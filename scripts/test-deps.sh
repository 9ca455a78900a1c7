#!/usr/bin/env bash
# System packages the tests use (headless Chromium for the report test). Best effort:
# the report test skips loudly if Chromium is still missing afterwards.
set -u
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "warning: could not install chromium; the browser test will be skipped" >&2
  else
    echo "warning: chromium not found and cannot be installed (not root); the browser test will be skipped" >&2
  fi
fi
exit 0
