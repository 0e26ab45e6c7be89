// Package vmtest proves netem's kernel applier on a real kernel. The machines this
// project is built on lack sch_netem, so cmd/vmtest boots Debian's cloud kernel
// (whose sch_netem, sch_htb, cls_u32, veth and bridge are modules) in qemu with an
// initramfs this package writes: busybox, those modules in dependency order, an
// /init script, and the static guest program (./guest). The guest builds a shipped
// experiment's layout in network namespaces, applies the link plan with netem.Apply,
// pings every ordered pair, checks each mean RTT within 5 % of the plan and the
// jitter's Pareto shape, clears, and checks that nothing is left. Then it runs a real
// poled in every namespace (itself, as poled's main: uid 65534, CAP_NET_ADMIN only,
// link_mode kernel) that installs its own links, and checks the RTTs again, that a
// poled without CAP_NET_ADMIN falls back to user space, and that stopping them leaves
// every interface bare. Last, the impairments phase (guest/impair.go) holds kernel
// netem to the links' tolerances with UDP datagrams stamped in the guest: each
// direction's one-way delays against the plan's distribution (Kolmogorov-Smirnov,
// p > 0.01 over 10^4 datagrams, the VM's own path measured through a constant-delay
// leaf and convolved in), random loss within its 99 % binomial interval, a rate's
// throughput within 5 %, and a schedule played by netem.RunSchedule seen within 2 %
// of each new delay and one heartbeat of its instant, each with a negative control.
// /init prints PassMarker or FailMarker and powers off.
//
//	go run ./vmtest/cmd/vmtest            # from the module root
//
// Without a usable /dev/kvm, qemu emulates in software (tcg) on a virtual clock
// (-icount): the guest's timers then fire on time however loaded the host is, so
// what the guest measures is the kernel's doing, not the host scheduler's.
// Debian packages: qemu-system-x86 linux-image-cloud-amd64 busybox-static
// (xz-utils or zstd where modules are compressed).
package vmtest
