package broker

// metrics_request.go — kafka.network RequestMetrics (per request type) and RequestChannel
// (queue sizes), as RequestChannel.Request.updateRequestMetrics marks them once a response
// is sent. samsa serves each connection on its own goroutine (conn.go), which reads a
// request, handles it and writes the response itself, so Kafka's phases map as:
//
//   - RequestQueueTimeMs: received → handler called (decoding only; there is no queue of
//     requests waiting for a handler thread);
//   - LocalTimeMs: the handler's time, minus RemoteTimeMs;
//   - RemoteTimeMs: time parked in purgatory (DelayedProduce acks=-1, DelayedFetch
//     min.bytes), measured by the waits themselves (quotaWaitStarted in quotas.go);
//   - ResponseQueueTimeMs: 0 — no response queue, the handler's goroutine writes;
//   - ResponseSendTimeMs: encoding and writing the response;
//   - TotalTimeMs: received → written.
//
// Times are in milliseconds with microsecond precision (Kafka rounds to whole ms).

import (
	"context"
	"math"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/metrics"
)

// apiKeyNames are ApiKeys' names (the request label), from Kafka's message definitions;
// kmsg spells a few differently (InitProducerID, LeaderAndISR...).
var apiKeyNames = [...]string{"Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica",
	"UpdateMetadata", "ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup",
	"Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions",
	"CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch",
	"AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "DescribeAcls",
	"CreateAcls", "DeleteAcls", "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs",
	"SaslAuthenticate", "CreatePartitions", "CreateDelegationToken", "RenewDelegationToken",
	"ExpireDelegationToken", "DescribeDelegationToken", "DeleteGroups", "ElectLeaders",
	"IncrementalAlterConfigs", "AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete",
	"DescribeClientQuotas", "AlterClientQuotas", "DescribeUserScramCredentials", "AlterUserScramCredentials",
	"Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "AlterPartition", "UpdateFeatures",
	"Envelope", "FetchSnapshot", "DescribeCluster", "DescribeProducers", "BrokerRegistration",
	"BrokerHeartbeat", "UnregisterBroker", "DescribeTransactions", "ListTransactions", "AllocateProducerIds",
	"ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ControllerRegistration"}

const (
	numAPIKeys       = len(apiKeyNames)
	maxMetricVersion = 20
	// Error codes -1..maxErrorCode get their own ErrorsPerSec series; others count as
	// UNKNOWN_SERVER_ERROR, as Errors.forCode does.
	maxErrorCode = 130
	// Fetch is marked under FetchConsumer or FetchFollower as well as Fetch (RequestMetrics).
	fetchConsumerIdx = numAPIKeys
	fetchFollowerIdx = numAPIKeys + 1
	numRequestNames  = numAPIKeys + 2
)

// requestName is the request label of index i (an API key, or the two Fetch splits).
func requestName(i int) string {
	switch i {
	case fetchConsumerIdx:
		return "FetchConsumer"
	case fetchFollowerIdx:
		return "FetchFollower"
	}
	return apiKeyNames[i]
}

// errorName is Errors' name for code (kerr's, but for NOT_LEADER_OR_FOLLOWER, renamed in
// Kafka 2.6).
func errorName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case kerr.NotLeaderForPartition.Code:
		return "NOT_LEADER_OR_FOLLOWER"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "UNKNOWN_SERVER_ERROR"
}

type counterRef struct{ c prometheus.Counter }

// requestMetrics holds RequestMetrics for every request name. Label children are resolved
// once and cached in arrays, so marking a request takes no map lookup or allocation
// beyond the histograms'.
type requestMetrics struct {
	requests *prometheus.CounterVec // RequestsPerSec{request,version}
	errors   *prometheus.CounterVec // ErrorsPerSec{request,error}

	// hists are the histograms of each request name, created on its first request.
	hists [numRequestNames]atomic.Pointer[requestHists]

	rates [numRequestNames][maxMetricVersion + 1]atomic.Pointer[counterRef]
	errs  [numAPIKeys][maxErrorCode + 2]atomic.Pointer[counterRef]

	// inHandler counts requests read and not yet handled, writing responses handled and
	// not yet written (RequestQueueSize, ResponseQueueSize).
	inHandler, writing atomic.Int64
}

func newRequestMetrics(reg *metrics.Registry) *requestMetrics {
	m := &requestMetrics{
		requests: reg.Meter("network", "RequestMetrics", "RequestsPerSec", "Requests answered, by request type and version", "request", "version"),
		errors:   reg.Meter("network", "RequestMetrics", "ErrorsPerSec", "Error codes in responses (NONE included), by request type, as the response's errorCounts", "request", "error"),
	}
	for i, h := range requestHistNames {
		reg.GaugeSet("network", "RequestMetrics", h.name, h.help+" (percentiles of the last "+strconv.Itoa(histWindow)+" requests)",
			[]string{"request", "quantile"}, func(emit func(metrics.Sample)) { m.emitQuantiles(i, emit) })
		reg.HistogramCountSet("network", "RequestMetrics", h.name, h.help,
			[]string{"request"}, func(emit func(metrics.Sample)) { m.emitCounts(i, emit) })
	}
	reg.GaugeFunc("network", "RequestChannel", "RequestQueueSize",
		"Requests read and not yet handled (samsa handles each connection's request on its own goroutine: requests in handlers, not queued)",
		func() float64 { return float64(m.inHandler.Load()) })
	reg.GaugeFunc("network", "RequestChannel", "ResponseQueueSize",
		"Responses handled and not yet fully written (samsa has no response queue: responses being written)",
		func() float64 { return float64(m.writing.Load()) })
	return m
}

func (m *requestMetrics) rate(idx int, version int16) prometheus.Counter {
	v := int(version)
	if v < 0 || v > maxMetricVersion {
		return m.requests.WithLabelValues(requestName(idx), strconv.Itoa(v))
	}
	slot := &m.rates[idx][v]
	if r := slot.Load(); r != nil {
		return r.c
	}
	r := &counterRef{m.requests.WithLabelValues(requestName(idx), strconv.Itoa(v))}
	slot.CompareAndSwap(nil, r)
	return slot.Load().c
}

func (m *requestMetrics) errorCounter(key int16, code int16) prometheus.Counter {
	i := int(code) + 1
	if i < 0 || i > maxErrorCode+1 || errorName(code) == "UNKNOWN_SERVER_ERROR" {
		code, i = kerr.UnknownServerError.Code, 0
	}
	slot := &m.errs[key][i]
	if r := slot.Load(); r != nil {
		return r.c
	}
	r := &counterRef{m.errors.WithLabelValues(apiKeyNames[key], errorName(code))}
	slot.CompareAndSwap(nil, r)
	return slot.Load().c
}

// requestTiming is a connection's per-request record of purgatory time, found through the
// context by the waits (quotaWaitStarted), and of message conversions (produce_legacy.go,
// fetch_downconvert.go), as RequestChannel.Request's messageConversionsTimeNanos and
// temporaryMemoryBytes.
type requestTiming struct {
	remote                  atomic.Int64
	convNanos, convTmpBytes atomic.Int64
}

// addConversion records a conversion's time and temporary memory; t may be nil.
func (t *requestTiming) addConversion(nanos, tmpBytes int64) {
	if t == nil {
		return
	}
	t.convNanos.Add(nanos)
	t.convTmpBytes.Add(tmpBytes)
}

type requestTimingKey struct{}

func requestTimingOf(ctx context.Context) *requestTiming {
	t, _ := ctx.Value(requestTimingKey{}).(*requestTiming)
	return t
}

// connRequestMetrics is one connection's request in flight; a nil one (metrics off) marks
// nothing. Only the connection's goroutine uses it.
type connRequestMetrics struct {
	m                           *requestMetrics
	timing                      requestTiming
	received, dequeued, apiDone time.Time
}

// connRequestMetricsFor returns ctx carrying the connection's timing and its recorder, or
// ctx and nil when h has no metrics. Called once per connection.
func connRequestMetricsFor(ctx context.Context, h Handler) (context.Context, *connRequestMetrics) {
	a, ok := h.(*APIs)
	if !ok || a.Metrics == nil || a.Metrics.requests == nil {
		return ctx, nil
	}
	c := &connRequestMetrics{m: a.Metrics.requests}
	return context.WithValue(ctx, requestTimingKey{}, &c.timing), c
}

// begin is called as the handler is called for a request read at received.
func (c *connRequestMetrics) begin(received time.Time) {
	if c == nil {
		return
	}
	c.received, c.dequeued = received, time.Now()
	c.timing.remote.Store(0)
	c.timing.convNanos.Store(0)
	c.timing.convTmpBytes.Store(0)
	c.m.inHandler.Add(1)
}

// handled is called when the handler returned; the response write starts now.
func (c *connRequestMetrics) handled() {
	if c == nil {
		return
	}
	c.apiDone = time.Now()
	c.m.inHandler.Add(-1)
	c.m.writing.Add(1)
}

// done is called once the response is written (or none is sent, or the connection is
// closed after the request): it marks the request's RequestMetrics.
func (c *connRequestMetrics) done(rc *RequestContext, req kmsg.Request, resp kmsg.Response) {
	if c == nil {
		return
	}
	end := time.Now()
	m := c.m
	m.writing.Add(-1)
	key := rc.APIKey
	if key < 0 || int(key) >= numAPIKeys {
		return
	}
	remote := time.Duration(c.timing.remote.Load())
	local := c.apiDone.Sub(c.dequeued) - remote
	idx := [2]int{int(key), -1}
	if fr, ok := req.(*kmsg.FetchRequest); ok {
		idx[1] = fetchConsumerIdx
		if fetchReplicaID(fr) >= 0 {
			idx[1] = fetchFollowerIdx
		}
	}
	sample := [numRequestHists]float32{
		histRequestQueueTime:  ms(c.dequeued.Sub(c.received)),
		histLocalTime:         ms(local),
		histRemoteTime:        ms(remote),
		histThrottleTime:      float32(rc.muteFor.Milliseconds()),
		histResponseQueueTime: 0,
		histResponseSendTime:  ms(end.Sub(c.apiDone)),
		histTotalTime:         ms(end.Sub(c.received)),
		histRequestBytes:      float32(rc.Size),
		histConversionsTime:   ms(time.Duration(c.timing.convNanos.Load())),
		histTemporaryMemory:   float32(c.timing.convTmpBytes.Load()),
	}
	for _, i := range idx {
		if i < 0 {
			continue
		}
		m.rate(i, rc.APIVersion).Inc()
		m.histsFor(i).observe(&sample)
	}
	if resp != nil {
		forEachErrorCode(resp, func(code int16, n int) { m.errorCounter(key, code).Add(float64(n)) })
	}
}

func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// ms is d in milliseconds, microsecond precision, never negative.
func ms(d time.Duration) float32 {
	if d < 0 {
		return 0
	}
	return float32(d.Microseconds()) / 1000
}

// The RequestMetrics histograms, in requestHists' order; the last two exist for Produce and
// Fetch only (hasHist).
const (
	histRequestQueueTime = iota
	histLocalTime
	histRemoteTime
	histThrottleTime
	histResponseQueueTime
	histResponseSendTime
	histTotalTime
	histRequestBytes
	histConversionsTime
	histTemporaryMemory
	numRequestHists
)

// hasHist reports whether request name i has histogram hist: RequestMetrics creates
// MessageConversionsTimeMs and TemporaryMemoryBytes only for the names Produce and Fetch
// (not FetchConsumer/FetchFollower).
func hasHist(i, hist int) bool {
	if hist == histConversionsTime || hist == histTemporaryMemory {
		return i == 0 || i == 1 // ApiKeys PRODUCE, FETCH
	}
	return true
}

var requestHistNames = [numRequestHists]struct{ name, help string }{
	{"RequestQueueTimeMs", "Time from a request's last byte read to its handler starting (decoding; samsa has no request queue)"},
	{"LocalTimeMs", "Time the handler worked on a request, purgatory waits excluded"},
	{"RemoteTimeMs", "Time a request waited in purgatory (acks=-1 produce, fetch min.bytes)"},
	{"ThrottleTimeMs", "Quota throttle time given to the request's client"},
	{"ResponseQueueTimeMs", "Time from the handler's end to the response write starting (0: the connection's goroutine writes at once)"},
	{"ResponseSendTimeMs", "Time to encode and write the response"},
	{"TotalTimeMs", "Time from a request's last byte read to its response written"},
	{"RequestBytes", "Request sizes in bytes, header included"},
	{"MessageConversionsTimeMs", "Time spent converting message formats for the request (Produce v0-v2 up-conversion, Fetch v0-v3 down-conversion)"},
	{"TemporaryMemoryBytes", "Memory allocated for the request's message-format conversions"},
}

// histWindow is how many recent requests the percentiles cover per request name: Yammer's
// reservoir size (1028), as a sliding window rather than exponentially decaying.
const histWindow = 1028

// requestHists are one request name's histograms: a ring of the last histWindow samples
// each, under one lock, so a request costs one lock and ten stores (a Prometheus summary
// costs about a microsecond per observation, ten per request).
type requestHists struct {
	mu    sync.Mutex
	count uint64
	ring  [histWindow][numRequestHists]float32
}

func (m *requestMetrics) histsFor(i int) *requestHists {
	if h := m.hists[i].Load(); h != nil {
		return h
	}
	m.hists[i].CompareAndSwap(nil, new(requestHists))
	return m.hists[i].Load()
}

func (h *requestHists) observe(s *[numRequestHists]float32) {
	h.mu.Lock()
	h.ring[h.count%histWindow] = *s
	h.count++
	h.mu.Unlock()
}

// histQuantiles are Yammer's percentiles with the exporter's label values.
var histQuantiles = [...]struct {
	q     float64
	label string
}{{0.50, "0.50"}, {0.75, "0.75"}, {0.95, "0.95"}, {0.98, "0.98"}, {0.99, "0.99"}, {0.999, "0.999"}}

func (m *requestMetrics) emitQuantiles(hist int, emit func(metrics.Sample)) {
	var vals []float64
	for i := range m.hists {
		h := m.hists[i].Load()
		if h == nil || !hasHist(i, hist) {
			continue
		}
		h.mu.Lock()
		n := int(min(h.count, histWindow))
		vals = vals[:0]
		for j := 0; j < n; j++ {
			vals = append(vals, float64(h.ring[j][hist]))
		}
		h.mu.Unlock()
		sort.Float64s(vals)
		name := requestName(i)
		for _, q := range histQuantiles {
			v := 0.0
			if n > 0 { // Yammer's Snapshot.getValue: interpolated at q*(n+1)
				pos := q.q * float64(n+1)
				switch {
				case pos < 1:
					v = vals[0]
				case pos >= float64(n):
					v = vals[n-1]
				default:
					lo := vals[int(pos)-1]
					v = lo + (pos-math.Floor(pos))*(vals[int(pos)]-lo)
				}
			}
			emit(metrics.Sample{LabelValues: []string{name, q.label}, Value: v})
		}
	}
}

func (m *requestMetrics) emitCounts(hist int, emit func(metrics.Sample)) {
	for i := range m.hists {
		if h := m.hists[i].Load(); h != nil && hasHist(i, hist) {
			h.mu.Lock()
			n := h.count
			h.mu.Unlock()
			emit(metrics.Sample{LabelValues: []string{requestName(i)}, Value: float64(n)})
		}
	}
}

// forEachErrorCode calls fn with the error codes of resp and their counts, as Kafka's
// AbstractResponse.errorCounts: Produce and Fetch (the hot paths) per partition (Fetch
// with its top-level code); other responses every ErrorCode field in them, found by
// reflection.
func forEachErrorCode(resp kmsg.Response, fn func(code int16, n int)) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		none := 0
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					fn(c, 1)
				} else {
					none++
				}
			}
		}
		if none > 0 {
			fn(0, none)
		}
	case *kmsg.FetchResponse:
		none := 0
		if r.ErrorCode != 0 {
			fn(r.ErrorCode, 1)
		} else {
			none++
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					fn(c, 1)
				} else {
					none++
				}
			}
		}
		fn(0, none)
	default:
		counts := map[int16]int{}
		walkErrorCodes(reflect.ValueOf(resp), counts)
		if len(counts) == 0 {
			counts[0] = 1 // e.g. Envelope-less responses with no codes: one NONE, as most of Kafka's
		}
		for c, n := range counts {
			fn(c, n)
		}
	}
}

// errorCodeFields caches, per struct type, the indexes of its ErrorCode field (-1: none)
// and of its slice and struct fields to descend into.
var errorCodeFields sync.Map // reflect.Type → *errorCodeLayout

type errorCodeLayout struct {
	code   int
	nested []int
}

func layoutOf(t reflect.Type) *errorCodeLayout {
	if l, ok := errorCodeFields.Load(t); ok {
		return l.(*errorCodeLayout)
	}
	l := &errorCodeLayout{code: -1}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			l.code = i
		case f.Type.Kind() == reflect.Struct, f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			l.nested = append(l.nested, i)
		}
	}
	errorCodeFields.Store(t, l)
	return l
}

func walkErrorCodes(v reflect.Value, counts map[int16]int) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkErrorCodes(v.Elem(), counts)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkErrorCodes(v.Index(i), counts)
		}
	case reflect.Struct:
		l := layoutOf(v.Type())
		if l.code >= 0 {
			counts[int16(v.Field(l.code).Int())]++
		}
		for _, i := range l.nested {
			walkErrorCodes(v.Field(i), counts)
		}
	}
}
