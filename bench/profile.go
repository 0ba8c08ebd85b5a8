package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchStats is a kgo hook that counts the consumer's Fetch round trips: how many, how many
// bytes each response carried and how long the client waited for the broker. It shows where
// a consume run's time goes without a profiler: a broker that answers slowly raises wait,
// one that answers with small responses raises the fetch count.
type fetchStats struct {
	fetches, bytes atomic.Int64
	wait, read     atomic.Int64 // nanoseconds: waiting for the first response byte, reading the rest
}

func (s *fetchStats) add(bytesRead int, wait, read time.Duration) {
	s.fetches.Add(1)
	s.bytes.Add(int64(bytesRead))
	s.wait.Add(int64(wait))
	s.read.Add(int64(read))
}

func (s *fetchStats) String() string {
	n := s.fetches.Load()
	if n == 0 {
		return "no fetches"
	}
	return fmt.Sprintf("%d fetches, %.0f KiB/fetch, broker wait %.0f µs/fetch, read %.0f µs/fetch", n,
		float64(s.bytes.Load())/float64(n)/1024, float64(s.wait.Load())/float64(n)/1e3, float64(s.read.Load())/float64(n)/1e3)
}

// profiler writes CPU profiles of the bench process (the clients) and, for samsa, of the
// broker (its samsa.debug.listener) while one workload runs, in the first round only.
type profiler struct {
	dir     string
	seconds int // broker profile length: the broker's pprof handler needs it up front
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// start begins profiling workload w on target tname; the returned func ends it and waits
// for the broker profile.
func (p *profiler) start(ctx context.Context, tname, w string, debugAddrs []string) (func(), error) {
	base := filepath.Join(p.dir, unsafeName.ReplaceAllString(tname+"-"+w, "_"))
	f, err := os.Create(base + ".client.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	for i, addr := range debugAddrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("%s.broker%d.pprof", base, i+1)
			if err := fetchProfile(ctx, addr, p.seconds, path); err != nil {
				fmt.Fprintf(os.Stderr, "bench: broker profile %s: %v\n", path, err)
			}
		}()
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		wg.Wait()
		fmt.Fprintf(os.Stderr, "bench: profiles in %s.*.pprof\n", base)
	}, nil
}

func fetchProfile(ctx context.Context, addr string, seconds int, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// freeAddr is a loopback host:port nobody listens on yet.
func freeAddr() (string, error) {
	p, err := freePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(p)), nil
}

// OnBrokerE2E implements kgo.HookBrokerE2E for Fetch requests.
func (s *fetchStats) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key == 1 && e.Err() == nil {
		s.add(e.BytesRead, e.ReadWait, e.TimeToRead)
	}
}
