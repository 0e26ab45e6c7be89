package campaign

import (
	"fmt"
	"strconv"
	"strings"
)

// Figures speak words, never metric keys: "mean latency after the crash, D3 (ms)", not
// latency_ms.after.D3.mean.

// latencyKey splits latency_ms.<window>.<dc>.<stat>.
func latencyKey(metric string) (window, dc, stat string, ok bool) {
	f := strings.Split(metric, ".")
	if len(f) != 4 || f[0] != "latency_ms" {
		return "", "", "", false
	}
	return f[1], f[2], f[3], true
}

var statWords = map[string]string{"mean": "mean", "p50": "median", "p99": "99th percentile", "max": "maximum", "model_ms": "model's",
	"count": "count of", "failed": "failed", "unknown": "unknown-outcome"}

var windowWords = map[string]string{"before": "before the crash", "after": "after the crash",
	"placed": "after placement", "final": "under the last leader"}

// dcWords names a DC key: "all data centers" for all.
func dcWords(dc string) string {
	if dc == "all" {
		return "all data centers"
	}
	return dc
}

// MetricLabel names a metric in words with its unit: "mean latency after the crash,
// D3 (ms)", "recovery time (ms)". A metric it does not know is spelled out from its key
// (dots and underscores become spaces, a _ms becomes "(ms)").
func MetricLabel(metric string) string {
	if w, dc, stat, ok := latencyKey(metric); ok {
		unit := " (ms)"
		if stat == "count" || stat == "failed" || stat == "unknown" {
			return fmt.Sprintf("%s requests %s, %s", statWord(stat), windowWord(w), dcWords(dc))
		}
		return fmt.Sprintf("%s latency %s, %s%s", statWord(stat), windowWord(w), dcWords(dc), unit)
	}
	switch metric {
	case "recovery_ms":
		return "recovery time (ms)"
	case "election_ms":
		return "election time (ms)"
	case NewLeader:
		return "new leader (server id)"
	case HostTrusted:
		return "share of runs the host's verdict trusted"
	}
	return spellOut(metric)
}

// metricShort is a metric's name without its unit, for titles.
func metricShort(metric string) string {
	l := MetricLabel(metric)
	return strings.TrimSuffix(l, " (ms)")
}

func statWord(s string) string {
	if w, ok := statWords[s]; ok {
		return w
	}
	return spellOut(s)
}

func windowWord(w string) string {
	if s, ok := windowWords[w]; ok {
		return s
	}
	return "in the " + spellOut(w) + " window"
}

func spellOut(key string) string {
	units := map[string]string{"_ms": "ms", "_mb": "MB", "_pct": "%", "_s": "s"}
	unit := ""
	var words []string
	for _, seg := range strings.Split(key, ".") {
		for suffix, u := range units {
			if strings.HasSuffix(seg, suffix) {
				seg, unit = strings.TrimSuffix(seg, suffix), u
			}
		}
		words = append(words, strings.ReplaceAll(seg, "_", " "))
	}
	out := strings.Join(words, " ")
	if unit != "" {
		out += " (" + unit + ")"
	}
	return out
}

// FieldLabel names a varied field as an axis: "snapshot size (MB)".
func FieldLabel(field string, values []string) string {
	switch field {
	case "p":
		return "skew p: share of the requests from the loaded data center"
	case "preload-mb":
		return "snapshot size: application state preloaded (MB)"
	case "oracle":
		return "oracle (leader it elected)"
	case "placement":
		return "placement policy (leader it placed)"
	case "rtt":
		if link, _, ok := rttValue(values); ok {
			return "RTT between " + strings.Replace(link, "-", " and ", 1) + " (ms)"
		}
		return "RTTs"
	case "duration", "crash-at", "warmup":
		return spellOut(field) + " (s)"
	}
	return strings.ReplaceAll(field, "-", " ")
}

// rttValue reads rtt values of one link, "D1-D2=10": the link and each RTT in ms.
func rttValue(values []string) (link string, ms []float64, ok bool) {
	for _, v := range values {
		l, num, found := strings.Cut(v, "=")
		if !found || strings.Contains(num, "=") || strings.Contains(num, ",") || (link != "" && l != link) {
			return "", nil, false
		}
		f, err := strconv.ParseFloat(strings.TrimSuffix(num, "ms"), 64)
		if err != nil {
			return "", nil, false
		}
		link = l
		ms = append(ms, f)
	}
	return link, ms, len(values) > 0
}

// numericX places a field's values on a numeric axis: the numbers themselves, or an
// rtt's milliseconds; false when they are categories (oracles).
func numericX(field string, values []string) (map[string]float64, bool) {
	pos := map[string]float64{}
	if field == "rtt" {
		if _, ms, ok := rttValue(values); ok {
			for i, v := range values {
				pos[v] = ms[i]
			}
			return pos, true
		}
	}
	for _, v := range values {
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "s"), 64)
		if err != nil {
			return nil, false
		}
		pos[v] = f
	}
	return pos, len(values) > 0
}

// valueLabel is a point's value of a field in words: "p = 0.5", "20 MB", "RTT 77.06 ms".
func valueLabel(field, v string) string {
	switch field {
	case "oracle":
		return v
	case "p":
		return "p = " + v
	case "preload-mb":
		return v + " MB"
	case "rtt":
		if _, ms, ok := rttValue([]string{v}); ok {
			return "RTT " + strconv.FormatFloat(ms[0], 'f', -1, 64) + " ms"
		}
	}
	return field + " = " + v
}
