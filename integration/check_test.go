package integration

import (
	"fmt"
	"testing"
	"time"
)

// errRecorder is a testing.TB that records Errorf calls (checkRecords uses only Helper and Errorf).
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Helper() {}
func (r *errRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckRecords shows the client tests' check fails on each kind of damage.
func TestCheckRecords(t *testing.T) {
	base := time.Now()
	sent := make([]record, 20)
	for i := range sent {
		sent[i] = testRecord("x", i, base)
		sent[i].Partition, sent[i].Offset = int32(i%2), int64(i/2)
	}
	clone := func() []record { return append([]record(nil), sent...) }
	cases := map[string]func([]record) []record{
		"lost":          func(g []record) []record { return g[:len(g)-1] },
		"duplicated":    func(g []record) []record { return append(g, g[3]) },
		"reordered":     func(g []record) []record { g[2], g[4] = g[4], g[2]; return g },
		"value":         func(g []record) []record { g[5].Value = []byte("x-999"); return g },
		"key":           func(g []record) []record { g[5].Key = []byte("other"); return g },
		"header":        func(g []record) []record { g[6].Headers = g[6].Headers[:1]; return g },
		"timestamp":     func(g []record) []record { g[7].Timestamp = g[7].Timestamp.Add(time.Millisecond); return g },
		"partition":     func(g []record) []record { g[8].Partition = 5; return g },
		"offset":        func(g []record) []record { g[9].Offset++; return g },
		"nothing wrong": func(g []record) []record { return g },
	}
	for name, damage := range cases {
		r := &errRecorder{}
		checkRecords(r, sent, damage(clone()))
		if name == "nothing wrong" {
			if len(r.errs) != 0 {
				t.Errorf("%s: checkRecords complained: %v", name, r.errs)
			}
		} else if len(r.errs) == 0 {
			t.Errorf("%s: checkRecords did not notice", name)
		}
	}
}
