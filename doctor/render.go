package doctor

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("doctor: report as JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// busyHost is how busy (%) the CPUs may be while the doctor idles before the report
// says that something else is using them.
const busyHost = 50

// Render writes the report for a reader.
func Render(w io.Writer, r *Report) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	state := ""
	if r.Interrupted {
		state = ", interrupted"
	}
	p("polebench doctor: %s, %.1f s%s", r.Started.Format("2006-01-02 15:04:05 MST"), r.WallS, state)
	p("")

	h := r.Host
	cores := fmt.Sprintf("%d (GOMAXPROCS %d)", h.Cores, h.GOMAXPROCS)
	for _, s := range []string{h.CPU, h.Kernel} {
		if s != "" {
			cores += ", " + s
		}
	}
	if !h.Root {
		cores += ", not root"
	}
	p("%-13s%s", "cores", cores)

	c := r.Clock
	if c.Error != "" {
		p("%-13s%s: %s; time.Now %.0f ns", "clock source", Unchecked, c.Error, c.NowNS)
	} else {
		avail := ""
		if len(c.Available) > 0 {
			avail = " (available: " + strings.Join(c.Available, " ") + ")"
		}
		p("%-13s%s%s: %s; time.Now %.0f ns", "clock source", c.Source, avail, c.Note, c.NowNS)
	}

	if id := r.Idle; id != nil {
		p("%-13s%.1f s of 1 ms sleeps, late by p50 %.2f, p99 %.2f, max %.2f ms; %d stalls over 1 ms, %d over 5 ms%s",
			"idle hiccups", id.Seconds, id.P50MS, id.P99MS, id.MaxMS, id.Stalls, id.LongStalls, cpu(id.CPUBusyPct, id.CPUSomePct))
		if id.CPUBusyPct != nil && *id.CPUBusyPct >= busyHost {
			p("%-13sthe CPUs were %.0f %% busy with nothing of polebench running: what follows measures the other processes too", "", *id.CPUBusyPct)
		}
	}
	if lb := r.Loopback; lb != nil {
		p("%-13sTCP ping-pong of %d B on 127.0.0.1: median %.0f µs, p99 %.0f µs, min %.0f µs (%d round trips)",
			"loopback RTT", lb.Bytes, lb.MedianUS, lb.P99US, lb.MinUS, lb.RoundTrips)
	}
	if r.Netem.Status != "" {
		p("%-13s%s: %s", "kernel netem", r.Netem.Status, r.Netem.Detail)
	}
	p("%-13s%s", "docker", dockerLine(r.Docker))
	p("%-13s%s", "swarm", swarmLine(r.Docker))
	p("%-13s%s", "java", javaLine(r.Java))
	for _, f := range r.Flavors {
		p("%-13s%s", f.Flavor, cmp.Or(f.Version, Unchecked+": "+f.Detail))
	}
	if len(r.Backends) > 0 {
		var yes []string
		for _, be := range r.Backends {
			if be.Runs {
				yes = append(yes, be.Target)
			}
		}
		p("%-13srun here: %s", "backends", orNone(yes))
		for _, be := range r.Backends {
			if !be.Runs {
				p("%-13snot %s: %s", "", be.Target, be.Why)
			}
		}
	}

	if cal := r.Calibration; cal != nil {
		p("")
		zk := ""
		if hasFlavor(cal.Points, "zookeeper") {
			zk = fmt.Sprintf(", ZooKeeper's JIT warmed %gs first", cal.ZooKeeperWarmUpS)
		}
		p("calibration: %s without a crash, %gs runs (the first %gs not measured), beside the simulator%s",
			cal.Spec, cal.DurationS, cal.WarmupS, zk)
		if len(cal.Points) > 0 {
			renderPoints(&b, cal.Points)
		}
		if cal.Dir != "" {
			p("runs in %s", cal.Dir)
		}
	}

	if len(r.Emulates) > 0 {
		p("")
		p("what this host emulates faithfully: per DC the mean above the simulator's (above the model's) at the spec's rate")
		p("(the ladder's first rung), and the highest rate at which the host's verdict (docs/host.md) stayed trusted")
		for _, e := range r.Emulates {
			p("  %-16s %s", e.Target, emulationLine(e, r.Calibration))
		}
	}

	if len(r.Unchecked) > 0 {
		p("")
		for _, u := range r.Unchecked {
			p("could not check: %s", u)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cpu(busy, some *float64) string {
	var s []string
	if busy != nil {
		s = append(s, fmt.Sprintf("CPU %.0f %% busy", *busy))
	}
	if some != nil {
		s = append(s, fmt.Sprintf("%.0f %% pressure", *some))
	}
	if len(s) == 0 {
		return ""
	}
	return "; " + strings.Join(s, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func dockerLine(d Docker) string {
	if !d.Reachable {
		return Unchecked + ": " + d.Detail
	}
	s := "engine " + d.Version + " at " + d.Host
	if d.Detail != "" {
		s += "; " + d.Detail
	}
	return s
}

func swarmLine(d Docker) string {
	switch {
	case !d.Reachable:
		return Unchecked + ": no Docker engine to ask"
	case d.Manager:
		return fmt.Sprintf("active, this engine a manager, %d nodes", d.Nodes)
	case d.Swarm == "active":
		return "active, but this engine is not a manager (point DOCKER_HOST at one)"
	}
	return d.Swarm + " (docker swarm init makes one)"
}

func javaLine(j Java) string {
	var s []string
	if j.Path != "" {
		s = append(s, cmp.Or(j.Version, "java")+" at "+j.Path)
	}
	if j.ZooKeeperVersion != "" {
		s = append(s, "ZooKeeper "+j.ZooKeeperVersion+" ("+j.ZooKeeperJar+")")
	}
	found := strings.Join(s, "; ")
	switch {
	case j.Ready:
		return found
	case found != "":
		return Unchecked + ": " + j.Detail + " (found: " + found + ")"
	}
	return Unchecked + ": " + j.Detail
}

func hasFlavor(pts []Point, flavor string) bool {
	for _, p := range pts {
		if strings.HasSuffix(p.Target, "/"+flavor) {
			return true
		}
	}
	return false
}

// renderPoints is the calibration's table: a row per run and DC.
func renderPoints(b *strings.Builder, pts []Point) {
	fmt.Fprintf(b, "%-16s %-13s %-3s %8s %8s %8s %8s %9s  %s\n", "run", "rate", "DC", "mean", "p99", "sim", "model", "over sim", "host")
	for _, p := range pts {
		rate := fmt.Sprintf("%g (%gx)", p.Rate, p.Multiple)
		host := hostCell(p)
		if len(p.DCs) == 0 {
			fmt.Fprintf(b, "%-16s %-13s %s\n", p.Target, rate, host)
			continue
		}
		for i, dc := range p.DCs {
			target, r, h := p.Target, rate, host
			if i > 0 {
				target, r, h = "", "", ""
			}
			over := "-"
			if dc.SimMS != nil {
				over = fmt.Sprintf("%+.1f", dc.MeanMS-*dc.SimMS)
			}
			fmt.Fprintf(b, "%-16s %-13s %-3s %8.1f %8.1f %8s %8s %9s  %s\n", target, r, dc.Name, dc.MeanMS, dc.P99MS, opt(dc.SimMS), opt(dc.ModelMS), over, h)
		}
	}
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// hostCell is the run's verdict with what it rests on, or its error.
func hostCell(p Point) string {
	var s string
	switch {
	case p.Target == "sim":
		s = "(no host: virtual time)"
	case p.Verdict != "":
		s = fmt.Sprintf("%s: the host moved %s; longest stall %.1f ms; send lag p99 %.1f ms", p.Verdict, cmp.Or(p.Moved, "nothing measured"), p.StallMaxMS, p.SendLagP99MS)
	}
	if p.Error != "" {
		if s != "" {
			s += "; "
		}
		s += "error: " + p.Error
	}
	return s
}

// emulationLine says, for one target, the overhead at the spec's rate and how far up
// the verdict stayed trusted.
func emulationLine(e Emulation, cal *Calibration) string {
	if !e.Calibrated {
		s := "not calibrated"
		if e.NotCalibratedWhy != "" {
			s += ": " + e.NotCalibratedWhy
		} else if e.Stop != "" {
			s += ": " + e.Stop
		}
		return s
	}
	var over []string
	for _, o := range e.Overhead {
		s := o.DC + " "
		if o.OverSimMS != nil {
			s += fmt.Sprintf("%+.1f ms", *o.OverSimMS)
		} else {
			s += "(no simulator)"
		}
		if o.OverModelMS != nil {
			s += fmt.Sprintf(" (%+.1f)", *o.OverModelMS)
		}
		over = append(over, s)
	}
	line := fmt.Sprintf("at %g req/s %s", e.OverheadAt, strings.Join(over, ", "))
	switch {
	case e.TrustedUpTo == 0:
		line += "; not trusted even at the first rung"
		if cal != nil && e.OverheadAt == cal.BaseRate {
			line += ", the spec's rate"
		}
		if e.Stop != "" {
			line += ": " + e.Stop
		}
		return line
	case e.HighestRungTried:
		line += fmt.Sprintf("; trusted up to %g req/s (%gx), the top of the ladder: the limit lies higher", e.TrustedUpTo, e.TrustedMultiple)
	default:
		line += fmt.Sprintf("; trusted up to %g req/s (%gx)", e.TrustedUpTo, e.TrustedMultiple)
		if e.Stop != "" {
			line += "; " + e.Stop
		}
	}
	return line
}
