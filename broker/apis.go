package broker

// apis.go mirrors kafka.server.KafkaApis: one dispatcher (APIs) that routes each decoded
// request to the handler registered for its API key. Handlers live in one file per key
// (00_produce.go, 19_create_topics.go, ...) and register their version range at init, so
// ApiVersions is computed from the registry and never hand-kept.
//
// How to add a handler:
//
//	// 19_create_topics.go — CreateTopics v0-7. Deviations: none.
//	func init() { registerAPI(0, 7, (*APIs).handleCreateTopics) }
//
//	func (a *APIs) handleCreateTopics(ctx context.Context, rc *RequestContext,
//		req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
//		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
//		...
//		return resp, nil
//	}
//
// The API key comes from the request type, so it cannot disagree with the handler. The
// dispatcher has already checked rc.APIVersion against [minV, maxV] and set it on req and on
// the response that req.ResponseKind() returns. Return (nil, nil) only when Kafka sends no
// response (acks=0 produce); return an error only to close the connection (Kafka does that
// for a few protocol violations); everything else is an error code inside the response.
// Then add a request builder for the key to the table in apis_test.go
// (TestEveryAdvertisedVersionRoundTrips fails for keys without one).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/acl"
)

// Handler serves one decoded request. The SocketServer calls it from the connection's
// goroutine, one request at a time per connection. A nil response with a nil error means
// "send nothing" (acks=0 produce); an error closes the connection. The request's byte
// slices (produce records...) alias the connection's read buffer, which is reused for the
// next request: copy what must outlive Handle.
type Handler interface {
	Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)
}

// RequestContext is Kafka's RequestContext: what the header and the connection say about
// one request. Built by the SocketServer per request; read-only for handlers.
type RequestContext struct {
	ClientID      string // null client id reads as "" as in Kafka
	CorrelationID int32
	APIKey        int16
	APIVersion    int16
	HeaderVersion int16 // request header version: 1 or 2 (0 only for ControlledShutdown v0)
	RemoteAddr    net.Addr
	ListenerName  string // e.g. PLAINTEXT; Metadata answers with this listener's endpoints
	// Principal is who the connection authenticated as: User:ANONYMOUS on PLAINTEXT.
	Principal security.Principal
	Received  time.Time
	Log       *logrus.Entry // per-connection entry with client and request fields
	// Size is the request's size in bytes, header included (Kafka's request.sizeInBytes,
	// what the produce quota counts); 0 when the request did not come off a connection.
	Size int32

	// muteFor is how long the connection reads no further request after this one's
	// response (a quota's throttle time, KIP-219); set it with Throttle.
	muteFor time.Duration

	// zeroCopy is set by the socket server for Fetch on plain TCP: the handler leaves
	// record bytes out of the response and parks their file regions here (zerocopy.go).
	zeroCopy *zeroCopyFetch
}

// Throttle mutes the connection for d once the response is sent, as Kafka does with a
// throttled client's channel (KIP-219); the longest of several calls wins.
func (rc *RequestContext) Throttle(d time.Duration) {
	if d > rc.muteFor {
		rc.muteFor = d
	}
}

// apiFunc is the type-erased form of a registered handler.
type apiFunc func(a *APIs, ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)

type apiEntry struct {
	key        int16
	minV, maxV int16
	fn         apiFunc
}

// registry is filled by init functions of the per-API files and read-only afterwards.
var registry = map[int16]apiEntry{}

// registerAPI registers the handler for the API key of Req with the versions [minV, maxV]
// this broker serves. Call it from init. It panics on a duplicate key or a range kmsg
// cannot encode: both are programming errors found by any test run.
func registerAPI[Req kmsg.Request](minV, maxV int16, fn func(a *APIs, ctx context.Context, rc *RequestContext, req Req) (kmsg.Response, error)) {
	var zero Req // a nil pointer: Key and MaxVersion do not dereference it
	key := zero.Key()
	if _, dup := registry[key]; dup {
		panic(fmt.Sprintf("broker: API key %d registered twice", key))
	}
	if minV < 0 || minV > maxV || maxV > zero.MaxVersion() {
		panic(fmt.Sprintf("broker: API key %d: bad version range [%d, %d] (kmsg max %d)", key, minV, maxV, zero.MaxVersion()))
	}
	registry[key] = apiEntry{key: key, minV: minV, maxV: maxV, fn: func(a *APIs, ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
		return fn(a, ctx, rc, req.(Req))
	}}
}

// SupportedVersions returns the served [min, max] of key, or ok=false if no handler exists.
func SupportedVersions(key int16) (minV, maxV int16, ok bool) {
	e, ok := registry[key]
	return e.minV, e.maxV, ok
}

// supportedAPIs lists every registered API sorted by key, as ApiVersions reports them.
func supportedAPIs() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(registry))
	for _, e := range registry {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = e.key, e.minV, e.maxV
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

// errUnsupportedAPI is returned by Handle for a key or version outside the registry; the
// SocketServer normally rejects those before decoding, so this is a safety net.
var errUnsupportedAPI = errors.New("broker: unsupported API key or version")

// APIs is KafkaApis: the dispatcher and the dependencies every handler may use. Fields are
// set before the SocketServer starts and not changed afterwards, so handlers read them
// without locks; the components they point to have their own concurrency contracts.
type APIs struct {
	Config   *config.Config
	BrokerID int32
	// ClusterID is the /cluster/id value, reported by Metadata v2+ and DescribeCluster.
	ClusterID string
	Replicas  *ReplicaManager
	Metadata  *MetadataCache
	Log       *logrus.Entry
	// Now is the clock for purgatory timers and log append time; time.Now if nil.
	Now func() time.Time

	// Hooks filled by KafkaServer (broker.go). A nil hook means "not available".

	// AutoCreateTopic creates topic with the broker defaults (num.partitions,
	// default.replication.factor) as Kafka's AutoTopicCreationManager does in ZK mode: it
	// computes the assignment and writes the topic znode. It returns the creation error
	// (e.g. INVALID_REPLICATION_FACTOR as a *kerr.Error, or zkmeta.ErrTopicExists).
	AutoCreateTopic func(ctx context.Context, topic string) error
	// IsController reports whether this broker is the active controller (Ctl APIs).
	IsController func() bool
	// Admin holds whatever the admin/controller-facing handlers need (ZooKeeper client,
	// controller, broker epoch...). broker.go stores a value of its own type here and type-asserts
	// it in its handlers, so this file does not depend on packages still being written.
	Admin any
	// Authorizer checks every request when authorizer.class.name is set; nil allows all, as
	// Kafka without an authorizer does. Read it through a.authorizer-style helpers (authz.go).
	Authorizer acl.Authorizer
	// DynamicConfig is the broker's live configuration (static file + /config/brokers);
	// nil in tests that build APIs by hand, where Config is all there is. Read it through
	// a.config().
	DynamicConfig *DynamicBrokerConfig
	// Quotas are the client quota managers (produce, fetch, request, controller mutation);
	// nil means no quotas.
	Quotas *QuotaManagers
	// Conversions counts message-format conversions (conversion_stats.go).
	Conversions ConversionStats
	// Features is the finalized feature cache fed by /feature (features.go); nil reports
	// none (epoch -1).
	Features *FeatureCache
	// Metrics are the meters the handlers mark (metrics_api.go); nil marks nothing.
	Metrics *apiMetrics

	services services // started on first use: group coordinator, producer id manager
}

// NewAPIs returns a dispatcher; set the exported hooks before serving.
func NewAPIs(cfg *config.Config, brokerID int32, clusterID string, rm *ReplicaManager, mc *MetadataCache, log *logrus.Entry) *APIs {
	return &APIs{Config: cfg, BrokerID: brokerID, ClusterID: clusterID, Replicas: rm, Metadata: mc, Log: log}
}

// config is the broker's current configuration, dynamic updates included.
func (a *APIs) config() *config.Config {
	if a.DynamicConfig != nil {
		if c := a.DynamicConfig.Current(); c != nil {
			return c
		}
	}
	return a.Config
}

func (a *APIs) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Handle implements Handler by dispatching on the request's API key.
func (a *APIs) Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	e, ok := registry[req.Key()]
	if !ok || req.GetVersion() < e.minV || req.GetVersion() > e.maxV {
		return nil, fmt.Errorf("%w: key %d version %d", errUnsupportedAPI, req.Key(), req.GetVersion())
	}
	return a.handleWithRequestQuota(ctx, rc, req, e.fn)
}
