package topology

import (
	"maps"
	"strings"
	"testing"
)

func threeDC() Config {
	return Config{
		DCs: []DC{
			{Name: "D1", Endpoint: "caltech", Servers: []int{5, 4}},
			{Name: "D2", Endpoint: "slac", Servers: []int{2, 3}},
			{Name: "D3", Endpoint: "fnal", Servers: []int{1}},
		},
		IntraRTT: DefaultIntraRTT,
		Rates:    map[string]float64{"D1": 300, "D2": 600, "D3": 100},
	}
}

func TestRTTFromEndpoints(t *testing.T) {
	tp, err := New(threeDC())
	if err != nil {
		t.Fatal(err)
	}
	if tp.N() != 5 {
		t.Fatalf("N = %d", tp.N())
	}
	tests := []struct {
		a, b    int
		rtt, sd float64
		dcOfA   string
	}{
		{1, 1, 0, 0, "D3"},
		{4, 5, 0.1, 0, "D1"},
		{4, 2, 9.88, 0.10, "D1"},  // caltech-slac
		{2, 4, 9.88, 0.10, "D2"},  // symmetric
		{1, 3, 53.26, 0.14, "D3"}, // fnal-slac, reversed in Table 2
		{5, 1, 77.06, 0.26, "D1"},
		{0, 1, 0, 0, ""}, // unknown ids give zero values
		{1, 6, 0, 0, "D3"},
	}
	for _, tc := range tests {
		if got := tp.RTT(tc.a, tc.b); got != tc.rtt {
			t.Errorf("RTT(%d,%d) = %v, want %v", tc.a, tc.b, got, tc.rtt)
		}
		if got := tp.RTTSD(tc.a, tc.b); got != tc.sd {
			t.Errorf("RTTSD(%d,%d) = %v, want %v", tc.a, tc.b, got, tc.sd)
		}
		if got := tp.DC(tc.a); got != tc.dcOfA {
			t.Errorf("DC(%d) = %q, want %q", tc.a, got, tc.dcOfA)
		}
	}
	if d := tp.DCs(); d[0].Servers[0] != 4 || d[0].Endpoint != "caltech" {
		t.Errorf("DCs()[0] = %+v, want sorted servers and the endpoint", d[0])
	}
}

func TestExplicitLinkOverridesEndpoint(t *testing.T) {
	c := threeDC()
	c.Links = []Link{{A: "D3", B: "D1", RTT: 42, SD: 1}}
	c.DCs[2].Endpoint = "" // D3 has no endpoint: D2-D3 must be explicit too
	c.Links = append(c.Links, Link{A: "D2", B: "D3", RTT: 7})
	tp, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if tp.RTT(1, 4) != 42 || tp.RTTSD(4, 1) != 1 || tp.RTT(3, 1) != 7 || tp.RTT(2, 4) != 9.88 {
		t.Errorf("RTTs %v %v %v %v", tp.RTT(1, 4), tp.RTTSD(4, 1), tp.RTT(3, 1), tp.RTT(2, 4))
	}
}

func TestServerRates(t *testing.T) {
	tp, err := New(threeDC())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		live []int
		want map[int]float64
	}{
		{[]int{1, 2, 3, 4, 5}, map[int]float64{1: 100, 2: 300, 3: 300, 4: 150, 5: 150}},
		{[]int{1, 2, 3, 4}, map[int]float64{1: 100, 2: 300, 3: 300, 4: 300}},
		{[]int{2, 4, 4, 9}, map[int]float64{2: 600, 4: 300}}, // duplicates and unknown ids ignored; D3 has nobody
	}
	for _, tc := range tests {
		if got := tp.ServerRates(tc.live); !maps.Equal(got, tc.want) {
			t.Errorf("ServerRates(%v) = %v, want %v", tc.live, got, tc.want)
		}
	}
	if tp.LambdaT() != 1000 {
		t.Errorf("LambdaT = %v", tp.LambdaT())
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no DCs", func(c *Config) { c.DCs = nil }, "no data centers"},
		{"duplicate server", func(c *Config) { c.DCs[2].Servers = []int{1, 4} }, `server 4 is in data centers "D1" and "D3"`},
		{"gap in ids", func(c *Config) { c.DCs[2].Servers = []int{6} }, "exactly 1..5: 1 is missing"},
		{"duplicate DC", func(c *Config) { c.DCs[2].Name = "D1" }, `"D1" is defined twice`},
		{"unknown endpoint", func(c *Config) { c.DCs[0].Endpoint = "mars" }, `unknown endpoint "mars"`},
		{"pair not in table", func(c *Config) { c.DCs[1].Endpoint = "cern" }, "caltech-cern is not in Table 2"},
		{"missing endpoint", func(c *Config) { c.DCs[1].Endpoint = "" }, `no RTT between data centers "D1" and "D2"`},
		{"link to unknown DC", func(c *Config) { c.Links = []Link{{A: "D1", B: "D9", RTT: 1}} }, `unknown data center "D9"`},
		{"link inside a DC", func(c *Config) { c.Links = []Link{{A: "D1", B: "D1", RTT: 1}} }, "same data center"},
		{"negative link", func(c *Config) { c.Links = []Link{{A: "D1", B: "D2", RTT: -1}} }, "negative"},
		{"negative rate", func(c *Config) { c.Rates["D2"] = -5 }, `rate -5 for data center "D2" is negative`},
		{"rate for unknown DC", func(c *Config) { c.Rates["D7"] = 5 }, `unknown data center "D7"`},
		{"negative intra", func(c *Config) { c.IntraRTT = -0.1 }, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := threeDC()
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	want := []string{"caltech", "cern", "fnal", "slac", "tud"}
	if got := Endpoints(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Endpoints() = %v", got)
	}
	if m, sd, ok := EndpointRTT("cern", "slac"); !ok || m != 172.47 || sd != 0.69 {
		t.Errorf("cern-slac = %v %v %v", m, sd, ok)
	}
	if _, _, ok := EndpointRTT("tud", "fnal"); ok {
		t.Error("tud-fnal is not in Table 2")
	}
}
