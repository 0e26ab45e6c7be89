#!/usr/bin/env bash
# Installs the Debian packages the tests need (run by `make deps`, hence by `make ci`).
# Every test that needs one of these fails, not skips, when CI is set and it is missing.
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
packages=(
	make git ca-certificates
	iproute2                                  # tc's distribution tables (netem tests)
	zookeeper                                 # real ZooKeeper and zkCli.sh (workload, zkserver tests)
	python3-kazoo python3-pytest python3-mock python3-objgraph # kazoo's own test suite, run against ZooKeeper and poled (zkcompat)
	qemu-system-x86 linux-image-cloud-amd64   # the VM test of the kernel netem applier
	busybox-static xz-utils cpio              # the VM's initramfs
	docker-compose                            # checks docker-compose.yml (the engine must run already)
	docker-registry                           # the swarm backend's registry path (started by its test only)
	chromium fonts-dejavu-core                # renders report.html as a reader sees it (campaign tests)
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
