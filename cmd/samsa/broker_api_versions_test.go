package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestNodeAPIVersionsText(t *testing.T) {
	key := func(k, lo, hi int16) kmsg.ApiVersionsResponseApiKey {
		return kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: hi}
	}
	got := nodeAPIVersionsText([]kmsg.ApiVersionsResponseApiKey{key(1, 0, 20), key(0, 11, 12), key(3, 4, 4), key(99, 0, 2), key(52, 0, 0)})
	lines := strings.Split(got, "\n")
	if lines[0] != "(" || lines[len(lines)-1] != ")" {
		t.Fatalf("%q", got)
	}
	want := []string{
		"\tProduce(0): 11 to 12 [unusable: node too new],",
		"\tFetch(1): 0 to 20 [usable: 16],",
		"\tListOffsets(2): UNSUPPORTED,",
		"\tMetadata(3): 4 [usable: 4],",
	}
	for i, w := range want {
		if lines[1+i] != w {
			t.Errorf("line %d: %q, want %q", i+1, lines[1+i], w)
		}
	}
	// Vote(52) is no client API: printed when the broker lists it, never as UNSUPPORTED.
	for _, w := range []string{"\tVote(52): 0 [usable: 0],", "\tBeginQuorumEpoch(53)", "\tListClientMetricsResources(74): UNSUPPORTED,", "\tUNKNOWN(99): 0 to 2\n)"} {
		if strings.Contains(w, "BeginQuorum") {
			if strings.Contains(got, w) {
				t.Errorf("%q listed", w)
			}
			continue
		}
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
}

// Against live brokers: one block per broker, in id order, each API the broker lists with its
// range and the version a 3.7 Java client would use.
func TestBrokerAPIVersionsEndToEnd(t *testing.T) {
	t.Parallel()
	c := startToolBrokers(t, 2, 1)
	code, out, errb := runTool("broker-api-versions", "--bootstrap-server", c.addrs[1])
	if code != 0 || errb != "" {
		t.Fatalf("code %d\n%s\n%s", code, out, errb)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for id, addr := range c.addrs {
		fmt.Fprintf(&want, "%s (id: %d rack: null) -> %s\n", addr, id, nodeAPIVersionsText(resp.ApiKeys))
	}
	if out != want.String() {
		t.Fatalf("got\n%s\nwant\n%s", out, want.String())
	}
	for _, re := range []string{
		`(?m)^127\.0\.0\.1:\d+ \(id: 0 rack: null\) -> \($`,
		`(?m)^\tProduce\(0\): \d+ to 10 \[usable: 10\],$`,
		`(?m)^\tFetch\(1\): \d+ to \d+ \[usable: \d+\],$`,
		`(?m)^\tApiVersions\(18\): 0 to 3 \[usable: 3\],$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", re, out)
		}
	}
	code, out, errb = runTool("broker-api-versions", "--bootstrap-server", "127.0.0.1:1")
	if code != 1 || out != "" || errb != "Exception in thread \"main\" java.lang.RuntimeException: Request METADATA failed on brokers List(127.0.0.1:1 (id: -1 rack: null))\n" {
		t.Fatalf("unreachable: code %d %q %q", code, out, errb)
	}
}
