#!/usr/bin/env bash
# Starts a Docker engine when none answers (run by `make engine`, hence by `make ci`).
# The machines this project is built on start one before a session; the GitHub
# workflows run in a privileged Debian container (see .github/workflows/ci.yml for why),
# where the engine must be this container's own: the docker backend reaches its
# containers' addresses and /proc/PID/ns/net, which another network and PID namespace
# (the runner's engine behind a mounted socket) would hide.
set -euo pipefail
if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
	exit 0
fi
command -v dockerd >/dev/null || { echo "docker-engine.sh: no dockerd (make deps installs docker.io)" >&2; exit 1; }
# On cgroup v2 a container's root cgroup holds its processes, and a cgroup with
# processes cannot hand controllers to the child cgroups dockerd makes for its
# containers: move them into a leaf first, then delegate every controller.
if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ ! -d /sys/fs/cgroup/engine-init ]; then
	mkdir /sys/fs/cgroup/engine-init
	while read -r pid; do echo "$pid" >/sys/fs/cgroup/engine-init/cgroup.procs 2>/dev/null || true; done </sys/fs/cgroup/cgroup.procs
	sed -e 's/ / +/g' -e 's/^/+/' /sys/fs/cgroup/cgroup.controllers >/sys/fs/cgroup/cgroup.subtree_control
fi
log=/var/log/polebench-dockerd.log
nohup dockerd >"$log" 2>&1 &
for _ in $(seq 60); do
	if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
		echo "docker-engine.sh: dockerd $(docker version --format '{{.Server.Version}}') started"
		exit 0
	fi
	sleep 1
done
echo "docker-engine.sh: dockerd does not answer after 60 s; its log:" >&2
tail -20 "$log" >&2
exit 1
