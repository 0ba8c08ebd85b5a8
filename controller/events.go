package controller

// This file mirrors kafka.controller.ControllerEventManager and the ControllerEvent types
// (Kafka 3.7): ZooKeeper watches, broker requests and timers only enqueue events; one
// goroutine (eventLoop.run) processes them in order and owns the controller's state.

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// event is one ControllerEvent. Its String is Kafka's event name, for logs.
type event interface{ String() string }

type (
	// startupEvent: this broker just won the election (Kafka: Startup + onControllerFailover).
	startupEvent struct{}
	// brokerChangeEvent: children of /brokers/ids changed.
	brokerChangeEvent struct{}
	// brokerModificationEvent: the data of /brokers/ids/<id> changed.
	brokerModificationEvent struct{ id int32 }
	// topicChangeEvent: children of /brokers/topics changed.
	topicChangeEvent struct{}
	// partitionModificationsEvent: the data of /brokers/topics/<topic> changed.
	partitionModificationsEvent struct{ topic string }
	// topicDeletionEvent: children of /admin/delete_topics changed.
	topicDeletionEvent struct{}
	// stopReplicaResponseEvent: a broker answered StopReplica(delete=true) for a topic deletion.
	stopReplicaResponseEvent struct {
		broker int32
		req    *kmsg.StopReplicaRequest
		resp   kmsg.Response
	}
	// controllerChangeEvent: /controller was created, changed or deleted.
	controllerChangeEvent struct{}
	// expireEvent: the ZooKeeper session expired (Kafka: Expire): resign at once.
	expireEvent struct{}
	// alterPartitionEvent: a leader's AlterPartition request; the answer goes to reply.
	alterPartitionEvent struct {
		req   *kmsg.AlterPartitionRequest
		reply chan *kmsg.AlterPartitionResponse
	}
	// probeEvent runs fn on the loop goroutine, in order with the other events (tests and
	// benchmarks read the controller context with it).
	probeEvent struct {
		fn   func(*eventLoop)
		done chan struct{}
	}
)

func (probeEvent) String() string { return "Probe" }

func (startupEvent) String() string                { return "Startup" }
func (brokerChangeEvent) String() string           { return "BrokerChange" }
func (brokerModificationEvent) String() string     { return "BrokerModifications" }
func (topicChangeEvent) String() string            { return "TopicChange" }
func (partitionModificationsEvent) String() string { return "PartitionModifications" }
func (topicDeletionEvent) String() string          { return "TopicDeletion" }
func (stopReplicaResponseEvent) String() string    { return "TopicDeletionStopReplicaResponseReceived" }
func (controllerChangeEvent) String() string       { return "ControllerChange" }
func (expireEvent) String() string                 { return "Expire" }
func (alterPartitionEvent) String() string         { return "AlterPartitionReceived" }

// eventQueue is an unbounded FIFO (Kafka's LinkedBlockingQueue): producers never block, so a
// ZooKeeper watch goroutine or a request handler cannot stall on a busy controller.
type eventQueue struct {
	mu     sync.Mutex
	events []event
	signal chan struct{} // cap 1: "queue may be non-empty"
	// enqueued[i] is when events[i] was put, for EventQueueTimeMs (metrics.go).
	enqueued []time.Time
}

func newEventQueue() *eventQueue { return &eventQueue{signal: make(chan struct{}, 1)} }

func (q *eventQueue) put(e event) {
	q.mu.Lock()
	q.events = append(q.events, e)
	q.enqueued = append(q.enqueued, time.Now())
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// take returns all queued events (nil if none).
func (q *eventQueue) take() []event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.events
	q.events, q.enqueued = nil, nil
	return evs
}
