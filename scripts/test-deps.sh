#!/usr/bin/env bash
# System packages the tests use: headless Chromium for the report's browser test
# (tests/report/test_browser.py). Best effort: that test skips, loudly, if Chromium is
# still missing afterwards. Set CRSBENCH_CHROMIUM=/path/to/chrome to use another binary.
set -u
have_chromium() {
  if [ -n "${CRSBENCH_CHROMIUM:-}" ]; then [ -x "$CRSBENCH_CHROMIUM" ]; return; fi
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || command -v google-chrome >/dev/null 2>&1 || command -v google-chrome-stable >/dev/null 2>&1
}
if ! have_chromium; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (Debian package) for the report browser test..." >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "warning: could not install chromium; the browser test will be skipped" >&2
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium with sudo for the report browser test..." >&2
    (sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "warning: could not install chromium; the browser test will be skipped" >&2
  else
    echo "warning: chromium not found and cannot be installed (not root, no apt-get); the browser test will be skipped" >&2
  fi
fi
if have_chromium; then
  echo "chromium: $( (${CRSBENCH_CHROMIUM:-chromium} --version || true) 2>/dev/null | tail -1)" >&2
fi
exit 0
