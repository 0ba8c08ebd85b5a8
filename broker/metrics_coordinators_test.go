package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/internal/metrics"
)

// gathered is one sample of an unlabelled family in reg (gauge value or counter), and
// whether the family is there.
func gathered(t *testing.T, reg *metrics.Registry, name string) (float64, bool) {
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
			if len(m.GetLabel()) > 0 {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// TestControlMetricsOnBroker scrapes a running broker's registry: the single broker is the
// active controller, its ZooKeeper client has timed requests, and GroupMetadataManager
// counts a group with committed offsets.
func TestControlMetricsOnBroker(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"controlled.shutdown.enable": "false",
		"group.initial.rebalance.delay.ms": "0"})
	waitController(t, b)
	reg := b.Metrics()
	const gmm = "kafka_coordinator_group_groupmetadatamanager_"
	for name, want := range map[string]float64{
		"kafka_controller_kafkacontroller_activecontrollercount": 1,
		"kafka_controller_kafkacontroller_fencedbrokercount":     0,
		gmm + "numgroups": 0,
		"kafka_coordinator_transaction_transactionmarkerchannelmanager_unknowndestinationqueuesize": 0,
		"kafka_coordinator_transaction_transactionmarkerchannelmanager_logappendretryqueuesize":     0,
	} {
		if v, ok := gathered(t, reg, name); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if v, _ := gathered(t, reg, "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count"); v < 1 {
		t.Errorf("ZooKeeperRequestLatencyMs count = %v, want ≥ 1 (the broker's registration and more)", v)
	}
	if v, _ := gathered(t, reg, "kafka_server_sessionexpirelistener_zookeepersyncconnects_total"); v != 1 {
		t.Errorf("ZooKeeperSyncConnectsPerSec = %v, want 1", v)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "m3"); err != nil {
		t.Fatal(err)
	}
	waitForGauge := func(name string, want float64) {
		t.Helper()
		adminWaitFor(t, 15*time.Second, name, func() bool { v, ok := gathered(t, reg, name); return ok && v == want })
	}
	waitForGauge("kafka_controller_kafkacontroller_globalpartitioncount", 3)
	waitForGauge("kafka_controller_kafkacontroller_globaltopiccount", 1)

	// Offsets committed for a group that never joined: one Empty group holding three offsets.
	var offs kadm.Offsets
	for p := int32(0); p < 3; p++ {
		offs.Add(kadm.Offset{Topic: "m3", Partition: p, At: int64(p) + 1, LeaderEpoch: -1})
	}
	adminWaitFor(t, 20*time.Second, "offset commit", func() bool {
		r, err := adm.CommitOffsets(ctx, "g-m3", offs)
		return err == nil && r.Error() == nil
	})
	for name, want := range map[string]float64{gmm + "numgroups": 1, gmm + "numgroupsempty": 1, gmm + "numgroupsstable": 0,
		gmm + "numoffsets": 3, "kafka_controller_kafkacontroller_globaltopiccount": 2} {
		waitForGauge(name, want) // __consumer_offsets is the second topic
	}

	// A consumer joins another group: it becomes Stable once the rebalance completes.
	member, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.ConsumerGroup("g-stable"), kgo.ConsumeTopics("m3"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	go func() {
		for ctx.Err() == nil && !member.PollFetches(ctx).IsClientClosed() {
		}
	}()
	waitForGauge(gmm+"numgroupsstable", 1)
	waitForGauge(gmm+"numgroups", 2)
}

// controlMetricNames are the families this piece registers: every broker exports all of
// them from its start, 0 where nothing happened (histograms included, as Yammer's).
var controlMetricNames = []string{
	"kafka_controller_controllereventmanager_eventqueuesize",
	"kafka_controller_controllereventmanager_eventqueuetimems",
	"kafka_controller_controllerstats_autoleaderbalancerateandtimems",
	"kafka_controller_controllerstats_controlledshutdownrateandtimems",
	"kafka_controller_controllerstats_controllerchangerateandtimems",
	"kafka_controller_controllerstats_controllershutdownrateandtimems",
	"kafka_controller_controllerstats_isrchangerateandtimems",
	"kafka_controller_controllerstats_leaderandisrresponsereceivedrateandtimems",
	"kafka_controller_controllerstats_leaderelectionrateandtimems",
	"kafka_controller_controllerstats_listpartitionreassignmentrateandtimems",
	"kafka_controller_controllerstats_logdirchangerateandtimems",
	"kafka_controller_controllerstats_manualleaderbalancerateandtimems",
	"kafka_controller_controllerstats_partitionreassignmentrateandtimems",
	"kafka_controller_controllerstats_topicchangerateandtimems",
	"kafka_controller_controllerstats_topicdeletionrateandtimems",
	"kafka_controller_controllerstats_topicuncleanleaderelectionenablerateandtimems",
	"kafka_controller_controllerstats_uncleanleaderelectionenablerateandtimems",
	"kafka_controller_controllerstats_uncleanleaderelections_total",
	"kafka_controller_controllerstats_updatefeaturesrateandtimems",
	"kafka_controller_kafkacontroller_activebrokercount",
	"kafka_controller_kafkacontroller_activecontrollercount",
	"kafka_controller_kafkacontroller_controllerstate",
	"kafka_controller_kafkacontroller_fencedbrokercount",
	"kafka_controller_kafkacontroller_globalpartitioncount",
	"kafka_controller_kafkacontroller_globaltopiccount",
	"kafka_controller_kafkacontroller_offlinepartitionscount",
	"kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
	"kafka_controller_kafkacontroller_replicasineligibletodeletecount",
	"kafka_controller_kafkacontroller_replicastodeletecount",
	"kafka_controller_kafkacontroller_topicsineligibletodeletecount",
	"kafka_controller_kafkacontroller_topicstodeletecount",
	"kafka_controller_kafkacontroller_zkmigrationstate",
	"kafka_coordinator_group_groupmetadatamanager_numgroups",
	"kafka_coordinator_group_groupmetadatamanager_numgroupscompletingrebalance",
	"kafka_coordinator_group_groupmetadatamanager_numgroupsdead",
	"kafka_coordinator_group_groupmetadatamanager_numgroupsempty",
	"kafka_coordinator_group_groupmetadatamanager_numgroupspreparingrebalance",
	"kafka_coordinator_group_groupmetadatamanager_numgroupsstable",
	"kafka_coordinator_group_groupmetadatamanager_numoffsets",
	"kafka_coordinator_transaction_transactionmarkerchannelmanager_logappendretryqueuesize",
	"kafka_coordinator_transaction_transactionmarkerchannelmanager_unknowndestinationqueuesize",
	"kafka_server_sessionexpirelistener_zookeeperauthfailures_total",
	"kafka_server_sessionexpirelistener_zookeeperdisconnects_total",
	"kafka_server_sessionexpirelistener_zookeeperexpires_total",
	"kafka_server_sessionexpirelistener_zookeeperreadonlyconnects_total",
	"kafka_server_sessionexpirelistener_zookeepersaslauthentications_total",
	"kafka_server_sessionexpirelistener_zookeepersyncconnects_total",
	"kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
}

func TestControlMetricNamesPresent(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"controlled.shutdown.enable": "false"})
	fams, err := b.Metrics().Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	for _, n := range controlMetricNames {
		if !have[n] {
			t.Errorf("%s missing from the scrape", n)
		}
	}
}
