package broker

// metrics_request_test.go: BrokerTopicMetrics and RequestMetrics move with what a real
// client does over a real connection (franz-go against the SocketServer).

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/logstore"
)

// requestScrape gathers reg into "name{k="v",...}" → value (labels sorted by name);
// histograms' quantiles and counts appear as the gauges and counters they export.
func requestScrape(t *testing.T, reg *metrics.Registry) map[string]float64 {
	t.Helper()
	return scrape(t, reg) // metrics_replica_test.go
}

// sumPrefix sums every series whose key starts with prefix.
func sumPrefix(got map[string]float64, prefix string) float64 {
	s := 0.0
	for k, v := range got {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

func TestRequestPathMetrics(t *testing.T) {
	e := newDataEnv(t)
	// A produce quota far above what the test sends: its sensors exist (and are exported)
	// without throttling anyone.
	q, err := NewQuotaManagers(e.cfg, nil, e.log)
	if err != nil {
		t.Fatal(err)
	}
	q.Produce.Entities().Set(QuotaEntity{ClientKind: quotaEntityDefault}, 1e12)
	e.apis.Quotas = q
	reg := metrics.NewRegistry()
	e.apis.Metrics = newAPIMetrics(reg, e.apis)
	e.createTopic("m", 2)
	e.serve()

	const n = 60
	var cl *kgo.Client
	cl, err = kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumeTopics("m"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: "m", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("value-%03d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}

	// A produce to a partition that does not exist: answered, counted in the total and
	// in ErrorsPerSec, not a failure (appendToLocalLog's known exceptions).
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "m"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 7, valuesBatch(3, 10)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}

	// Wait (no time bound but the test's) until the consumer's empty long polls, which
	// park in purgatory for FetchMaxWait, have been answered a few times.
	consumerFetches := func(got map[string]float64) float64 {
		return sumPrefix(got, `kafka_network_requestmetrics_requests_total{request="FetchConsumer",`)
	}
	base := consumerFetches(requestScrape(t, reg))
	for consumerFetches(requestScrape(t, reg)) < base+3 {
		if ctx.Err() != nil {
			t.Fatal("no further consumer fetches")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := requestScrape(t, reg)

	const btm = "kafka_server_brokertopicmetrics_"
	exact := map[string]float64{
		btm + "messagesin_total":                                                            n,
		btm + `messagesin_total{topic="m"}`:                                                 n,
		btm + "totalproducerequests_total":                                                  n + 1, // one per partition append, the unknown partition's too
		btm + `totalproducerequests_total{topic="m"}`:                                       n + 1,
		btm + "failedproducerequests_total":                                                 0,
		btm + "failedfetchrequests_total":                                                   0,
		btm + "replicationbytesout_total":                                                   0,
		`kafka_network_requestmetrics_requests_total{request="FetchFollower",version="16"}`: 0,
		`kafka_network_requestmetrics_errors_total{error="UNKNOWN_TOPIC_OR_PARTITION",request="Produce"}`: 1,
	}
	for k, want := range exact {
		if v, ok := got[k]; want != 0 && !ok {
			t.Errorf("%s missing from the scrape", k)
		} else if v != want {
			t.Errorf("%s = %v, want %v", k, v, want)
		}
	}
	// A consumer long poll may be parked in its handler right now: at most one request.
	for _, k := range []string{"kafka_network_requestchannel_requestqueuesize", "kafka_network_requestchannel_responsequeuesize"} {
		if v, ok := got[k]; !ok || v < 0 || v > 1 {
			t.Errorf("%s = %v (present %v), want 0 or 1 with one consumer connection polling", k, v, ok)
		}
	}
	bytesIn := got[btm+`bytesin_total{topic="m"}`]
	if bytesIn < n*10 || got[btm+"bytesin_total"] != bytesIn {
		t.Errorf("bytes in: topic %v, broker %v; want equal and at least %d", bytesIn, got[btm+"bytesin_total"], n*10)
	}
	if out := got[btm+`bytesout_total{topic="m"}`]; out < bytesIn {
		t.Errorf("bytes out %v < bytes in %v: the consumer read every batch", out, bytesIn)
	}
	if got[btm+`totalfetchrequests_total{topic="m"}`] < 2 {
		t.Errorf("total fetch requests %v, want one per partition read", got[btm+`totalfetchrequests_total{topic="m"}`])
	}

	const rm = "kafka_network_requestmetrics_"
	produces := sumPrefix(got, rm+`requests_total{request="Produce",`)
	if produces != n+1 {
		t.Errorf("Produce requests %v, want %d (one per ProduceSync, and the raw one)", produces, n+1)
	}
	if c := got[rm+`totaltimems_count{request="Produce"}`]; c != produces {
		t.Errorf("TotalTimeMs count %v, RequestsPerSec %v: both are marked once per request", c, produces)
	}
	if none := got[rm+`errors_total{error="NONE",request="Produce"}`]; none != n {
		t.Errorf("Produce NONE errors %v, want %d (one per partition answered)", none, n)
	}
	fetches, consumer := sumPrefix(got, rm+`requests_total{request="Fetch",`), consumerFetches(got)
	if consumer == 0 || fetches != consumer {
		t.Errorf("Fetch requests %v, FetchConsumer %v: a consumer's fetch is marked under both", fetches, consumer)
	}
	if sumPrefix(got, rm+`requests_total{request="Metadata",`) == 0 {
		t.Error("no Metadata requests counted")
	}
	// Empty long polls wait FetchMaxWait (300 ms) in purgatory: RemoteTimeMs. Local time
	// is the handler's work without that wait.
	if remote := got[rm+`remotetimems{quantile="0.999",request="FetchConsumer"}`]; remote < 250 {
		t.Errorf("FetchConsumer RemoteTimeMs p99.9 = %v ms, want about the 300 ms long poll", remote)
	}
	if local := got[rm+`localtimems{quantile="0.50",request="FetchConsumer"}`]; local >= 250 {
		t.Errorf("FetchConsumer LocalTimeMs p50 = %v ms includes the purgatory wait", local)
	}
	if total := got[rm+`totaltimems{quantile="0.999",request="FetchConsumer"}`]; total < 250 {
		t.Errorf("FetchConsumer TotalTimeMs p99.9 = %v ms, want at least the long poll", total)
	}
	if rate := sumPrefix(got, `kafka_server_quota_byte_rate{clientId="kgo",resource="Produce",`); rate <= 0 {
		t.Errorf("produce quota byte rate of client kgo = %v, want > 0 after %d produces", rate, n)
	}
	if b := got[rm+`requestbytes{quantile="0.50",request="Produce"}`]; b < 10 {
		t.Errorf("Produce RequestBytes p50 = %v", b)
	}
}

// Deleting a topic's last partition on the broker (StopReplica with delete) drops the
// topic's BrokerTopicMetrics series and keeps the broker-wide ones.
func TestBrokerTopicMetricsRemovedWithTopic(t *testing.T) {
	e := newDataEnv(t)
	reg := metrics.NewRegistry()
	e.apis.Metrics = newAPIMetrics(reg, e.apis)
	e.createTopic("gone", 2)
	e.createTopic("kept", 1)
	for _, topic := range []string{"gone", "kept"} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = valuesBatch(4, 10)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if _, err := e.handle(req); err != nil {
			t.Fatal(err)
		}
	}
	const in = "kafka_server_brokertopicmetrics_messagesin_total"
	got := requestScrape(t, reg)
	if got[in+`{topic="gone"}`] != 4 || got[in+`{topic="kept"}`] != 4 || got[in] != 8 {
		t.Fatalf("messages in before the delete: gone %v, kept %v, broker %v; want 4, 4, 8",
			got[in+`{topic="gone"}`], got[in+`{topic="kept"}`], got[in])
	}

	stop := func(partitions ...int32) {
		t.Helper()
		req := kmsg.NewPtrStopReplicaRequest()
		req.Version = 3
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
		st := kmsg.NewStopReplicaRequestTopic()
		st.Topic = "gone"
		for _, p := range partitions {
			ps := kmsg.NewStopReplicaRequestTopicPartitionState()
			ps.Partition, ps.LeaderEpoch, ps.Delete = p, -2, true
			st.PartitionStates = append(st.PartitionStates, ps)
		}
		req.Topics = []kmsg.StopReplicaRequestTopic{st}
		resp, err := e.handle(req)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.(*kmsg.StopReplicaResponse); r.ErrorCode != 0 {
			t.Fatalf("StopReplica: error %d", r.ErrorCode)
		}
	}
	stop(0) // partition 1 is still hosted: the series stay
	if _, ok := requestScrape(t, reg)[in+`{topic="gone"}`]; !ok {
		t.Fatal("topic series removed while one of its partitions is still hosted")
	}
	stop(1)
	got = requestScrape(t, reg)
	if v, ok := got[in+`{topic="gone"}`]; ok {
		t.Errorf("deleted topic's series still exported (%v)", v)
	}
	if got[in+`{topic="kept"}`] != 4 || got[in] != 8 {
		t.Errorf("after the delete: kept %v, broker %v; want 4 and 8", got[in+`{topic="kept"}`], got[in])
	}
}

// Produce v2's message sets are up-converted and Fetch v3 down-converts: both counted per
// topic in the conversion meters (KafkaApis.updateRecordConversionStats).
func TestMessageConversionMetrics(t *testing.T) {
	e := newDataEnv(t)
	reg := metrics.NewRegistry()
	e.apis.Metrics = newAPIMetrics(reg, e.apis)
	e.createTopic("old", 1)
	var set []byte
	for i := int64(0); i < 3; i++ {
		set = append(set, legacyMsg(i, 1, 0, 1700000000000+i, nil, []byte(fmt.Sprint("v", i)))...)
	}
	if p := legacyProduce(t, e, 2, "old", set); p.ErrorCode != 0 {
		t.Fatalf("produce v2: error %d", p.ErrorCode)
	}
	if p := fetchRaw(t, e, 3, "old", 0, 1<<20); p.ErrorCode != 0 {
		t.Fatalf("fetch v3: error %d", p.ErrorCode)
	}
	got := requestScrape(t, reg)
	const btm = "kafka_server_brokertopicmetrics_"
	for k, want := range map[string]float64{
		btm + `producemessageconversions_total{topic="old"}`: 3,
		btm + "producemessageconversions_total":              3,
		btm + `fetchmessageconversions_total{topic="old"}`:   3,
		btm + `messagesin_total{topic="old"}`:                3,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}

// A follower's fetch counts its record bytes as ReplicationBytesOut, not as the topic's
// BytesOut.
func TestReplicationBytesOutMetric(t *testing.T) {
	e := newDataEnv(t)
	reg := metrics.NewRegistry()
	e.apis.Metrics = newAPIMetrics(reg, e.apis)
	e.topics["r"] = [16]byte{9, 0xab}
	e.parts["r"] = 1
	e.leaderAndIsr("r", testBrokerID, []int32{testBrokerID, testBrokerID + 1})
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = 1, 5000 // acks=1: the follower has not fetched yet
	prt := kmsg.NewProduceRequestTopic()
	prt.Topic = "r"
	prp := kmsg.NewProduceRequestTopicPartition()
	prp.Records = valuesBatch(5, 10)
	prt.Partitions = append(prt.Partitions, prp)
	pr.Topics = append(pr.Topics, prt)
	presp, err := e.handle(pr)
	if err != nil {
		t.Fatal(err)
	}
	if p := presp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes = 11, testBrokerID+1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "r"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("follower fetch: error %d", p.ErrorCode)
	}
	got := requestScrape(t, reg)
	const btm = "kafka_server_brokertopicmetrics_"
	in := got[btm+`bytesin_total{topic="r"}`]
	if in == 0 || got[btm+"replicationbytesout_total"] != in {
		t.Errorf("replication bytes out %v, want the %v bytes produced", got[btm+"replicationbytesout_total"], in)
	}
	if v := got[btm+`bytesout_total{topic="r"}`]; v != 0 {
		t.Errorf("topic bytes out %v after a follower fetch only, want 0", v)
	}
}

// A real follower (its own ReplicaManager and fetcher) replicating from the leader's
// SocketServer: the follower counts ReplicationBytesIn, the leader ReplicationBytesOut and
// FetchFollower requests (also under Fetch), and no consumer bytes out.
func TestReplicationMetricsWithFollower(t *testing.T) {
	e := newDataEnv(t)
	regL := metrics.NewRegistry()
	e.apis.Metrics = newAPIMetrics(regL, e.apis)
	e.serve()
	tp := logstore.TopicPartition{Topic: "rep", Partition: 0}
	id := [16]byte{0x2e, 0x10}
	e.topics[tp.Topic], e.parts[tp.Topic] = id, 1
	replicas := []int32{1, 2}
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 0, replicas, replicas)
	e.updateMetadataWithLeader(tp.Topic, 1, replicas)
	f := newFollowerEnv(t, e)
	regF := metrics.NewRegistry()
	newAPIMetrics(regF, &APIs{Replicas: f.rm})
	lisr(t, f.rm, e.ctrlEp, id, tp, 1, 0, replicas, replicas)

	for range 5 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000 // completes once the follower has fetched
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tp.Topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = valuesBatch(2, 10)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := e.handle(req)
		if err != nil {
			t.Fatal(err)
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("acks=-1 produce: error %d", p.ErrorCode)
		}
	}
	const btm = "kafka_server_brokertopicmetrics_"
	leader, follower := requestScrape(t, regL), requestScrape(t, regF)
	in := leader[btm+`bytesin_total{topic="rep"}`]
	if in == 0 || follower[btm+"replicationbytesin_total"] != in {
		t.Errorf("follower replication bytes in %v, want the %v bytes produced", follower[btm+"replicationbytesin_total"], in)
	}
	if out := leader[btm+"replicationbytesout_total"]; out < in {
		t.Errorf("leader replication bytes out %v < %v produced", out, in)
	}
	if v := leader[btm+`bytesout_total{topic="rep"}`]; v != 0 {
		t.Errorf("consumer bytes out %v with only a follower fetching", v)
	}
	const rm = "kafka_network_requestmetrics_"
	ff, fetch := sumPrefix(leader, rm+`requests_total{request="FetchFollower",`), sumPrefix(leader, rm+`requests_total{request="Fetch",`)
	if ff == 0 || ff != fetch || sumPrefix(leader, rm+`requests_total{request="FetchConsumer",`) != 0 {
		t.Errorf("FetchFollower %v, Fetch %v: the follower's fetches are marked under both, none as a consumer's", ff, fetch)
	}
}
