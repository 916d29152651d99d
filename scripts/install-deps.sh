#!/usr/bin/env bash
# Installs every Debian package lagpilot builds, tests or benchmarks with.
# Idempotent: asks apt-get only for the packages that are not installed yet,
# and does nothing at all (no network) when everything is present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache clang
  librdkafka-dev libeigen3-dev libcpp-httplib-dev nlohmann-json3-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libspdlog-dev libfmt-dev
  kcat prometheus chromium wrk openssl python3-simpy python3-confluent-kafka time linux-perf
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
