package controller

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// metricValue reads one unlabelled series of reg: a gauge's value or a histogram's _count.
// ok is false when the family is absent.
func metricValue(t *testing.T, reg *metrics.Registry, name string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 0 {
				continue
			}
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

func gaugeIs(t *testing.T, reg *metrics.Registry, name string, want float64) func() bool {
	return func() bool { v, ok := metricValue(t, reg, name); return ok && v == want }
}

// TestControllerMetrics runs two brokers' controllers against ZooKeeper: the KafkaController
// gauges follow the cluster on the active one and stay 0 on the other; a broker failure
// leaves its RF-1 partition offline and is timed under LeaderElectionRateAndTimeMs.
func TestControllerMetrics(t *testing.T) {
	srv := sharedZK(t)
	connect := srv.Connect(uniqueChroot("metrics"))
	zk1, zk2 := connectZK(t, connect), connectZK(t, connect)
	if err := zk1.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	b1, b2 := newRecordingBroker(t), newRecordingBroker(t)
	for i, r := range []struct {
		zk *zkmeta.Client
		b  *recordingBroker
	}{{zk1, b1}, {zk2, b2}} {
		if _, err := r.zk.RegisterBroker(context.Background(), zkmeta.BrokerInfo{ID: int32(i + 1), Endpoints: []zkmeta.Endpoint{{
			ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: r.b.port(), SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	reg1, reg2 := metrics.NewRegistry(), metrics.NewRegistry()
	c1 := newController(Config{BrokerID: 1, Log: testLog(t), RetryBackoff: 50 * time.Millisecond}, zk1, kclientDial)
	c1.RegisterMetrics(reg1)
	runController(t, c1)
	waitFor(t, 10*time.Second, "broker 1 controller", c1.IsActive)
	c2 := newController(Config{BrokerID: 2, Log: testLog(t), RetryBackoff: 50 * time.Millisecond}, zk2, kclientDial)
	c2.RegisterMetrics(reg2)
	runController(t, c2)

	admin := connectZK(t, connect)
	if err := admin.CreateTopic("m", zkmeta.TopicAssignment{Partitions: map[int32][]int32{0: {1}, 1: {2}, 2: {2, 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "GlobalPartitionCount 3", gaugeIs(t, reg1, "kafka_controller_kafkacontroller_globalpartitioncount", 3))
	for name, want := range map[string]float64{
		"kafka_controller_kafkacontroller_activecontrollercount":          1,
		"kafka_controller_kafkacontroller_globaltopiccount":               1,
		"kafka_controller_kafkacontroller_activebrokercount":              2,
		"kafka_controller_kafkacontroller_offlinepartitionscount":         0,
		"kafka_controller_kafkacontroller_preferredreplicaimbalancecount": 0,
		"kafka_controller_kafkacontroller_fencedbrokercount":              0,
	} {
		if v, ok := metricValue(t, reg1, name); !ok || v != want {
			t.Errorf("active controller: %s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	for _, name := range []string{"kafka_controller_kafkacontroller_activecontrollercount",
		"kafka_controller_kafkacontroller_globaltopiccount", "kafka_controller_kafkacontroller_globalpartitioncount",
		"kafka_controller_kafkacontroller_activebrokercount", "kafka_controller_controllereventmanager_eventqueuesize",
		"kafka_controller_controllerstats_leaderelectionrateandtimems_count", "kafka_controller_controllerstats_uncleanleaderelections_total"} {
		if v, ok := metricValue(t, reg2, name); !ok || v != 0 {
			t.Errorf("other broker: %s = %v (present %v), want 0", name, v, ok)
		}
	}
	if v, _ := metricValue(t, reg1, "kafka_controller_controllerstats_controllerchangerateandtimems_count"); v < 1 {
		t.Errorf("ControllerChangeRateAndTimeMs count = %v, want ≥ 1 (Startup)", v)
	}
	if v, _ := metricValue(t, reg1, "kafka_controller_controllereventmanager_eventqueuetimems_count"); v < 2 {
		t.Errorf("EventQueueTimeMs count = %v, want ≥ 2 (Startup, TopicChange)", v)
	}

	// Broker 2 dies: m-1 (replicas [2]) has no replica left and goes offline; m-2 moves to
	// broker 1, which is not its preferred replica. Both count as imbalanced (Kafka's
	// hasPreferredLeader: leader -1 is not the preferred replica either).
	zk2.Close()
	waitFor(t, 10*time.Second, "OfflinePartitionsCount 1", gaugeIs(t, reg1, "kafka_controller_kafkacontroller_offlinepartitionscount", 1))
	waitFor(t, 10*time.Second, "PreferredReplicaImbalanceCount 2",
		gaugeIs(t, reg1, "kafka_controller_kafkacontroller_preferredreplicaimbalancecount", 2))
	if v, _ := metricValue(t, reg1, "kafka_controller_kafkacontroller_activebrokercount"); v != 1 {
		t.Errorf("ActiveBrokerCount after broker 2 died = %v, want 1", v)
	}
	if v, _ := metricValue(t, reg1, "kafka_controller_controllerstats_leaderelectionrateandtimems_count"); v < 1 {
		t.Errorf("LeaderElectionRateAndTimeMs count = %v, want ≥ 1 (the BrokerChange)", v)
	}
	if v, _ := metricValue(t, reg1, "kafka_controller_controllerstats_uncleanleaderelections_total"); v != 0 {
		t.Errorf("UncleanLeaderElectionsPerSec = %v, want 0 (unclean election disabled)", v)
	}
	if v, _ := metricValue(t, reg1, "kafka_controller_kafkacontroller_controllerstate"); v != float64(stateIdle) {
		t.Errorf("ControllerState between events = %v, want 0 (Idle)", v)
	}
}

// TestControllerMetricsUpdate checks updateMetrics' counts on a hand-built context: deletion
// counts, and imbalance not counted while the preferred replica is still being added.
func TestControllerMetricsUpdate(t *testing.T) {
	c := newControllerContext(1, 0)
	c.liveBrokers[1] = zkmeta.BrokerInfo{ID: 1}
	c.topics["a"] = &topicInfo{assignment: map[int32][]int32{0: {1, 2}, 1: {3, 1}}, adding: map[int32][]int32{1: {3}}}
	c.topics["d"] = &topicInfo{assignment: map[int32][]int32{0: {1, 2}}}
	c.partitionLeadership[TopicPartition{"a", 0}] = zkmeta.PartitionState{LeaderAndIsr: zkmeta.LeaderAndIsr{Leader: 2, ISR: []int32{2}}}
	c.partitionLeadership[TopicPartition{"a", 1}] = zkmeta.PartitionState{LeaderAndIsr: zkmeta.LeaderAndIsr{Leader: 1, ISR: []int32{1}}}
	c.partitionsReassigning[TopicPartition{"a", 1}] = true
	c.partitionStates[TopicPartition{"d", 0}] = OfflinePartition
	c.topicsToDelete["d"] = true
	var m controllerMetrics
	m.update(c)
	for name, got := range map[string]int64{"imbalance": m.preferredImbalance.Load(), "offline": m.offlinePartitions.Load(),
		"topicsToDelete": m.topicsToDelete.Load(), "replicasToDelete": m.replicasToDelete.Load(),
		"topicsIneligible": m.topicsIneligible.Load(), "replicasIneligible": m.replicasIneligible.Load(),
		"topics": m.globalTopics.Load(), "partitions": m.globalPartitions.Load()} {
		want := map[string]int64{"imbalance": 1, "offline": 1, "topicsToDelete": 1, "replicasToDelete": 2,
			"topicsIneligible": 1, "replicasIneligible": 1, "topics": 2, "partitions": 2}[name]
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// TestUncleanElectionMetric: an unclean election (topic override on) marks
// UncleanLeaderElectionsPerSec once; the clean topic's partition stays offline.
func TestUncleanElectionMetric(t *testing.T) {
	h := &stepHarness{t: t, quiet: true}
	h.zk = newFakeStore(&h.out)
	for _, line := range []string{"broker up 1", "broker up 2", "topic dirty 0=1,2",
		"topic-config dirty unclean.leader.election.enable=true", "topic clean 0=1,2",
		"state dirty-0 1 3 1", "state clean-0 1 3 1", "elect"} {
		h.run(line)
	}
	reg := metrics.NewRegistry()
	m := &controllerMetrics{unclean: reg.Meter("controller", "ControllerStats", "UncleanLeaderElectionsPerSec", "").WithLabelValues()}
	h.loop.metrics = m
	h.run("broker down 1")
	h.run("event BrokerChange")
	if v, _ := metricValue(t, reg, "kafka_controller_controllerstats_uncleanleaderelections_total"); v != 1 {
		t.Errorf("UncleanLeaderElectionsPerSec = %v, want 1\n%s", v, h.out.String())
	}
	m.update(h.loop.ctx)
	if v := m.offlinePartitions.Load(); v != 1 {
		t.Errorf("OfflinePartitionsCount = %d, want 1 (clean-0)", v)
	}
}
