package integration

// Metrics (issue 17): /metrics of a 3-broker cluster of processes, scraped and parsed as
// Prometheus does, under the names the JMX exporter gives Kafka's MBeans. MessagesIn counts
// what leaders append, UnderReplicatedPartitions follows a killed follower, and
// ActiveControllerCount follows the controller. docs/metrics.md's table is the list of names
// that must be exported; the Grafana dashboard and the alert rules may use only those.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"gopkg.in/yaml.v3"
)

// metricsFamilies is one scrape: family name → family.
type metricsFamilies map[string]*dto.MetricFamily

// scrapeMetrics GETs addr's /metrics and parses the text format.
func scrapeMetrics(addr string) (metricsFamilies, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s/metrics: %w", addr, err)
	}
	return fams, nil
}

// value sums the series of family name whose labels include want; with want nil, only the
// series without labels (the broker-wide series of BrokerTopicMetrics). ok says whether any
// series matched.
func (f metricsFamilies) value(name string, want map[string]string) (sum float64, ok bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if want == nil && len(labels) > 0 {
			continue
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		ok = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, ok
}

// metricsCluster starts 3 broker processes, each with samsa.http.listener on a port of its
// own (fixed, so a restarted broker serves on the same one).
func metricsCluster(t *testing.T, props map[string]string) (*Cluster, map[int32]string) {
	t.Helper()
	httpAddrs := map[int32]string{}
	brokerProps := map[int32]map[string]string{}
	for id := range int32(3) {
		httpAddrs[id] = freeFixedAddr(t)
		brokerProps[id] = map[string]string{"samsa.http.listener": httpAddrs[id]}
	}
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: props, BrokerProps: brokerProps})
	return c, httpAddrs
}

// freeFixedAddr is a free 127.0.0.1 port below the kernel's ephemeral range: a port from
// 127.0.0.1:0 is in that range, where the cluster's own outgoing connections could take it
// before a broker (or its restart) binds it.
func freeFixedAddr(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				low = v
			}
		}
	}
	for range 100 {
		port := 1024 + rand.IntN(low-1024)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		if !metricsPortsTaken.take(port) {
			continue
		}
		return l.Addr().String()
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// metricsPortsTaken are the ports freeFixedAddr gave out (tests may run in parallel).
var metricsPortsTaken = &portSet{m: map[int]bool{}}

type portSet struct {
	mu sync.Mutex
	m  map[int]bool
}

// take marks port taken; false if it already was.
func (s *portSet) take(port int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[port] {
		return false
	}
	s.m[port] = true
	return true
}

// metricsScraper scrapes a cluster's running brokers and remembers every family name seen.
type metricsScraper struct {
	c     *Cluster
	addrs map[int32]string // samsa.http.listener by broker id
	seen  map[string]bool
}

// all scrapes every running broker.
func (s *metricsScraper) all() (map[int32]metricsFamilies, error) {
	out := map[int32]metricsFamilies{}
	for _, b := range s.c.Brokers {
		if !b.Running() {
			continue
		}
		f, err := scrapeMetrics(s.addrs[b.ID])
		if err != nil {
			return nil, fmt.Errorf("broker %d: %w", b.ID, err)
		}
		out[b.ID] = f
		for name := range f {
			s.seen[name] = true
		}
	}
	return out, nil
}

// sumOver sums a series over the scrapes, and says which brokers had a non-zero value.
func sumOver(scrapes map[int32]metricsFamilies, name string, want map[string]string) (float64, []int32) {
	var sum float64
	var nonZero []int32
	for id, f := range scrapes {
		v, _ := f.value(name, want)
		sum += v
		if v != 0 {
			nonZero = append(nonZero, id)
		}
	}
	sort.Slice(nonZero, func(i, j int) bool { return nonZero[i] < nonZero[j] })
	return sum, nonZero
}

const (
	mMessagesIn     = "kafka_server_brokertopicmetrics_messagesin_total"
	mBytesIn        = "kafka_server_brokertopicmetrics_bytesin_total"
	mTotalProduce   = "kafka_server_brokertopicmetrics_totalproducerequests_total"
	mURP            = "kafka_server_replicamanager_underreplicatedpartitions"
	mIsrExpands     = "kafka_server_replicamanager_isrexpands_total"
	mActiveCtl      = "kafka_controller_kafkacontroller_activecontrollercount"
	mGlobalParts    = "kafka_controller_kafkacontroller_globalpartitioncount"
	mOfflineParts   = "kafka_controller_kafkacontroller_offlinepartitionscount"
	mLogEndOffset   = "kafka_log_log_logendoffset"
	mNumSegments    = "kafka_log_log_numlogsegments"
	metricsDocsPath = "../docs/metrics.md"
)

// TestMetricsCluster: a 3-broker cluster under load.
//   - MessagesIn{topic} summed over the brokers equals the records produced (only a leader
//     marks it, as ReplicaManager.appendToLocalLog), the broker-wide series grows at least as
//     much, BytesIn and TotalProduceRequests grow;
//   - kafka.log Log: the three replicas of each partition report the same LogEndOffset, the
//     partitions' ends add up to the records produced, and 8 KiB segments make NumLogSegments
//     grow;
//   - every name in docs/metrics.md's table is in a scrape of the cluster;
//   - killing a follower makes UnderReplicatedPartitions ≥ 1 on a surviving leader, and after
//     its restart it is 0 on every broker again, with IsrExpands marked by a leader;
//   - ActiveControllerCount sums to 1 over the brokers, on the controller, and moves to the
//     new controller when the controller is killed.
func TestMetricsCluster(t *testing.T) {
	c, httpAddrs := metricsCluster(t, map[string]string{
		"zookeeper.session.timeout.ms": "4000",
		"replica.lag.time.max.ms":      "2000",
	})
	const counted, load = "metrics-count", "metrics-load"
	// Small segments: the counted records roll a few, whose flushes LogFlushStats times.
	createTopic(t, c, counted, 3, 3, map[string]*string{"segment.bytes": kmsg.StringPtr("8192")})
	createTopic(t, c, load, 3, 3, nil)
	// Quotas far above the load for every client id: quota sensors exist (and are exported)
	// only once a quota of their kind is set, as in Kafka.
	quotaCtx, quotaCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer quotaCancel()
	altered, err := adminClient(t, c).AlterClientQuotas(quotaCtx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 40},
			{Key: "consumer_byte_rate", Value: 1 << 40}, {Key: "request_percentage", Value: 1e6}},
	}})
	if err == nil && len(altered) == 1 {
		err = altered[0].Err
	}
	if err != nil {
		t.Fatalf("default client quotas: %v", err)
	}
	replWaitFullISR(t, c, counted, 3, 3, 30*time.Second)
	replWaitFullISR(t, c, load, 3, 3, 30*time.Second)

	sc := &metricsScraper{c: c, addrs: httpAddrs, seen: map[string]bool{}}
	before, err := sc.all()
	if err != nil {
		t.Fatal(err)
	}
	allBefore, _ := sumOver(before, mMessagesIn, nil)

	// A known number of records, acks=all, to the counted topic.
	const n = 3000
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.WithLogger(kgoTestLogger(t)),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(4096)) // batches under segment.bytes
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: counted, Key: []byte(strconv.Itoa(i % 31)), Value: []byte(fmt.Sprintf("value-%06d", i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", n, err)
	}
	prod := startReplProducer(t, c, load, 0, 2*time.Millisecond)
	prodClosed := false
	defer func() {
		if !prodClosed {
			prod.close()
		}
	}()

	after, err := sc.all()
	if err != nil {
		t.Fatal(err)
	}
	got, on := sumOver(after, mMessagesIn, map[string]string{"topic": counted})
	if got != n {
		t.Errorf("%s{topic=%q} summed over the brokers = %v (non-zero on %v), want %d", mMessagesIn, counted, got, on, n)
	}
	if allAfter, _ := sumOver(after, mMessagesIn, nil); allAfter-allBefore < n {
		t.Errorf("broker-wide %s grew by %v, want ≥ %d", mMessagesIn, allAfter-allBefore, n)
	}
	if b, _ := sumOver(after, mBytesIn, map[string]string{"topic": counted}); b < n*12 {
		t.Errorf("%s{topic=%q} = %v bytes for %d uncompressed records of 12-byte values", mBytesIn, counted, b, n)
	}
	// kafka.log Log: every replica of a partition ends at the same offset once acks=all
	// answered, and the partitions' ends add up to the records produced.
	var ends float64
	for p := range 3 {
		lp := map[string]string{"topic": counted, "partition": strconv.Itoa(p)}
		var leo []float64
		for _, f := range after {
			if v, ok := f.value(mLogEndOffset, lp); ok {
				leo = append(leo, v)
			}
		}
		if len(leo) != 3 || leo[0] != leo[1] || leo[1] != leo[2] {
			t.Errorf("%s%v over the brokers: %v, want 3 equal values", mLogEndOffset, lp, leo)
		}
		if len(leo) > 0 {
			ends += leo[0]
		}
	}
	if ends != n {
		t.Errorf("%s{topic=%q} of the partitions add up to %v, want %d", mLogEndOffset, counted, ends, n)
	}
	if segs, _ := sumOver(after, mNumSegments, map[string]string{"topic": counted}); segs <= 9 {
		t.Errorf("%s{topic=%q} = %v over 9 replicas, want more with 8 KiB segments", mNumSegments, counted, segs)
	}
	if r, _ := sumOver(after, mTotalProduce, map[string]string{"topic": counted}); r < 1 {
		t.Errorf("%s{topic=%q} = %v", mTotalProduce, counted, r)
	}
	if g, _ := after[c.WaitController(10*time.Second)].value(mGlobalParts, map[string]string{}); g < 6 {
		t.Errorf("%s on the controller = %v, want ≥ 6 (two topics of 3 partitions)", mGlobalParts, g)
	}
	for id, f := range after {
		if v, _ := f.value(mURP, map[string]string{}); v != 0 {
			t.Errorf("broker %d: %s = %v with every ISR full", id, mURP, v)
		}
	}

	// MessagesIn grows while the load runs (waits for a few acknowledged records).
	loadAt := func() float64 {
		s, err := sc.all()
		if err != nil {
			t.Fatal(err)
		}
		v, _ := sumOver(s, mMessagesIn, map[string]string{"topic": load})
		return v
	}
	l0 := loadAt()
	acked0 := prod.ackedCount()
	waitFor(t, 30*time.Second, func() error {
		if a := prod.ackedCount(); a < acked0+50 {
			return fmt.Errorf("%d records acknowledged by the load producer", a-acked0)
		}
		return nil
	})
	if l1 := loadAt(); l1 < l0+50 {
		t.Errorf("%s{topic=%q} went from %v to %v while 50+ records were acknowledged", mMessagesIn, load, l0, l1)
	}

	// Kill a follower (not the controller): a surviving leader counts under-replicated
	// partitions (its ISR shrinks, or the controller removes the dead broker from it).
	ctl := c.WaitController(10 * time.Second)
	victim := replOthers(c, ctl)[0]
	expandsBefore, _ := sumOver(after, mIsrExpands, map[string]string{})
	c.Broker(victim).Kill()
	t.Logf("killed follower %d", victim)
	waitFor(t, 30*time.Second, func() error {
		s, err := sc.all()
		if err != nil {
			return err
		}
		if v, on := sumOver(s, mURP, map[string]string{}); v < 1 {
			return fmt.Errorf("%s = %v on %v with broker %d dead", mURP, v, on, victim)
		}
		return nil
	})
	c.Broker(victim).Restart()
	t.Logf("restarted broker %d", victim)
	replWaitFullISR(t, c, counted, 3, 3, 60*time.Second)
	replWaitFullISR(t, c, load, 3, 3, 60*time.Second)
	waitFor(t, 30*time.Second, func() error {
		s, err := sc.all()
		if err != nil {
			return err
		}
		if v, on := sumOver(s, mURP, map[string]string{}); v != 0 {
			return fmt.Errorf("%s = %v on %v after broker %d rejoined every ISR", mURP, v, on, victim)
		}
		expands, _ := sumOver(s, mIsrExpands, map[string]string{})
		// The victim's own counter restarted from 0: only the survivors' count.
		if expands <= expandsBefore {
			return fmt.Errorf("%s = %v, %v before the follower came back", mIsrExpands, expands, expandsBefore)
		}
		return nil
	})

	// ActiveControllerCount: 1 in total, on the controller; then on the next controller.
	checkActive := func(want int32) error {
		s, err := sc.all()
		if err != nil {
			return err
		}
		sum, on := sumOver(s, mActiveCtl, map[string]string{})
		if sum != 1 || len(on) != 1 || on[0] != want {
			return fmt.Errorf("%s: sum %v, non-zero on %v; controller is %d", mActiveCtl, sum, on, want)
		}
		if v, _ := s[want].value(mOfflineParts, map[string]string{}); v != 0 {
			return fmt.Errorf("%s = %v on controller %d", mOfflineParts, v, want)
		}
		return nil
	}
	waitFor(t, 30*time.Second, func() error { return checkActive(c.WaitController(10 * time.Second)) })
	prod.close() // its retries would outlast the controller's move
	prodClosed = true
	c.Broker(ctl).Kill()
	t.Logf("killed controller %d", ctl)
	var next int32
	waitFor(t, 30*time.Second, func() error {
		id, _, err := c.controllerID()
		if err != nil {
			return err
		}
		if id < 0 || id == ctl {
			return fmt.Errorf("controller still %d", id)
		}
		next = id
		return nil
	})
	waitFor(t, 30*time.Second, func() error { return checkActive(next) })
	t.Logf("ActiveControllerCount moved from broker %d to broker %d", ctl, next)

	// Every documented name was exported (histograms and per-request series exist once
	// observed: the union of every scrape of the test).
	checkDocumentedNamesExported(t, sc.seen)
}

// metricNameRE matches the exporter-style names in documents and expressions.
var metricNameRE = regexp.MustCompile(`\bkafka_[a-z0-9_]+`)

// documentedMetrics reads the names in the first column of docs/metrics.md's tables (rows
// "| `kafka_...` | ...").
func documentedMetrics(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(metricsDocsPath)
	if err != nil {
		t.Fatalf("the metrics table: %v", err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `kafka_") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		names = append(names, metricNameRE.FindAllString(cell, -1)...)
	}
	if len(names) == 0 {
		t.Fatalf("no metric names in %s", metricsDocsPath)
	}
	return names
}

// checkDocumentedNamesExported: every documented name is among the families seen. Names
// exported and not in the table are logged (the per-state controller timers are described
// in prose).
func checkDocumentedNamesExported(t *testing.T, seen map[string]bool) {
	t.Helper()
	var missing []string
	names := documentedMetrics(t)
	documented := map[string]bool{}
	for _, name := range names {
		documented[name] = true
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of the %d names in %s are in no broker's /metrics: %s", len(missing), len(names), metricsDocsPath,
			strings.Join(missing, " "))
	}
	var extra []string
	for name := range seen {
		if !documented[name] && !documented[strings.TrimSuffix(name, "_count")] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	t.Logf("%d names documented, %d families exported; not in the table: %s", len(names), len(seen), strings.Join(extra, " "))
}

// TestMetricsDashboardAndAlerts: the Grafana dashboard (JSON) and the Prometheus files
// (YAML) parse, and every metric name they use is in docs/metrics.md's table (a histogram's
// name or its _count).
func TestMetricsDashboardAndAlerts(t *testing.T) {
	documented := map[string]bool{}
	for _, n := range documentedMetrics(t) {
		documented[n] = true
	}
	known := func(n string) bool {
		return documented[n] || documented[strings.TrimSuffix(n, "_count")]
	}
	check := func(file string, exprs []string) {
		if len(exprs) == 0 {
			t.Errorf("%s: no expressions found", file)
		}
		for _, e := range exprs {
			for _, n := range metricNameRE.FindAllString(e, -1) {
				if !known(n) {
					t.Errorf("%s uses %s, not in %s: %s", file, n, metricsDocsPath, e)
				}
			}
		}
	}

	data, err := os.ReadFile("../docker/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			exprs = append(exprs, q)
		}
	}
	check("docker/grafana-dashboard.json", exprs)

	data, err = os.ReadFile("../docker/prometheus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatalf("prometheus-alerts.yml: %v", err)
	}
	exprs = nil
	alerts := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			alerts[r.Alert] = r.Expr
		}
	}
	check("docker/prometheus-alerts.yml", exprs)
	// The classic three.
	for _, want := range []string{mOfflineParts, mURP, mActiveCtl} {
		found := false
		for _, e := range alerts {
			found = found || strings.Contains(e, want)
		}
		if !found {
			t.Errorf("no alert on %s in docker/prometheus-alerts.yml", want)
		}
	}

	data, err = os.ReadFile("../docker/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if len(prom.ScrapeConfigs) == 0 || len(prom.RuleFiles) == 0 {
		t.Errorf("prometheus.yml: %d scrape configs, rule files %v", len(prom.ScrapeConfigs), prom.RuleFiles)
	}
}
