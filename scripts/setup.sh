#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent: installs only what is
# missing, and runs `apt-get update` only when something is.
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang llvm libclang-rt-14-dev libbpf-dev bpftool
      libjansson-dev iproute2 python3 util-linux procps librsvg2-bin man-db groff-base)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -f /usr/local/cuda/include/nccl.h ] || [ ! -f /usr/local/cuda/include/cuda.h ]; then
  echo "setup: /usr/local/cuda/include/{cuda.h,nccl.h} not found; install the CUDA toolkit and NCCL headers" >&2
  exit 1
fi
