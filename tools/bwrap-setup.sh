#!/bin/sh
# Sets up the plan sandbox's tool (`make system-deps`): installs bubblewrap, and on Ubuntu 23.10+ (GitHub's
# ubuntu-24.04 runners), where AppArmor stops unprivileged programs from creating user namespaces, loads the narrow
# profile Ubuntu suggests that lets /usr/bin/bwrap, and nothing else, create them. Needs root or passwordless sudo;
# otherwise it says what to run. The bot fails closed (plans nothing) while bwrap does not work.
set -eu
if [ "$(id -u)" = 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"
else SUDO="none"; fi
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$SUDO" = none ]; then echo "bubblewrap missing (the plan sandbox): run 'sudo apt-get install bubblewrap'"; exit 0; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
if bwrap --unshare-all --die-with-parent --ro-bind / / true 2>/dev/null; then exit 0; fi
restricted=$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)
if [ "$restricted" = 1 ] && [ -e /etc/apparmor.d/abi/4.0 ] && [ "$SUDO" != none ]; then
  printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' \
    'profile bwrap /usr/bin/bwrap flags=(unconfined) {' '  userns,' '  include if exists <local/bwrap>' '}' \
    | $SUDO tee /etc/apparmor.d/bwrap >/dev/null
  $SUDO apparmor_parser -r /etc/apparmor.d/bwrap
fi
bwrap --unshare-all --die-with-parent --ro-bind / / true || echo "bwrap cannot create namespaces here: the bot will not plan PR code (see README, Security)"
