package main

import (
	"io"

	"github.com/polebench/polebench/doctor"
)

const doctorSummary = "Say what this host can emulate faithfully, in under 2 minutes: cores, clock source, idle hiccups, loopback RTT, kernel netem, Docker and swarm, Java and ZooKeeper, then two-dc on the local backend beside the simulator at rising rates until the host's verdict is no longer trusted"

func runDoctor(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", "[--json] [--calibrate B/F,...] [--budget D] [--duration D] [--warmup D] [--zookeeper-warmup D] [--out DIR] [--no-calibration] [-v]", doctorSummary, stderr)
	cfg := doctor.Flags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	ctx, stop := signalContext()
	defer stop()
	return doctor.Command(ctx, cfg, stdout, stderr)
}
