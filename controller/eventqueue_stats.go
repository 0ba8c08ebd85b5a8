package controller

// eventqueue_stats.go — what the internals view shows of kafka.controller.ControllerEventManager:
// the event being processed (and since when), the events waiting in the queue, and the last
// events processed with their queue and processing times, each with its ControllerState.
// The loop records them (begin/end); Controller.EventQueue reads them from any goroutine.

import (
	"fmt"
	"sync"
	"time"
)

// recentEvents is how many processed events the view keeps.
const recentEvents = 100

// stateNames are ControllerState's names (kafka.controller.ControllerState), by value.
var stateNames = map[controllerState]string{
	stateIdle: "Idle", stateControllerChange: "ControllerChange", stateBrokerChange: "BrokerChange",
	stateTopicChange: "TopicChange", stateTopicDeletion: "TopicDeletion",
	stateAlterPartitionReassignment: "AlterPartitionReassignment", stateAutoLeaderBalance: "AutoLeaderBalance",
	stateManualLeaderBalance: "ManualLeaderBalance", stateControlledShutdown: "ControlledShutdown",
	stateIsrChange: "IsrChange", stateLeaderAndIsrResponseReceived: "LeaderAndIsrResponseReceived",
	stateLogDirChange: "LogDirChange", stateControllerShutdown: "ControllerShutdown",
	stateUncleanLeaderElectionEnable:      "UncleanLeaderElectionEnable",
	stateTopicUncleanLeaderElectionEnable: "TopicUncleanLeaderElectionEnable",
	stateListPartitionReassignment:        "ListPartitionReassignment",
	stateUpdateMetadataResponseReceived:   "UpdateMetadataResponseReceived", stateUpdateFeatures: "UpdateFeatures",
}

func (s controllerState) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("ControllerState(%d)", int8(s))
}

// EventInfo is one controller event as the view shows it.
type EventInfo struct {
	Name  string `json:"name"`             // Kafka's ControllerEvent name
	Arg   string `json:"detail,omitempty"` // the event's argument (topic, broker, …), if any
	State string `json:"state"`            // ControllerState the event puts the controller in
	// Epoch is the controller epoch of the term that processed it (0 while queued).
	Epoch    int32     `json:"controller_epoch,omitempty"`
	Enqueued time.Time `json:"enqueued"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// QueueTimeMs is the wait in the queue (EventQueueTimeMs); while queued, the wait so far.
	QueueTimeMs float64 `json:"queue_time_ms"`
	// ProcessTimeMs is the processing time (the state's RateAndTimeMs timer); while
	// processing, the time so far.
	ProcessTimeMs float64 `json:"process_time_ms"`
	Error         string  `json:"error,omitempty"`
}

// EventQueueInfo is a snapshot of the controller's event manager.
type EventQueueInfo struct {
	BrokerID int32  `json:"broker_id"`
	Active   bool   `json:"active"`           // this broker is the active controller
	Epoch    int32  `json:"controller_epoch"` // of the current (or last) term here; 0 if none
	State    string `json:"controller_state"` // ControllerState now (Idle between events)
	// Processing is the event being processed now; nil when idle.
	Processing *EventInfo `json:"processing,omitempty"`
	// Queued are the events waiting, oldest first: those still in the queue and those the
	// loop has taken with the current batch but not yet processed.
	Queued []EventInfo `json:"queued"`
	// Recent are the last events processed, newest first (kept across terms).
	Recent    []EventInfo `json:"recent"`
	Processed uint64      `json:"processed_total"` // events processed on this broker since start
}

// eventTracker records the loop's progress for the view. Loop-side calls are cheap: a lock
// and a few stores per event.
type eventTracker struct {
	mu        sync.Mutex
	epoch     int32
	batch     []EventInfo // taken from the queue, not yet begun
	current   *EventInfo
	recent    []EventInfo // ring, oldest at next once full
	next      int
	processed uint64
}

func newEventTracker() *eventTracker { return &eventTracker{} }

func eventInfo(ev event, enqueued time.Time) EventInfo {
	return EventInfo{Name: ev.String(), Arg: eventArg(ev), State: stateOf(ev).String(), Enqueued: enqueued}
}

// eventArg is what Kafka's case-class toString would add to the name.
func eventArg(ev event) string {
	switch e := ev.(type) {
	case brokerModificationEvent:
		return fmt.Sprintf("broker %d", e.id)
	case partitionModificationsEvent:
		return "topic " + e.topic
	case topicUncleanLeaderElectionEnableEvent:
		return "topic " + e.topic
	case stopReplicaResponseEvent:
		return fmt.Sprintf("from broker %d", e.broker)
	case leaderAndIsrResponseEvent:
		return fmt.Sprintf("from broker %d", e.broker)
	case partitionReassignmentIsrChangeEvent:
		return fmt.Sprintf("%s-%d", e.tp.Topic, e.tp.Partition)
	case alterPartitionEvent:
		if e.req != nil {
			n := 0
			for _, t := range e.req.Topics {
				n += len(t.Partitions)
			}
			return fmt.Sprintf("from broker %d, %d partition(s)", e.req.BrokerID, n)
		}
	case controlledShutdownEvent:
		if e.req != nil {
			return fmt.Sprintf("broker %d", e.req.BrokerID)
		}
	}
	return ""
}

// term starts a term's records.
func (t *eventTracker) term(epoch int32) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.epoch, t.batch, t.current = epoch, nil, nil
	t.mu.Unlock()
}

// took records the batch the loop just took from the queue.
func (t *eventTracker) took(evs []event, enqueued []time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.batch = t.batch[:0]
	for i, ev := range evs {
		var at time.Time
		if i < len(enqueued) {
			at = enqueued[i]
		}
		t.batch = append(t.batch, eventInfo(ev, at))
	}
}

// begin marks the batch's next event as being processed.
func (t *eventTracker) begin(now time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.batch) == 0 {
		return
	}
	e := t.batch[0]
	t.batch = t.batch[1:]
	e.Epoch, e.Started = t.epoch, now
	if !e.Enqueued.IsZero() {
		e.QueueTimeMs = ms(now.Sub(e.Enqueued))
	}
	t.current = &e
}

// end marks the current event processed (err: its error, if any).
func (t *eventTracker) end(err error) {
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current == nil {
		return
	}
	e := *t.current
	t.current = nil
	e.Finished = now
	e.ProcessTimeMs = ms(now.Sub(e.Started))
	if err != nil {
		e.Error = err.Error()
	}
	if len(t.recent) < recentEvents {
		t.recent = append(t.recent, e)
	} else {
		t.recent[t.next] = e
		t.next = (t.next + 1) % recentEvents
	}
	t.processed++
}

// stopped drops what the ended term left queued (Kafka clears the queue on resignation).
func (t *eventTracker) stopped() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.batch, t.current = nil, nil
	t.mu.Unlock()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// EventQueue is a snapshot of the controller's event manager for the internals view.
func (c *Controller) EventQueue() EventQueueInfo {
	now := time.Now()
	info := EventQueueInfo{BrokerID: c.cfg.BrokerID, Active: c.IsActive(), Epoch: c.Epoch(), State: stateIdle.String(),
		Queued: []EventInfo{}, Recent: []EventInfo{}}
	c.mu.Lock()
	loop := c.mu.loop
	c.mu.Unlock()

	t := c.events
	if t == nil {
		t = newEventTracker()
	}
	t.mu.Lock()
	if t.current != nil {
		cur := *t.current
		cur.ProcessTimeMs = ms(now.Sub(cur.Started))
		info.Processing = &cur
		info.State = cur.State
	}
	info.Queued = append(info.Queued, t.batch...)
	for i := len(t.recent) - 1; i >= 0; i-- {
		info.Recent = append(info.Recent, t.recent[(t.next+i)%len(t.recent)])
	}
	info.Processed = t.processed
	t.mu.Unlock()

	if loop != nil {
		loop.queue.mu.Lock()
		for i, ev := range loop.queue.events {
			var at time.Time
			if i < len(loop.queue.enqueued) {
				at = loop.queue.enqueued[i]
			}
			info.Queued = append(info.Queued, eventInfo(ev, at))
		}
		loop.queue.mu.Unlock()
	}
	for i := range info.Queued {
		if !info.Queued[i].Enqueued.IsZero() {
			info.Queued[i].QueueTimeMs = ms(now.Sub(info.Queued[i].Enqueued))
		}
	}
	if !info.Active {
		info.Processing, info.State = nil, stateIdle.String()
	}
	return info
}
