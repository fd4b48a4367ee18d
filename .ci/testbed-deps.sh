#!/usr/bin/env bash
# Installs what remote/testbed needs to boot test hosts: debootstrap builds
# the image, systemd-nspawn (systemd-container) boots it, iproute2 makes the
# network namespaces, and the OpenSSH client is what the tests log in with.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq \
  debootstrap debian-archive-keyring systemd-container openssh-client openssh-server iproute2 >/dev/null
