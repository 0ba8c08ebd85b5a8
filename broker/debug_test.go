package broker

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestDebugServerServesPprof(t *testing.T) {
	log, _ := newTestLogger(t)
	d, err := startDebugServer("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.Addr()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap?debug=1"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(b) == 0 {
			t.Fatalf("%s: %s, %d bytes", path, resp.Status, len(b))
		}
		if path == "/debug/pprof/goroutine?debug=1" && !strings.Contains(string(b), "goroutine profile") {
			t.Fatalf("%s: %.200s", path, b)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	d.Close()
	if _, err := http.Get(base + "/debug/pprof/"); err == nil {
		t.Fatal("still serving after Close")
	}
}

// TestBrokerDebugListener: samsa.debug.listener is served while the broker runs and closed
// by Shutdown.
func TestBrokerDebugListener(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"samsa.debug.listener": "127.0.0.1:0"})
	addr := b.DebugAddr()
	if addr == "" {
		t.Fatal("no debug listener")
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	http.DefaultClient.CloseIdleConnections()
	b.Shutdown()
	if _, err := http.Get("http://" + addr + "/debug/pprof/cmdline"); err == nil {
		t.Fatal("debug listener still serving after Shutdown")
	}
}
