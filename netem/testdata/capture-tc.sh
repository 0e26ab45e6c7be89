#!/bin/sh
# How testdata/netem-*.tc.hex were captured: the netlink messages iproute2's tc
# (v6.18.0, built from source: Debian 12's tc 6.1 predates the 64-bit latency and
# seed attributes) sends for two netem leaves, recorded with strace. The kernel may
# lack sch_netem: tc fails, but the request is already on the wire. Each file holds
# the message after its 16-byte nlmsghdr (tcmsg onward), ifindex 3 = v0.
set -e
ip netns add cap
ip -n cap link add v0 type veth peer name v1
ip -n cap link set v0 up
tc -n cap qdisc add dev v0 root handle 9e: htb default 1
tc -n cap class add dev v0 parent 9e: classid 9e:10 htb rate 10gbit
export TC_LIB_DIR=/usr/lib/x86_64-linux-gnu/tc
ip netns exec cap strace -e trace=sendmsg -e write=3 -o cap1.txt ./tc qdisc replace dev v0 \
	parent 9e:10 handle a0: netem limit 1000 delay 38.53ms 770.6us distribution pareto seed 12345 || true
ip netns exec cap strace -e trace=sendmsg -e write=3 -o cap2.txt ./tc qdisc replace dev v0 \
	parent 9e:10 handle a0: netem limit 5000 delay 5ms 100us loss 0.5% rate 100mbit seed 7 || true
ip netns del cap
# then: keep the " | 00000  84 00 ..." hex dump lines, drop the first 16 bytes, 32 bytes per line.
