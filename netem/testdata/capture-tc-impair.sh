#!/bin/sh
# How testdata/netem-impair-*.tc.hex were captured, as capture-tc.sh does for delay:
# the netlink messages iproute2's tc sends for netem leaves with loss (random with
# correlation, Gilbert-Elliott, 4-state), duplicate, reorder with gap, a 64-bit rate
# and a change that resets what the kernel would keep, recorded with strace. tc is iproute2 v7.1.0-55-gee2a4a86 (2026-06-28) built
# from source (make SUBDIRS="lib tc"). The kernel may lack sch_netem: tc fails, but
# the request is already on the wire. Run as root from netem/testdata with TC=path/to/tc.
set -e
TC=${TC:-./tc}
export TC_LIB_DIR=${TC_LIB_DIR:-/usr/lib/x86_64-linux-gnu/tc}
ip netns add cap
ip -n cap link add v0 type veth peer name v1
ip -n cap link set v0 up
$TC -n cap qdisc add dev v0 root handle 9e: htb default 1
$TC -n cap class add dev v0 parent 9e: classid 9e:10 htb rate 10gbit
capture() { # name, netem options...
	name=$1
	shift
	ip netns exec cap strace -e trace=sendmsg -e write=3 -o "$name.strace" $TC qdisc replace dev v0 \
		parent 9e:10 handle a0: netem "$@" || true
	# the last sendmsg is the request; keep its hex dump, drop the 16-byte nlmsghdr
	# (the hex bytes sit in columns 11-59 of strace's dump lines)
	awk '/^sendmsg/ {buf = ""} /^ [|] [0-9a-f]+  / {h = substr($0, 11, 49); gsub(/ /, "", h); buf = buf h} END {print buf}' \
		"$name.strace" | cut -c33- | fold -w 64 >"$name.tc.hex"
	rm "$name.strace"
}
capture netem-impair-loss-corr limit 1000 delay 20ms 400us 25% distribution pareto loss random 1% 30% seed 42
capture netem-impair-gemodel limit 1000 delay 10ms loss gemodel 1% 10% 70% 0.1% seed 1
capture netem-impair-state limit 1000 delay 10ms loss state 1% 30% 2% 40% 0.5% seed 2
capture netem-impair-dup-reorder limit 1000 delay 10ms 1ms duplicate 2% reorder 5% 50% gap 3 seed 9
capture netem-impair-rate64 limit 20000 delay 5ms rate 40gbit seed 3
capture netem-impair-rate-queue limit 250 delay 30ms rate 1gbit loss 0.1% seed 4
# A schedule's change sends the zero correlation, reorder and rate too (Reset): tc
# sends the same for explicit zeros.
capture netem-impair-reset limit 1000 delay 10ms reorder 0% 0% rate 0bit seed 5
ip netns del cap
