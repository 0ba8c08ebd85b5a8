package controller

// metrics.go — the controller's metrics (Kafka 3.7): kafka.controller KafkaController's
// gauges, ControllerEventManager's EventQueueSize and EventQueueTimeMs, and ControllerStats'
// per-state RateAndTimeMs timers and UncleanLeaderElectionsPerSec. Like
// KafkaController.updateMetrics, the counts are computed on the loop goroutine after each
// event (the context is the loop's alone) and read at scrape time; a broker that is not the
// active controller reports 0, as Kafka's do.

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/samsa-kafka/samsa/internal/metrics"
)

// controllerState is Kafka's ControllerState: the value of the ControllerState gauge.
type controllerState int8

// Kafka's ControllerState values (kafka.controller.ControllerState).
const (
	stateIdle                             controllerState = 0
	stateControllerChange                 controllerState = 1
	stateBrokerChange                     controllerState = 2
	stateTopicChange                      controllerState = 3
	stateTopicDeletion                    controllerState = 4
	stateAlterPartitionReassignment       controllerState = 5
	stateAutoLeaderBalance                controllerState = 6
	stateManualLeaderBalance              controllerState = 7
	stateControlledShutdown               controllerState = 8
	stateIsrChange                        controllerState = 9
	stateLeaderAndIsrResponseReceived     controllerState = 10
	stateLogDirChange                     controllerState = 11
	stateControllerShutdown               controllerState = 12
	stateUncleanLeaderElectionEnable      controllerState = 13
	stateTopicUncleanLeaderElectionEnable controllerState = 14
	stateListPartitionReassignment        controllerState = 15
	stateUpdateMetadataResponseReceived   controllerState = 16
	stateUpdateFeatures                   controllerState = 17
)

// rateAndTimeMetricNames are ControllerState.rateAndTimeMetricName: "<State>RateAndTimeMs",
// except BrokerChange (LeaderElectionRateAndTimeMs, its name before ControllerState existed)
// and AlterPartitionReassignment; Idle and UpdateMetadataResponseReceived have none.
var rateAndTimeMetricNames = map[controllerState]string{
	stateControllerChange:                 "ControllerChangeRateAndTimeMs",
	stateBrokerChange:                     "LeaderElectionRateAndTimeMs",
	stateTopicChange:                      "TopicChangeRateAndTimeMs",
	stateTopicDeletion:                    "TopicDeletionRateAndTimeMs",
	stateAlterPartitionReassignment:       "PartitionReassignmentRateAndTimeMs",
	stateAutoLeaderBalance:                "AutoLeaderBalanceRateAndTimeMs",
	stateManualLeaderBalance:              "ManualLeaderBalanceRateAndTimeMs",
	stateControlledShutdown:               "ControlledShutdownRateAndTimeMs",
	stateIsrChange:                        "IsrChangeRateAndTimeMs",
	stateLeaderAndIsrResponseReceived:     "LeaderAndIsrResponseReceivedRateAndTimeMs",
	stateLogDirChange:                     "LogDirChangeRateAndTimeMs",
	stateControllerShutdown:               "ControllerShutdownRateAndTimeMs",
	stateUncleanLeaderElectionEnable:      "UncleanLeaderElectionEnableRateAndTimeMs",
	stateTopicUncleanLeaderElectionEnable: "TopicUncleanLeaderElectionEnableRateAndTimeMs",
	stateListPartitionReassignment:        "ListPartitionReassignmentRateAndTimeMs",
	stateUpdateFeatures:                   "UpdateFeaturesRateAndTimeMs",
}

// stateOf is ControllerEvent.state for each of samsa's events.
func stateOf(ev event) controllerState {
	switch ev.(type) {
	case startupEvent, controllerChangeEvent, expireEvent:
		return stateControllerChange
	case brokerChangeEvent, brokerModificationEvent:
		return stateBrokerChange
	case topicChangeEvent, partitionModificationsEvent:
		return stateTopicChange
	case topicDeletionEvent, stopReplicaResponseEvent:
		return stateTopicDeletion
	case apiPartitionReassignmentEvent, zkPartitionReassignmentEvent, partitionReassignmentIsrChangeEvent:
		return stateAlterPartitionReassignment
	case listPartitionReassignmentsEvent:
		return stateListPartitionReassignment
	case autoPreferredReplicaLeaderElectionEvent:
		return stateAutoLeaderBalance
	case electLeadersEvent, zkPreferredReplicaElectionEvent:
		return stateManualLeaderBalance
	case controlledShutdownEvent:
		return stateControlledShutdown
	case alterPartitionEvent:
		return stateIsrChange
	case leaderAndIsrResponseEvent:
		return stateLeaderAndIsrResponseReceived
	case logDirEventNotificationEvent:
		return stateLogDirChange
	case uncleanLeaderElectionEnableEvent:
		return stateUncleanLeaderElectionEnable
	case topicUncleanLeaderElectionEnableEvent:
		return stateTopicUncleanLeaderElectionEnable
	}
	return stateIdle // probeEvent: samsa's own
}

// controllerMetrics holds what the loop updates; the gauges read it.
type controllerMetrics struct {
	state atomic.Int32 // the ControllerState of the event in process; Idle between events

	// KafkaController's @volatile counts, as of the last event processed.
	offlinePartitions, preferredImbalance, globalTopics, globalPartitions  atomic.Int64
	topicsToDelete, replicasToDelete, topicsIneligible, replicasIneligible atomic.Int64
	activeBrokers                                                          atomic.Int64

	queueTime *metrics.Histogram // ControllerEventManager EventQueueTimeMs
	timers    map[controllerState]*metrics.Histogram
	unclean   prometheus.Counter // ControllerStats UncleanLeaderElectionsPerSec

	// Loop goroutine only: whether an event ran since the counts were last computed, and when.
	dirty   bool
	updated time.Time
}

// RegisterMetrics registers the controller's metrics in reg. Call it before Run.
func (c *Controller) RegisterMetrics(reg *metrics.Registry) {
	m := &controllerMetrics{timers: map[controllerState]*metrics.Histogram{}}
	active := func(v *atomic.Int64) func() float64 {
		return func() float64 {
			if !c.IsActive() {
				return 0
			}
			return float64(v.Load())
		}
	}
	const kc = "KafkaController"
	reg.GaugeFunc("controller", kc, "ActiveControllerCount", "1 on the active controller, else 0", func() float64 {
		if c.IsActive() {
			return 1
		}
		return 0
	})
	reg.GaugeFunc("controller", kc, "OfflinePartitionsCount",
		"Partitions without a live leader (OfflinePartition state), topics being deleted excepted", active(&m.offlinePartitions))
	reg.GaugeFunc("controller", kc, "PreferredReplicaImbalanceCount",
		"Partitions whose leader is not their preferred (first assigned) replica", active(&m.preferredImbalance))
	reg.GaugeFunc("controller", kc, "GlobalTopicCount", "Topics in the cluster", active(&m.globalTopics))
	reg.GaugeFunc("controller", kc, "GlobalPartitionCount", "Partitions with a leadership state in the cluster", active(&m.globalPartitions))
	reg.GaugeFunc("controller", kc, "TopicsToDeleteCount", "Topics queued for deletion", active(&m.topicsToDelete))
	reg.GaugeFunc("controller", kc, "ReplicasToDeleteCount", "Replicas of topics queued for deletion not yet deleted", active(&m.replicasToDelete))
	reg.GaugeFunc("controller", kc, "TopicsIneligibleToDeleteCount",
		"Topics queued for deletion held back by an offline replica or a reassignment", active(&m.topicsIneligible))
	reg.GaugeFunc("controller", kc, "ReplicasIneligibleToDeleteCount",
		"Offline replicas of topics whose deletion is held back", active(&m.replicasIneligible))
	reg.GaugeFunc("controller", kc, "ActiveBrokerCount", "Registered brokers (live or shutting down)", active(&m.activeBrokers))
	reg.GaugeFunc("controller", kc, "FencedBrokerCount", "Always 0 in ZooKeeper mode, as in Kafka", func() float64 { return 0 })
	reg.GaugeFunc("controller", kc, "ZkMigrationState", "Always 0 (ZK): samsa has no KRaft migration", func() float64 { return 0 })
	reg.GaugeFunc("controller", kc, "ControllerState",
		"ControllerState id of the event being processed (Idle=0, ControllerChange=1, BrokerChange=2, ...)", func() float64 {
			if !c.IsActive() {
				return 0
			}
			return float64(m.state.Load())
		})

	const em = "ControllerEventManager"
	reg.GaugeFunc("controller", em, "EventQueueSize", "Controller events queued, not yet processed", func() float64 {
		c.mu.Lock()
		loop := c.mu.loop
		c.mu.Unlock()
		if loop == nil {
			return 0
		}
		return float64(loop.queue.size())
	})
	m.queueTime = reg.Histogram("controller", em, "EventQueueTimeMs", "Time controller events wait in the queue, in ms")
	m.queueTime.Declare()

	const cs = "ControllerStats"
	for st, name := range rateAndTimeMetricNames {
		m.timers[st] = reg.Histogram("controller", cs, name, "Rate and time of processing controller events of this state, in ms")
		m.timers[st].Declare() // every broker exports them, 0 until it processes such an event
	}
	m.unclean = reg.Meter("controller", cs, "UncleanLeaderElectionsPerSec",
		"Leaders elected from outside the ISR").WithLabelValues()
	c.metrics.Store(m)
}

// dequeued records an event's time in the queue and enters its state; it returns the
// processing start time for processed.
func (m *controllerMetrics) dequeued(ev event, enqueued time.Time) time.Time {
	now := time.Now()
	if m == nil {
		return now
	}
	if !enqueued.IsZero() {
		m.queueTime.Observe(float64(now.Sub(enqueued).Microseconds()) / 1000)
	}
	if _, ok := ev.(startupEvent); ok {
		m.update(newControllerContext(0, 0)) // a new term: no counts left from an earlier one
	}
	m.state.Store(int32(stateOf(ev)))
	return now
}

// processed times the event under its state's timer and goes back to Idle. The counts
// (KafkaController.updateMetrics) take a pass over every partition, where Kafka keeps them
// incrementally: they are recomputed once the queue is drained (caughtUp), and at most
// every updateInterval during a long run of events, so a burst of small events (one
// AlterPartition per partition) does not cost a pass each.
func (m *controllerMetrics) processed(ev event, start time.Time, ctx *controllerContext) {
	if m == nil {
		return
	}
	now := time.Now()
	if h := m.timers[stateOf(ev)]; h != nil {
		h.Observe(float64(now.Sub(start).Microseconds()) / 1000)
	}
	m.dirty = true
	if now.Sub(m.updated) >= updateInterval {
		m.update(ctx)
	}
	m.state.Store(int32(stateIdle))
}

const updateInterval = time.Second

// caughtUp is called when the loop has processed every queued event.
func (m *controllerMetrics) caughtUp(ctx *controllerContext) {
	if m != nil && m.dirty {
		m.update(ctx)
	}
}

// uncleanElection marks UncleanLeaderElectionsPerSec.
func (m *controllerMetrics) uncleanElection() {
	if m != nil {
		m.unclean.Inc()
	}
}

// update is KafkaController.updateMetrics over samsa's context: one pass over the
// partitions, without sorting.
func (m *controllerMetrics) update(c *controllerContext) {
	var offline, imbalance, replicasToDelete, topicsIneligible, replicasIneligible int64
	for name, t := range c.topics {
		deleting := c.topicsToDelete[name]
		_, started := c.deletion[name]
		ineligible := false
		for p, replicas := range t.assignment {
			tp := TopicPartition{name, p}
			if !started && c.partitionStates[tp] == OfflinePartition {
				offline++
			}
			if st, ok := c.partitionLeadership[tp]; ok && !deleting && len(replicas) > 0 {
				pref := replicas[0]
				var balanced bool
				if c.partitionsReassigning[tp] && containsInt32(t.adding[p], pref) {
					balanced = !containsInt32(st.ISR, pref) // not counted until the new replica joins the ISR
				} else {
					balanced = st.Leader == pref
				}
				if !balanced {
					imbalance++
				}
			}
			if deleting && !started {
				replicasToDelete += int64(len(replicas))
				for _, r := range replicas {
					if !c.isReplicaOnlineOrShuttingDown(r, tp) {
						ineligible = true
						replicasIneligible++
					}
				}
				if c.partitionsReassigning[tp] {
					ineligible = true
				}
			}
		}
		if ineligible {
			topicsIneligible++
		}
	}
	for _, pending := range c.deletion {
		for _, replicas := range pending {
			replicasToDelete += int64(len(replicas))
		}
	}
	m.offlinePartitions.Store(offline)
	m.preferredImbalance.Store(imbalance)
	m.globalTopics.Store(int64(len(c.topics)))
	m.globalPartitions.Store(int64(len(c.partitionLeadership)))
	m.topicsToDelete.Store(int64(len(c.topicsToDelete)))
	m.replicasToDelete.Store(replicasToDelete)
	m.topicsIneligible.Store(topicsIneligible)
	m.replicasIneligible.Store(replicasIneligible)
	m.activeBrokers.Store(int64(len(c.liveBrokers)))
	m.dirty, m.updated = false, time.Now()
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// size is the number of queued events (EventQueueSize).
func (q *eventQueue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.events)
}

// takeTimed is take with each event's enqueue time.
func (q *eventQueue) takeTimed() ([]event, []time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs, at := q.events, q.enqueued
	q.events, q.enqueued = nil, nil
	return evs, at
}
