#!/usr/bin/env bash
# Headless Chromium and a CJK font (for readable screenshots of ja/zh text) for tests/web/test_browser.py,
# from Debian's packages, when they are missing: as root, or through password-less sudo. When they cannot be
# installed this says why in one line and exits 0: the browser tests then skip, naming the reason.
set -uo pipefail
if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "wqy\|cjk"; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium is missing and there is no apt-get to install it: the browser tests will be skipped" >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "chromium is missing and installing it needs root (no password-less sudo): the browser tests will be skipped" >&2
  exit 0
fi
echo "installing chromium and a CJK font for the browser tests (apt-get)"
if ! { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null; }; then
  echo "apt-get could not install chromium: the browser tests will be skipped" >&2
fi
exit 0
