package integration

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// restartRecords per round: small, the point is what survives.
const restartRecords = 20_000

// TestDataSurvivesRestart: a replication-factor-1 topic keeps every record across a restart
// of every broker, first after kill -9 (a crash: recovery of unflushed segments, old
// registrations left to expire), then after SIGTERM (clean shutdown).
func TestDataSurvivesRestart(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true})
	const topic = "survivor"
	createTopic(t, c, topic, testPartitions, 1, nil)

	sent := kgoProduce(t, c, topic, restartRecords, kgo.NoCompression(), false)
	checkRecords(t, sent, kgoConsume(t, c, topic, len(sent)))

	restartAll := func(how string, stop func(b *Broker) error, afterStop func()) {
		t.Helper()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(c.Brokers))
		for i, b := range c.Brokers {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = stop(b) }()
		}
		wg.Wait()
		stopped := time.Since(start)
		afterStop()
		for i, b := range c.Brokers {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = errors.Join(errs[i], b.start()) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		waitLeaders(t, c, topic, testPartitions)
		t.Logf("all brokers %s in %v, back with leaders in %v", how, stopped.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		checkRecords(t, sent, kgoConsume(t, c, topic, len(sent)))
	}
	// A crash leaves the sessions open: the registrations stay until they expire.
	restartAll("killed (SIGKILL)", func(b *Broker) error { b.kill(); return nil }, func() {
		if ids := c.ZKChildren("/brokers/ids"); len(ids) != len(c.Brokers) {
			t.Errorf("right after kill -9, /brokers/ids = %v; the sessions should still hold them", ids)
		}
	})

	more := kgoProduceFrom(t, c, topic, restartRecords, restartRecords, kgo.NoCompression(), false)
	sent = append(sent, more...)
	checkRecords(t, sent, kgoConsume(t, c, topic, len(sent)))

	// A clean shutdown closes the session: the registrations go at once.
	restartAll("stopped (SIGTERM)", func(b *Broker) error { return b.terminate(60 * time.Second) }, func() {
		if ids := c.ZKChildren("/brokers/ids"); len(ids) != 0 {
			t.Errorf("after clean shutdowns, /brokers/ids = %v, want none", ids)
		}
	})
}
