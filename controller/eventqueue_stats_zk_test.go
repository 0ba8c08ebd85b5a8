package controller

import (
	"testing"
	"time"
)

// TestEventQueueSnapshot: while the loop is held on one event, the snapshot shows it as
// processing and the events put behind it as queued, with their waits; once released, they
// are the newest processed events, with queue and processing times.
func TestEventQueueSnapshot(t *testing.T) {
	srv := sharedZK(t)
	zk := connectZK(t, srv.Connect(uniqueChroot("eventqueue")))
	if err := zk.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	c := newController(Config{BrokerID: 1, Log: testLog(t), DisableAutoLeaderRebalance: true}, zk, kclientDial)
	runController(t, c)
	waitFor(t, 10*time.Second, "active controller", c.IsActive)
	waitFor(t, 10*time.Second, "Startup processed", func() bool {
		q := c.EventQueue()
		return len(q.Recent) > 0 && q.Recent[len(q.Recent)-1].Name == "Startup"
	})
	c.mu.Lock()
	loop := c.mu.loop
	c.mu.Unlock()

	release := make(chan struct{})
	held := probeEvent{fn: func(*eventLoop) { <-release }, done: make(chan struct{})}
	loop.queue.put(held)
	waitFor(t, 10*time.Second, "the probe in process", func() bool {
		p := c.EventQueue().Processing
		return p != nil && p.Name == "Probe"
	})
	loop.queue.put(topicChangeEvent{})
	loop.queue.put(partitionModificationsEvent{topic: "t"})
	const hold = 20 * time.Millisecond
	time.Sleep(hold)

	q := c.EventQueue()
	if !q.Active || q.Epoch != 1 || q.Processing == nil || q.Processing.Started.IsZero() || q.Processing.ProcessTimeMs < float64(hold.Milliseconds()) {
		t.Errorf("while held: %+v processing %+v", q, q.Processing)
	}
	if len(q.Queued) != 2 || q.Queued[0].Name != "TopicChange" || q.Queued[0].State != "TopicChange" ||
		q.Queued[1].Name != "PartitionModifications" || q.Queued[1].Arg != "topic t" || q.Queued[1].QueueTimeMs < float64(hold.Milliseconds()) {
		t.Errorf("queued = %+v", q.Queued)
	}

	close(release)
	<-held.done
	waitFor(t, 10*time.Second, "the queue drained", func() bool {
		q := c.EventQueue()
		return q.Processing == nil && len(q.Queued) == 0 && len(q.Recent) >= 3 && q.Recent[0].Name == "PartitionModifications"
	})
	q = c.EventQueue()
	if q.Recent[1].Name != "TopicChange" || q.Recent[2].Name != "Probe" || q.State != "Idle" {
		t.Fatalf("recent = %+v", q.Recent[:3])
	}
	for _, e := range q.Recent[:2] {
		if e.QueueTimeMs < float64(hold.Milliseconds()) || e.Epoch != 1 || e.Finished.Before(e.Started) || e.Started.Before(e.Enqueued) {
			t.Errorf("processed after the hold: %+v", e)
		}
	}
	if p := q.Recent[2]; p.ProcessTimeMs < float64(hold.Milliseconds()) {
		t.Errorf("the held probe's processing time = %v ms, want at least %v", p.ProcessTimeMs, hold)
	}
}
