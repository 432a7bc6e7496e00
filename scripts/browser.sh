#!/usr/bin/env bash
# Debian's Chromium for assay's browser tests (Playwright drives it through executable_path;
# Playwright's own browser download is never used).
#
#   scripts/browser.sh          install chromium from Debian packages if it is missing, then
#                               print the path of the executable
#
# Installing needs root (apt-get); a machine that has /usr/bin/chromium already needs nothing.
set -euo pipefail

CHROMIUM="${ASSAY_CHROMIUM:-/usr/bin/chromium}"
log() { echo "browser.sh: $*" >&2; }

if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "Chromium is not installed at $CHROMIUM and installing it needs root: apt-get install -y chromium"
    exit 1
  fi
  log "installing Chromium from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
  if [ ! -x "$CHROMIUM" ]; then
    log "apt-get installed chromium but $CHROMIUM is not there"
    exit 1
  fi
fi
echo "$CHROMIUM"
