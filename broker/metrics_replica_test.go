package broker

// metrics_replica_test.go: the ReplicaManager, purgatory and kafka.log Log metrics read the
// replica state they name, through the registry's Prometheus output.

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/logstore"
)

// scrape gathers reg and returns every sample as "name{k="v",...}" → value, labels sorted.
func scrape(t *testing.T, reg *metrics.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	return sampleMap(fams)
}

func sampleMap(fams []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"=\""+l.GetValue()+"\"")
			}
			sort.Strings(labels)
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				out[key] = m.GetUntyped().GetValue()
			case m.GetSummary() != nil:
				out[key+"_count"] = float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	return out
}

func wantMetrics(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s missing from the scrape", k)
		} else if g != v {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

const rmPrefix = "kafka_server_replicamanager_"

func TestReplicaManagerMetrics(t *testing.T) {
	e := newDataEnv(t)
	reg := metrics.NewRegistry()
	e.rm.registerMetrics(reg)
	registerLogMetrics(reg, e.logs)

	got := scrape(t, reg)
	wantMetrics(t, got, map[string]float64{
		rmPrefix + "partitioncount": 0, rmPrefix + "leadercount": 0, rmPrefix + "underreplicatedpartitions": 0,
		rmPrefix + "isrexpands_total": 0, rmPrefix + "isrshrinks_total": 0, rmPrefix + "failedisrupdates_total": 0,
		"kafka_server_replicafetchermanager_maxlag{clientId=\"Replica\"}":                         0,
		"kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation=\"Fetch\"}": 0,
		"kafka_log_logmanager_offlinelogdirectorycount":                                           0,
	})

	// Broker 1 leads replicas 1,2,3 with ISR 1,2: one under-replicated partition.
	p, l, ps := replicatedPartition(t, e, "urp", []int32{1, 2})
	p.hooks.isrMeters.Store(e.rm.partHooks.isrMeters.Load()) // replicatedPartition swapped the hooks
	appendN(t, p, 4)
	got = scrape(t, reg)
	wantMetrics(t, got, map[string]float64{
		rmPrefix + "partitioncount": 1, rmPrefix + "leadercount": 1, rmPrefix + "underreplicatedpartitions": 1,
		rmPrefix + "underminisrpartitioncount": 0, rmPrefix + "atminisrpartitioncount": 0, rmPrefix + "reassigningpartitions": 0,
		rmPrefix + "offlinereplicacount":                                         0,
		`kafka_log_log_logendoffset{partition="0",topic="urp"}`:                  4,
		`kafka_log_log_logstartoffset{partition="0",topic="urp"}`:                0,
		`kafka_log_log_numlogsegments{partition="0",topic="urp"}`:                1,
		`kafka_log_log_size{partition="0",topic="urp"}`:                          float64(l.Size()),
		`kafka_cluster_partition_underreplicated{partition="0",topic="urp"}`:     1,
		`kafka_cluster_partition_insyncreplicascount{partition="0",topic="urp"}`: 2,
		`kafka_cluster_partition_replicascount{partition="0",topic="urp"}`:       3,
		`kafka_cluster_partition_laststableoffsetlag{partition="0",topic="urp"}`: 0,
	})
	if l.Size() <= 0 {
		t.Fatalf("log size %d after 4 appends", l.Size())
	}

	// Follower 3 catches up: the leader proposes it into the ISR; the controller commits.
	followerFetch(t, e, p.tp, 2, 4, -1)
	followerFetch(t, e, p.tp, 3, 4, -1)
	prop := ps.last()
	if prop == nil || !prop.expand {
		t.Fatalf("no expansion proposed: %+v", prop)
	}
	p.handleAlterPartitionResult(prop, alterPartitionResult{leaderEpoch: prop.leaderEpoch, partitionEpoch: prop.partitionEpoch + 1, isr: []int32{1, 2, 3}})
	got = scrape(t, reg)
	wantMetrics(t, got, map[string]float64{
		rmPrefix + "underreplicatedpartitions": 0, rmPrefix + "isrexpands_total": 1, rmPrefix + "isrshrinks_total": 0,
		rmPrefix + "failedisrupdates_total": 0,
	})

	// A shrink the controller refuses counts as a failed update, and the ISR stays.
	p.mu.Lock()
	shrink := p.proposeLocked([]int32{1, 2}, false)
	p.mu.Unlock()
	p.handleAlterPartitionResult(shrink, alterPartitionResult{code: kerr.IneligibleReplica.Code})
	got = scrape(t, reg)
	wantMetrics(t, got, map[string]float64{
		rmPrefix + "isrshrinks_total": 0, rmPrefix + "failedisrupdates_total": 1, rmPrefix + "underreplicatedpartitions": 0,
	})

	// min.insync.replicas=3 on a 3-replica partition with ISR {1,2}: under min ISR, not at it.
	cfg := l.Config()
	cfg.MinInSyncReplicas = 3
	l.SetConfig(cfg)
	sendLeaderAndIsr(t, e, p.tp, testBrokerID, []int32{1, 2}, []int32{1, 2, 3})
	got = scrape(t, reg)
	wantMetrics(t, got, map[string]float64{
		rmPrefix + "underreplicatedpartitions": 1, rmPrefix + "underminisrpartitioncount": 1, rmPrefix + "atminisrpartitioncount": 0,
	})
	sendLeaderAndIsr(t, e, p.tp, testBrokerID, []int32{1, 2, 3}, []int32{1, 2, 3})
	wantMetrics(t, scrape(t, reg), map[string]float64{
		rmPrefix + "underreplicatedpartitions": 0, rmPrefix + "underminisrpartitioncount": 0, rmPrefix + "atminisrpartitioncount": 1,
	})

	// Another broker leads: the partition is hosted but not led.
	sendLeaderAndIsr(t, e, p.tp, 2, []int32{2}, []int32{1, 2, 3})
	wantMetrics(t, scrape(t, reg), map[string]float64{
		rmPrefix + "partitioncount": 1, rmPrefix + "leadercount": 0, rmPrefix + "underreplicatedpartitions": 0,
		rmPrefix + "atminisrpartitioncount":                                      0,
		`kafka_cluster_partition_insyncreplicascount{partition="0",topic="urp"}`: 0,
		`kafka_cluster_partition_underreplicated{partition="0",topic="urp"}`:     0,
	})
}

// TestPurgatoryMetrics: a fetch waiting for min.bytes on two partitions is one delayed Fetch
// operation watching two keys, and is gone once it returns.
func TestPurgatoryMetrics(t *testing.T) {
	e := newDataEnv(t)
	reg := metrics.NewRegistry()
	e.rm.registerMetrics(reg)
	for _, name := range []string{"pa", "pb"} {
		replicatedPartition(t, e, name, []int32{1})
	}
	const size = `kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Fetch"}`
	const ops = `kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation="Fetch"}`
	const produceOps = `kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation="Produce"}`
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.rm.FetchMessages(ctx, FetchParams{ReplicaID: -1, MaxWait: time.Minute, MinBytes: 1 << 30, MaxBytes: 1 << 20},
			[]FetchPartitionRequest{
				{TP: logstore.TopicPartition{Topic: "pa"}, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1},
				{TP: logstore.TopicPartition{Topic: "pb"}, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1},
			})
	}()
	// The fetch registers its watches before it parks; wait for them (not for a time).
	var got map[string]float64
	for {
		got = scrape(t, reg)
		if got[ops] == 1 {
			break
		}
		select {
		case <-done:
			t.Fatal("the fetch returned without waiting")
		case <-time.After(5 * time.Millisecond):
		}
	}
	wantMetrics(t, got, map[string]float64{size: 2, ops: 1, produceOps: 0})
	cancel()
	<-done
	wantMetrics(t, scrape(t, reg), map[string]float64{size: 0, ops: 0})
}

func TestBrokerStateBeforeStart(t *testing.T) {
	b := &Broker{}
	if v := b.brokerStateValue(); v != 1 {
		t.Fatalf("BrokerState before Start = %v, want 1 (STARTING)", v)
	}
	b.mu.stopping = make(chan struct{})
	if v := b.brokerStateValue(); v != 7 {
		t.Fatalf("BrokerState while shutting down = %v, want 7", v)
	}
}

// TestReplicaFetcherMaxLag: MaxLag is the largest known fetch-state lag over the fetchers,
// and a real follower that caught up reports 0.
func TestReplicaFetcherMaxLag(t *testing.T) {
	e := newDataEnv(t)
	e.serve()
	tp := logstore.TopicPartition{Topic: "lag", Partition: 0}
	id := [16]byte{0x1a, 0x9}
	e.topics[tp.Topic], e.parts[tp.Topic] = id, 1
	replicas := []int32{1, 2}
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 0, []int32{1}, replicas)
	e.updateMetadataWithLeader(tp.Topic, 1, replicas)
	lp, _ := e.rm.Partition(tp)
	appendN(t, lp, 20)
	f := newFollowerEnv(t, e)
	reg := metrics.NewRegistry()
	f.rm.registerMetrics(reg)
	const maxLag = `kafka_server_replicafetchermanager_maxlag{clientId="Replica"}`
	wantMetrics(t, scrape(t, reg), map[string]float64{maxLag: 0})
	lisr(t, f.rm, e.ctrlEp, id, tp, 1, 0, []int32{1}, replicas)
	fl, _ := f.logs.GetLog(tp)
	waitFor(t, 10*time.Second, func() bool { return fl.LogEndOffset() == 20 && fl.HighWatermark() == 20 })
	wantMetrics(t, scrape(t, reg), map[string]float64{maxLag: 0})

	// A second fetcher (another source broker) with two partitions behind: the largest lag.
	fs := &replicaFetcher{partitions: map[logstore.TopicPartition]*fetchState{
		{Topic: "x", Partition: 0}: {lag: 7, lagKnown: true},
		{Topic: "x", Partition: 1}: {lag: 12, lagKnown: true},
		{Topic: "x", Partition: 2}: {lag: 99}, // not known yet: no response
	}}
	f.rm.fetchers.mu.Lock()
	f.rm.fetchers.fetchers[fetcherKey{source: 3}] = fs
	f.rm.fetchers.mu.Unlock()
	wantMetrics(t, scrape(t, reg), map[string]float64{maxLag: 12})
	f.rm.fetchers.mu.Lock()
	delete(f.rm.fetchers.fetchers, fetcherKey{source: 3})
	f.rm.fetchers.mu.Unlock()
}

// TestReplicaMetricsOverHTTP: a real broker's samsa.http.listener serves this piece's
// metrics with the values of its partitions after a produce.
func TestReplicaMetricsOverHTTP(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	createTopicKadm(t, addr, "m2", 2)
	cl := kgoClient(t, addr)
	produceConsume(t, cl, "m2", 4)
	idem, err := kgo.NewClient(kgo.SeedBrokers(addr)) // idempotent by default: one producer id
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := idem.ProduceSync(ctx, &kgo.Record{Topic: "m2", Partition: 0, Value: []byte("idempotent")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	parsed, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	fams := make([]*dto.MetricFamily, 0, len(parsed))
	for _, f := range parsed {
		fams = append(fams, f)
	}
	got := sampleMap(fams)
	leo := got[`kafka_log_log_logendoffset{partition="0",topic="m2"}`] + got[`kafka_log_log_logendoffset{partition="1",topic="m2"}`]
	if leo != 5 {
		t.Errorf("log end offsets of m2 sum to %v, want the 5 records produced", leo)
	}
	wantMetrics(t, got, map[string]float64{
		"kafka_server_kafkaserver_brokerstate": 3,
		rmPrefix + "produceridcount":           1,
		rmPrefix + "underreplicatedpartitions": 0, rmPrefix + "offlinereplicacount": 0,
		`kafka_log_log_numlogsegments{partition="0",topic="m2"}`:                                  1,
		`kafka_log_log_logstartoffset{partition="1",topic="m2"}`:                                  0,
		"kafka_log_logmanager_offlinelogdirectorycount":                                           0,
		`kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation="Produce"}`: 0,
	})
	// The offsets topic may be hosted too: m2's two partitions at least, all led here.
	if n := got[rmPrefix+"partitioncount"]; n < 2 || got[rmPrefix+"leadercount"] != n {
		t.Errorf("PartitionCount %v LeaderCount %v, want >= 2 and equal on a single broker", n, got[rmPrefix+"leadercount"])
	}
	for _, name := range []string{
		"kafka_log_logflushstats_logflushrateandtimems_count", "kafka_log_logcleaner_max_buffer_utilization_percent",
		"kafka_log_logcleaner_cleaner_recopy_percent", "kafka_log_logcleaner_max_clean_time_secs",
		"kafka_log_logcleanermanager_max_dirty_percent", `kafka_server_replicafetchermanager_maxlag{clientId="Replica"}`,
		`kafka_cluster_partition_underreplicated{partition="0",topic="m2"}`,
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s missing from /metrics", name)
		}
	}
}

// TestFetchRateEWMA: the one-minute rate is Yammer's: the first 5 s tick sets it to that
// tick's rate, later ticks decay it with alpha = 1 - e^(-5/60). MinFetchRate is the lowest
// over the fetchers.
func TestFetchRateEWMA(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var e ewmaRate
	e.oneMinute(t0) // starts the clock
	for i := range 10 {
		e.mark(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	if r := e.oneMinute(t0.Add(4 * time.Second)); r != 0 {
		t.Fatalf("rate %v before the first tick, want 0", r)
	}
	if r := e.oneMinute(t0.Add(5 * time.Second)); r != 2 {
		t.Fatalf("rate %v after 10 events in the first 5 s tick, want 2", r)
	}
	want := 2 - ewmaAlpha1m*2
	if r := e.oneMinute(t0.Add(10 * time.Second)); r != want {
		t.Fatalf("rate %v after an idle tick, want %v", r, want)
	}

	m := &ReplicaFetcherManager{fetchers: map[fetcherKey]*replicaFetcher{}}
	if r := m.minFetchRate(t0); r != 0 {
		t.Fatalf("MinFetchRate %v with no fetcher", r)
	}
	slow, fast := &replicaFetcher{}, &replicaFetcher{}
	slow.requestRate.oneMinute(t0)
	fast.requestRate.oneMinute(t0)
	for i := range 20 {
		fast.requestRate.mark(t0.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	slow.requestRate.mark(t0)
	m.fetchers[fetcherKey{source: 1}], m.fetchers[fetcherKey{source: 2}] = slow, fast
	if r := m.minFetchRate(t0.Add(5 * time.Second)); r != 0.2 {
		t.Fatalf("MinFetchRate %v, want the slow fetcher's 0.2", r)
	}
}
