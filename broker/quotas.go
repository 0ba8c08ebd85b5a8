package broker

// quotas.go mirrors kafka.server.QuotaFactory, ClientQuotaManager and
// ClientRequestQuotaManager: the broker's client quota managers for produce bytes
// (producer_byte_rate), fetch bytes (consumer_byte_rate) and request handler time
// (request_percentage), plus the controller_mutation_rate overrides the controller mutation
// quota reads. Quotas live in ZooKeeper (/config/users, /config/clients, see
// quota_entity.go for the precedence); NewQuotaManagers loads them all as
// ZkConfigManager.startup does, and EntityConfigChanged re-reads one entity when its change
// notification arrives (QuotaConfigHandler.updateQuotaConfig).
//
// A request over quota is answered at once with throttle_time_ms and its connection is then
// muted for that long (KIP-219, RequestContext.Throttle). Each quota type counts a client in
// one sensor per metric tags: a windowed Rate over quota.window.num samples of
// quota.window.size.seconds (quota_rate.go). Sensors idle for an hour are dropped, as
// Kafka's expire.
//
// Deviations: the request quota counts the handler's wall time minus the time it waited in
// a purgatory (Kafka counts request-thread time); handlers that wait elsewhere (group
// joins, topic admin waiting for the controller) count no time but are still throttled
// while the client is over its quota. No client.quota.callback.class.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// Quota config keys (QuotaConfigs).
const (
	quotaProducerByteRate  = "producer_byte_rate"
	quotaConsumerByteRate  = "consumer_byte_rate"
	quotaRequestPercentage = "request_percentage"
)

// quotaSensorExpiry is ClientQuotaManager.InactiveSensorExpirationTimeSeconds.
const quotaSensorExpiry = time.Hour

// QuotaManagers are the produce, fetch, request and controller-mutation quota managers.
type QuotaManagers struct {
	Produce *ClientQuotaManager
	Fetch   *ClientQuotaManager
	Request *ClientQuotaManager
	// ControllerMutation is the controller_mutation_rate quota (controller_mutation_quota.go).
	ControllerMutation *ControllerMutationQuotaManager

	zk  *zkmeta.Client
	log *logrus.Entry
}

// NewQuotaManagers builds the managers with cfg's quota.window.num and
// quota.window.size.seconds and, when zk is not nil, loads every client and user quota from
// ZooKeeper. Create it after ZooKeeper connects and before the listeners serve, and call
// EntityConfigChanged for each users/clients change notification.
func NewQuotaManagers(cfg *config.Config, zk *zkmeta.Client, log *logrus.Entry) (*QuotaManagers, error) {
	if cfg == nil {
		cfg = &config.Config{Props: map[string]string{}}
	}
	samples := configInt(cfg, "quota.window.num", 11)
	window := time.Duration(configInt(cfg, "quota.window.size.seconds", 1)) * time.Second
	rc := newRateConfig(samples, window)
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	log = log.WithField("component", "quotas")
	q := &QuotaManagers{
		Produce:            newClientQuotaManager("Produce", rc, 0, log),
		Fetch:              newClientQuotaManager("Fetch", rc, 0, log),
		Request:            newClientQuotaManager("Request", rc, window.Milliseconds(), log),
		ControllerMutation: NewControllerMutationQuotaManager(cfg, log),
		zk:                 zk,
		log:                log,
	}
	if zk != nil {
		if err := q.loadAll(); err != nil {
			return nil, err
		}
	}
	return q, nil
}

func configInt(cfg *config.Config, key string, def int) int {
	if cfg == nil {
		return def
	}
	if v, ok := cfg.Props[key]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// loadAll applies every stored quota: clients, users, then <user, client-id> pairs.
func (q *QuotaManagers) loadAll() error {
	clients, err := q.zk.GetAllQuotaEntityConfigs(zkmeta.ConfigTypeClient)
	if err != nil {
		return fmt.Errorf("load client quotas: %w", err)
	}
	users, err := q.zk.GetAllQuotaEntityConfigs(zkmeta.ConfigTypeUser)
	if err != nil {
		return fmt.Errorf("load user quotas: %w", err)
	}
	pairs, err := q.zk.GetAllUserClientConfigs()
	if err != nil {
		return fmt.Errorf("load user/client-id quotas: %w", err)
	}
	for _, set := range []struct {
		typ     string
		configs map[string]map[string]string
	}{{zkmeta.ConfigTypeClient, clients}, {zkmeta.ConfigTypeUser, users}, {zkmeta.ConfigTypeUser, pairs}} {
		names := make([]string, 0, len(set.configs))
		for n := range set.configs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if err := q.apply(set.typ, n, set.configs[n]); err != nil {
				q.log.WithError(err).WithFields(logrus.Fields{"entity_type": set.typ, "entity_name": n}).Warn("ignoring stored quota")
			}
		}
	}
	return nil
}

// EntityConfigChanged re-reads the quotas of /config/<entityType>/<entityName> after a
// change notification ("clients" with a sanitized client id, "users" with "<user>" or
// "<user>/clients/<client-id>"); other entity types are ignored. Failures are logged: the
// notification is not retried, as in Kafka.
func (q *QuotaManagers) EntityConfigChanged(entityType, entityName string) {
	if err := q.entityConfigChanged(entityType, entityName); err != nil {
		q.log.WithError(err).WithFields(logrus.Fields{"entity_type": entityType, "entity_name": entityName}).
			Warn("could not apply quota change")
	}
}

func (q *QuotaManagers) entityConfigChanged(entityType, entityName string) error {
	if q == nil || (entityType != zkmeta.ConfigTypeClient && entityType != zkmeta.ConfigTypeUser) {
		return nil
	}
	if q.zk == nil {
		return fmt.Errorf("quota change for %s/%s: no ZooKeeper client", entityType, entityName)
	}
	cfg, err := q.zk.GetEntityConfig(entityType, entityName)
	if err != nil {
		return fmt.Errorf("read quotas of %s/%s: %w", entityType, entityName, err)
	}
	return q.apply(entityType, entityName, cfg)
}

// apply is QuotaConfigHandler.updateQuotaConfig: each quota key present sets the entity's
// quota of that type, each absent one removes it.
func (q *QuotaManagers) apply(entityType, entityName string, cfg map[string]string) error {
	e, err := ParseQuotaEntityPath(entityType, entityName)
	if err != nil {
		return err
	}
	var firstErr error
	set := func(ents *QuotaEntities, key string, integral bool) {
		v, ok := cfg[key]
		if !ok {
			if _, had := ents.Get(e); had {
				q.log.WithFields(logrus.Fields{"quota": key, "entity": e.String()}).Info("removing quota")
			}
			ents.Remove(e)
			return
		}
		var f float64
		if integral { // Kafka parses byte rates as longs
			n, perr := strconv.ParseInt(v, 10, 64)
			f, err = float64(n), perr
		} else {
			f, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("quota %s=%q of %s: %w", key, v, e, err)
			}
			return
		}
		q.log.WithFields(logrus.Fields{"quota": key, "entity": e.String(), "value": f}).Info("changing quota")
		ents.Set(e, f)
	}
	set(q.Produce.entities, quotaProducerByteRate, true)
	set(q.Fetch.entities, quotaConsumerByteRate, true)
	set(q.Request.entities, quotaRequestPercentage, false)
	q.ControllerMutation.UpdateQuotaConfig(e, cfg)
	return firstErr
}

// ClientQuotaManager is Kafka's ClientQuotaManager for one quota type. Safe for concurrent use.
type ClientQuotaManager struct {
	quotaType string
	entities  *QuotaEntities
	cfg       rateConfig
	// maxThrottleMs caps a throttle (ClientRequestQuotaManager: one window); 0 = no cap.
	maxThrottleMs int64

	mu        sync.Mutex
	sensors   map[QuotaTags]*quotaSensor
	lastSweep int64

	// throttles and throttleMs count throttled responses (the throttle-time sensor).
	throttles  atomic.Int64
	throttleMs atomic.Int64
	log        *logrus.Entry
}

type quotaSensor struct {
	mu      sync.Mutex
	rate    windowedRate
	lastMs  int64
	version uint64 // QuotaEntities version the bound was read at
	bound   float64
}

func newClientQuotaManager(quotaType string, cfg rateConfig, maxThrottleMs int64, log *logrus.Entry) *ClientQuotaManager {
	return &ClientQuotaManager{quotaType: quotaType, entities: NewQuotaEntities(), cfg: cfg,
		maxThrottleMs: maxThrottleMs, sensors: map[QuotaTags]*quotaSensor{}, log: log.WithField("quota_type", quotaType)}
}

// Entities are this manager's quota overrides.
func (m *ClientQuotaManager) Entities() *QuotaEntities { return m.entities }

// Enabled is quotasEnabled: some level has had a quota of this type.
func (m *ClientQuotaManager) Enabled() bool { return m != nil && m.entities.Enabled() }

// ThrottleStats returns how many responses this manager throttled and their total throttle time.
func (m *ClientQuotaManager) ThrottleStats() (count int64, total time.Duration) {
	return m.throttles.Load(), time.Duration(m.throttleMs.Load()) * time.Millisecond
}

func (m *ClientQuotaManager) sensor(tags QuotaTags, nowMs int64) *quotaSensor {
	m.mu.Lock()
	defer m.mu.Unlock()
	if nowMs-m.lastSweep > time.Minute.Milliseconds() {
		m.lastSweep = nowMs
		for t, s := range m.sensors {
			s.mu.Lock()
			idle := nowMs-s.lastMs > quotaSensorExpiry.Milliseconds()
			s.mu.Unlock()
			if idle {
				delete(m.sensors, t)
			}
		}
	}
	s := m.sensors[tags]
	if s == nil {
		s = &quotaSensor{lastMs: nowMs, version: math.MaxUint64}
		m.sensors[tags] = s
	}
	return s
}

// boundLocked is the sensor's quota (Long.MaxValue-like +Inf when none), re-read when the
// overrides changed since it was last read (updateQuotaMetricConfigs).
func (m *ClientQuotaManager) boundLocked(s *quotaSensor, tags QuotaTags) float64 {
	if v := m.entities.Version(); v != s.version {
		s.version = v
		s.bound = math.Inf(1)
		if b, ok := m.entities.Limit(tags); ok {
			s.bound = b
		}
	}
	return s.bound
}

// RecordAndGetThrottleTimeMs is maybeRecordAndGetThrottleTimeMs: it counts value for the
// client (sanitized user, client id) at nowMs and returns how long to throttle it, 0 when
// within quota or when no quota of this type exists.
func (m *ClientQuotaManager) RecordAndGetThrottleTimeMs(sanitizedUser, clientID string, value float64, nowMs int64) int32 {
	if !m.Enabled() {
		return 0
	}
	return m.record(sanitizedUser, clientID, value, nowMs, true)
}

// Unrecord takes back a value recorded for a response that was then not sent
// (unrecordQuotaSensor: a throttled fetch answers empty).
func (m *ClientQuotaManager) Unrecord(sanitizedUser, clientID string, value float64, nowMs int64) {
	if m.Enabled() {
		m.record(sanitizedUser, clientID, -value, nowMs, false)
	}
}

func (m *ClientQuotaManager) record(sanitizedUser, clientID string, value float64, nowMs int64, check bool) int32 {
	tags := m.entities.MetricTags(sanitizedUser, clientID)
	s := m.sensor(tags, nowMs)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastMs = nowMs
	s.rate.record(m.cfg, value, nowMs)
	if !check {
		return 0
	}
	bound := m.boundLocked(s, tags)
	if math.IsInf(bound, 1) {
		return 0
	}
	observed := s.rate.measure(m.cfg, nowMs)
	if observed <= bound {
		return 0
	}
	t := throttleTimeMs(observed, bound, s.rate.windowSize(m.cfg, nowMs))
	if m.maxThrottleMs > 0 && t > m.maxThrottleMs {
		t = m.maxThrottleMs
	}
	if t > math.MaxInt32 {
		t = math.MaxInt32
	}
	if t > 0 && m.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		m.log.WithFields(logrus.Fields{"user": tags.User, "client_id": tags.ClientID, "rate": observed,
			"quota": bound, "throttle_ms": t}).Debug("quota violated")
	}
	return int32(max(t, 0))
}

// MaxValueInQuotaWindow is getMaxValueInQuotaWindow: the most that can be recorded at once
// without being throttled for certain, bound × (samples-1) × window; +Inf without a quota.
func (m *ClientQuotaManager) MaxValueInQuotaWindow(sanitizedUser, clientID string) float64 {
	if !m.Enabled() {
		return math.Inf(1)
	}
	_, b, ok := m.entities.Resolve(sanitizedUser, clientID)
	if !ok {
		return math.Inf(1)
	}
	return b * float64(m.cfg.samples-1) * float64(m.cfg.windowMs) / 1000
}

// throttle counts a throttled response and mutes rc's connection for ms (ThrottledChannel).
func (m *ClientQuotaManager) throttle(rc *RequestContext, ms int32) {
	if ms <= 0 {
		return
	}
	m.throttles.Add(1)
	m.throttleMs.Add(int64(ms))
	rc.Throttle(time.Duration(ms) * time.Millisecond)
}

// quotaUser is the session's sanitized user name, the user part of quota entities.
func quotaUser(rc *RequestContext) string {
	return zkmeta.SanitizeUser(rc.Principal.Name)
}

// ---- request quota (ClientRequestQuotaManager) ----

// requestQuotaExempt are the APIs Kafka answers with sendResponseExemptThrottle:
// inter-broker cluster actions.
var requestQuotaExempt = map[int16]bool{4: true, 5: true, 6: true, 7: true, 27: true, 56: true, 67: true}

// requestQuotaUntimed are the APIs whose handlers block outside a purgatory (group
// membership, topic admin waiting for the controller): their wall time is not the broker's
// work, so they record none but are still throttled while the client is over quota.
var requestQuotaUntimed = map[int16]bool{11: true, 14: true, 19: true, 20: true, 21: true, 37: true, 43: true, 45: true}

// requestQuotaState travels in the request's context while a request quota is enabled:
// the handler's start, the time it waited in a purgatory, and whether the handler already
// recorded the request (produce and fetch do it themselves, as KafkaApis).
type requestQuotaState struct {
	start    time.Time
	waited   atomic.Int64 // ns
	recorded bool
}

type requestQuotaKey struct{}

// quotaWaitStarted marks the start of a purgatory wait; call the result when it ends
// (defer quotaWaitStarted(ctx)()). A no-op without a request quota.
// The wait is also the request's RemoteTimeMs (metrics_request.go).
func quotaWaitStarted(ctx context.Context) func() {
	st, _ := ctx.Value(requestQuotaKey{}).(*requestQuotaState)
	rt := requestTimingOf(ctx)
	if st == nil && rt == nil {
		return func() {}
	}
	t := time.Now()
	return func() {
		d := int64(time.Since(t))
		if st != nil {
			st.waited.Add(d)
		}
		if rt != nil {
			rt.remote.Add(d)
		}
	}
}

// nanosToPercentage is ClientRequestQuotaManager.nanosToPercentage.
func nanosToPercentage(d time.Duration) float64 { return float64(d.Nanoseconds()) * 100 / 1e9 }

// handleWithRequestQuota runs fn and applies the request quota to its response: the
// handler's time is recorded for the client, and when over quota the response carries the
// throttle time (the longer one if the handler set its own) and the connection is muted.
func (a *APIs) handleWithRequestQuota(ctx context.Context, rc *RequestContext, req kmsg.Request, fn apiFunc) (kmsg.Response, error) {
	if a.Quotas == nil || !a.Quotas.Request.Enabled() || requestQuotaExempt[rc.APIKey] {
		return fn(a, ctx, rc, req)
	}
	st := &requestQuotaState{start: time.Now()}
	resp, err := fn(a, context.WithValue(ctx, requestQuotaKey{}, st), rc, req)
	if err != nil || resp == nil || st.recorded {
		return resp, err
	}
	if ms := a.requestThrottleMs(ctx, rc, st); ms > 0 {
		if tr, ok := resp.(kmsg.ThrottleResponse); ok {
			if cur, _ := tr.Throttle(); cur < ms {
				if s, ok := resp.(kmsg.SetThrottleResponse); ok {
					s.SetThrottle(ms)
				}
			}
		}
		a.Quotas.Request.throttle(rc, ms)
	}
	return resp, err
}

func (a *APIs) requestThrottleMs(_ context.Context, rc *RequestContext, st *requestQuotaState) int32 {
	st.recorded = true
	d := time.Since(st.start) - time.Duration(st.waited.Load())
	if requestQuotaUntimed[rc.APIKey] || d < 0 {
		d = 0
	}
	return a.Quotas.Request.RecordAndGetThrottleTimeMs(quotaUser(rc), rc.ClientID, nanosToPercentage(d), a.nowMs())
}

// requestQuotaThrottleMs is for handlers that combine the request quota with their own
// (produce, fetch): it records the request's time so far once and returns its throttle.
func (a *APIs) requestQuotaThrottleMs(ctx context.Context, rc *RequestContext) int32 {
	st, _ := ctx.Value(requestQuotaKey{}).(*requestQuotaState)
	if st == nil || st.recorded {
		return 0
	}
	return a.requestThrottleMs(ctx, rc, st)
}
