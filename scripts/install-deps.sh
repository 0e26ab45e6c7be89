#!/usr/bin/env bash
# Installs the Debian packages the tests need (run by `make deps`, hence by `make ci`).
# Every test that needs one of these fails, not skips, when CI is set and it is missing.
# The names are Debian bookworm's: the GitHub workflows run in that image (a Go test,
# cmd/polebench's TestWorkflowsRunInTheDistribution, keeps the two agreeing).
set -euo pipefail
distribution=debian codename=bookworm
. /etc/os-release
if [ "${ID:-}" != "$distribution" ] || [ "${VERSION_CODENAME:-}" != "$codename" ]; then
	echo "install-deps.sh: these are $distribution $codename's package names; this is ${PRETTY_NAME:-an unknown system} (/etc/os-release)" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# The VM tests boot the cloud kernel with an initramfs of their own; under CI (a
# container or a machine that never boots it) the kernel package need not build one
# (update-initramfs took 4m38s, 12 CPU-s, here on a loaded day).
if [ -n "${CI:-}" ]; then export INITRD=No; fi
packages=(
	make git ca-certificates
	iproute2                                  # tc's distribution tables (netem tests)
	zookeeper                                 # real ZooKeeper and zkCli.sh (workload, zkserver tests)
	python3-kazoo python3-pytest python3-mock python3-objgraph python3-pure-sasl # kazoo's own test suite, run against ZooKeeper and poled (zkcompat)
	etcd-server                               # real etcd 3.4 (the etcd flavor: cluster/etcd)
	qemu-system-x86 linux-image-cloud-amd64   # the VM test of the kernel netem applier
	busybox-static xz-utils cpio              # the VM's initramfs
	docker.io                                 # the engine (scripts/docker-engine.sh starts it where none runs) and a swarm's second dockerd
	docker-compose                            # checks docker-compose.yml
	docker-registry                           # the swarm backend's registry path (started by its test only)
	chromium fonts-dejavu-core                # renders report.html as a reader sees it (campaign tests)
	valgrind                                  # callgrind: the simulator's instructions (callgrind tests, nightly)
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
