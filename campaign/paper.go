package campaign

// A number the paper reports (Becker, Junqueira, Serafini 2011; docs/paper-facts.md),
// placed where a shipped campaign measures the same thing: the campaign, the metric,
// and the point (series and x values; "" where the campaign does not vary them).
type paperNumber struct {
	Campaign, Metric string
	At               map[string]string // the point: varied field -> value
	Value            float64
	What             string // the setting, as the report's row names it
	Leader           string // whom the paper's number had leading ("p4", "p2/p3"; "": not said)
}

// paperNumbers are the evaluation's numbers (Sec. 4, Figs. 4b, 6, 7b). Figs. 7a, 7c,
// 8a and 8b give shapes, not numbers: their claims are in the campaigns' captions.
var paperNumbers = []paperNumber{
	{"fig4b", "latency_ms.before.all.mean", map[string]string{"oracle": "history"}, 10, "Fig. 4b: two DCs before the crash, mean", "p5"},
	{"fig4b", "latency_ms.after.all.mean", map[string]string{"oracle": "history"}, 30, "Fig. 4b: after the crash, history (p4)", "p4"},
	{"fig4b", "latency_ms.after.all.mean", map[string]string{"oracle": "rotating"}, 30, "Fig. 4b: after the crash, rotating (p1)", "p1"},
	// The paper's p4 came from consensus, which ties p2, p3 and p4 (theta_c 9.88 ms
	// each) and so is decided by measured jitter; history elects p4 every time.
	{"fig6", "latency_ms.after.D1.mean", map[string]string{"oracle": "history"}, 12, "Fig. 6: Dep. 1, p4 leads, D1", "p4"},
	{"fig6", "latency_ms.after.D2.mean", map[string]string{"oracle": "history"}, 22, "Fig. 6: Dep. 1, p4 leads, D2", "p4"},
	{"fig6", "latency_ms.after.D3.mean", map[string]string{"oracle": "history"}, 92, "Fig. 6: Dep. 1, p4 leads, D3", "p4"},
	{"fig6", "latency_ms.after.all.mean", map[string]string{"oracle": "history"}, 42, "Fig. 6: Dep. 1, p4 (consensus in the paper) mean", "p4"},
	{"fig6", "latency_ms.after.all.mean", map[string]string{"oracle": "worst-case"}, 33, "Fig. 6: Dep. 1, worst-case (p3) mean", "p3"},
	{"fig7b-dep1", "latency_ms.after.all.mean", map[string]string{"oracle": "rotating", "p": "0"}, 125.8, "Fig. 7b: Dep. 1, p = 0, rotating", "p1"},
	{"fig7b-dep1", "latency_ms.after.all.mean", map[string]string{"oracle": "latency", "p": "0"}, 16.5, "Fig. 7b: Dep. 1, p = 0, latency", ""},
	{"fig7b-dep1", "latency_ms.after.all.mean", map[string]string{"oracle": "worst-case", "p": "1"}, 66.6, "Fig. 7b: Dep. 1, p = 1, worst-case", "p3"},
	{"fig7b-dep1", "latency_ms.after.all.mean", map[string]string{"oracle": "latency", "p": "1"}, 57.4, "Fig. 7b: Dep. 1, p = 1, latency", "p1"},
	{"fig7b-dep3", "latency_ms.after.all.mean", map[string]string{"oracle": "consensus", "p": "1"}, 111.3, "Fig. 7b: Dep. 3, p = 1, consensus", "p4"},
	{"fig7b-dep3", "latency_ms.after.all.mean", map[string]string{"oracle": "latency", "p": "1"}, 57.4, "Fig. 7b: Dep. 3, p = 1, latency", "p2/p3"},
}

// PaperValue is the paper's number for a campaign's metric at a point (its varied
// fields' values), if it gives one.
func PaperValue(campaign, metric string, at map[string]string) (float64, string, bool) {
	for _, n := range paperNumbers {
		if n.Campaign != campaign || n.Metric != metric {
			continue
		}
		ok := true
		for f, v := range n.At {
			ok = ok && at[f] == v
		}
		if ok {
			return n.Value, n.What, true
		}
	}
	return 0, "", false
}
