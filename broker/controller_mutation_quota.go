package broker

// controller_mutation_quota.go mirrors kafka.server.ControllerMutationQuotaManager: the
// controller_mutation_rate quota of a (user, client-id), in partitions created or deleted per
// second, on CreateTopics, CreatePartitions and DeleteTopics. Each sensor is a token bucket
// (Kafka's TokenBucket) holding at most controller.quota.window.num ×
// controller.quota.window.size.seconds × rate tokens and refilled at the rate; a mutation
// takes one token per partition.
//
//   - Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a topic whose turn
//     comes while the bucket is in debt is refused with THROTTLING_QUOTA_EXCEEDED; a topic
//     seen with the bucket not in debt is accepted whatever its size (the bucket may go
//     negative).
//   - Permissive (older versions): every mutation is accepted; the client is throttled once
//     the bucket is in debt.
//
// Either way the response carries throttle_time_ms (the time for the bucket to refill to
// zero) and the connection is muted for that long (KIP-219). The quota that applies and the
// sensor that counts are resolved through QuotaEntities (quota_entity.go), the same
// eight-level precedence as the other client quotas.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/controller"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// ControllerMutationRateConfig is QuotaConfigs.CONTROLLER_MUTATION_RATE_OVERRIDE_CONFIG, a
// user and client-id quota (DOUBLE).
const ControllerMutationRateConfig = "controller_mutation_rate"

// throttlingQuotaExceededMessage is Errors.THROTTLING_QUOTA_EXCEEDED's message, which a
// refused topic carries.
const throttlingQuotaExceededMessage = "The throttling quota has been exceeded."

// mutationSensorExpiration is ClientQuotaManager.InactiveSensorExpirationTimeSeconds.
const mutationSensorExpiration = time.Hour

// ControllerMutationQuotaManager is safe for concurrent use.
type ControllerMutationQuotaManager struct {
	entities *QuotaEntities
	samples  int
	windowMs int64
	now      func() time.Time
	log      *logrus.Entry

	mu        sync.Mutex
	buckets   map[QuotaTags]*tokenBucket
	lastPurge time.Time
}

// tokenBucket is Kafka's TokenBucket stat; guarded by the manager's mu.
type tokenBucket struct {
	tokens       float64
	lastUpdateMs int64
	lastUsed     time.Time
}

// NewControllerMutationQuotaManager uses controller.quota.window.num and
// controller.quota.window.size.seconds of cfg. Quotas come in through UpdateQuotaConfig as
// /config/users and /config/clients change (QuotaManagers.EntityConfigChanged).
func NewControllerMutationQuotaManager(cfg *config.Config, log *logrus.Entry) *ControllerMutationQuotaManager {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	windowSec := connPropInt(cfg.Props, "controller.quota.window.size.seconds", 1)
	return &ControllerMutationQuotaManager{
		entities: NewQuotaEntities(),
		samples:  max(connPropInt(cfg.Props, "controller.quota.window.num", 11), 1),
		windowMs: int64(max(windowSec, 1)) * 1000,
		now:      time.Now,
		log:      log.WithField("component", "controller.mutation.quota"),
		buckets:  map[QuotaTags]*tokenBucket{},
	}
}

// Entities are the controller_mutation_rate overrides by entity.
func (m *ControllerMutationQuotaManager) Entities() *QuotaEntities { return m.entities }

// UpdateQuotaConfig applies an entity's config as read from ZooKeeper (QuotaConfigHandler):
// its controller_mutation_rate, or none when the key is absent. Any change enables the
// quota type, as ClientQuotaManager.updateQuota does.
func (m *ControllerMutationQuotaManager) UpdateQuotaConfig(e QuotaEntity, cfg map[string]string) {
	v, ok := cfg[ControllerMutationRateConfig]
	if !ok {
		if _, had := m.entities.Get(e); had {
			m.log.WithField("entity", e.String()).Info("Removing controller mutation quota")
		}
		m.entities.Remove(e)
		return
	}
	rate, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		m.log.WithError(err).WithField("entity", e.String()).Warn("invalid controller_mutation_rate; ignored")
		return
	}
	m.log.WithFields(logrus.Fields{"entity": e.String(), "rate": rate}).Info("Changing controller mutation quota")
	m.entities.Set(e, rate)
}

// controllerMutationQuota is Kafka's ControllerMutationQuota for one request.
type controllerMutationQuota interface {
	// record takes permits (partitions); a strict quota in debt refuses them with a
	// THROTTLING_QUOTA_EXCEEDED *apiError and takes nothing.
	record(permits float64) error
	// throttleTime is the throttle the request earned, less the time since it was computed.
	throttleTime() time.Duration
}

// unboundedMutationQuota is UnboundedControllerMutationQuota: quotas disabled.
type unboundedMutationQuota struct{}

func (unboundedMutationQuota) record(float64) error        { return nil }
func (unboundedMutationQuota) throttleTime() time.Duration { return 0 }

// newQuotaFor is ControllerMutationQuotaManager.newQuotaFor: strict from strictSinceVersion
// on, permissive before, unbounded while no controller mutation quota was ever set. m may
// be nil (no quotas).
func (m *ControllerMutationQuotaManager) newQuotaFor(rc *RequestContext, strictSinceVersion int16) controllerMutationQuota {
	if m == nil || !m.entities.Enabled() {
		return unboundedMutationQuota{}
	}
	tags := m.entities.MetricTags(zkmeta.SanitizeUser(rc.Principal.Name), rc.ClientID)
	if _, ok := m.entities.Limit(tags); !ok {
		return unboundedMutationQuota{} // Kafka's bound is then Long.MaxValue
	}
	return &mutationQuota{m: m, tags: tags, strict: rc.APIVersion >= strictSinceVersion}
}

// mutationQuota is StrictControllerMutationQuota or PermissiveControllerMutationQuota.
type mutationQuota struct {
	m              *ControllerMutationQuotaManager
	tags           QuotaTags
	strict         bool
	lastThrottleMs int64
	lastRecordedMs int64
}

func (q *mutationQuota) record(permits float64) error {
	throttleMs, refused := q.m.record(q.tags, permits, q.strict)
	if throttleMs > 0 || refused {
		q.lastThrottleMs, q.lastRecordedMs = throttleMs, q.m.now().UnixMilli()
	}
	if refused {
		return &apiError{code: kerr.ThrottlingQuotaExceeded, msg: throttlingQuotaExceededMessage}
	}
	return nil
}

func (q *mutationQuota) throttleTime() time.Duration {
	if q.lastThrottleMs <= 0 {
		return 0
	}
	left := q.lastThrottleMs - (q.m.now().UnixMilli() - q.lastRecordedMs)
	return time.Duration(max(left, 0)) * time.Millisecond
}

// record charges permits to the sensor of tags. Strict: checkQuotas first (a bucket in debt
// refuses, returning the time to refill to zero), then record. Permissive: record, then
// report the throttle if the bucket went into debt.
func (m *ControllerMutationQuotaManager) record(tags QuotaTags, permits float64, strict bool) (throttleMs int64, refused bool) {
	bound, ok := m.entities.Limit(tags)
	if !ok { // Kafka's bound is then Long.MaxValue: never in debt
		return 0, false
	}
	now := m.now()
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	b, ok := m.buckets[tags]
	if !ok {
		b = &tokenBucket{}
		m.buckets[tags] = b
	}
	b.lastUsed = now
	burst := float64(m.samples) * float64(m.windowMs) / 1000 * bound
	b.refill(bound, burst, nowMs)
	if strict && b.tokens < 0 {
		return debtThrottleMs(b.tokens, bound), true
	}
	b.tokens = min(burst, b.tokens-permits)
	if !strict && b.tokens < 0 {
		return debtThrottleMs(b.tokens, bound), false
	}
	return 0, false
}

// refill is TokenBucket.refill; a new bucket (lastUpdateMs 0) starts full.
func (b *tokenBucket) refill(rate, burst float64, nowMs int64) {
	b.tokens = min(burst, b.tokens+rate*float64(nowMs-b.lastUpdateMs)/1000)
	b.lastUpdateMs = nowMs
}

// debtThrottleMs is ControllerMutationQuotaManager.throttleTimeMs: the time for the bucket
// to refill from tokens (< 0) to zero at rate.
func debtThrottleMs(tokens, rate float64) int64 {
	if rate <= 0 {
		return int64(1<<31 - 1)
	}
	return int64(-tokens/rate*1000 + 0.5)
}

// purgeLocked drops sensors idle for an hour, at most once a minute.
func (m *ControllerMutationQuotaManager) purgeLocked(now time.Time) {
	if now.Sub(m.lastPurge) < time.Minute {
		return
	}
	m.lastPurge = now
	for t, b := range m.buckets {
		if now.Sub(b.lastUsed) > mutationSensorExpiration {
			delete(m.buckets, t)
		}
	}
}

// controllerMutationQuotas is the broker's manager, nil without quotas.
func (a *APIs) controllerMutationQuotas() *ControllerMutationQuotaManager {
	if a.Quotas == nil {
		return nil
	}
	return a.Quotas.ControllerMutation
}

// throttleControllerMutation is RequestHandlerHelper.sendResponseMaybeThrottleWithControllerQuota's
// controller part: the response's throttle time is the larger of what it already carries
// (the request quota) and the mutation quota's, and the connection is muted that long.
func throttleControllerMutation(rc *RequestContext, q controllerMutationQuota, throttleMs *int32) {
	d := q.throttleTime()
	if d <= 0 {
		return
	}
	if ms := int32(min(d.Milliseconds(), int64(1<<31-1))); ms > *throttleMs {
		*throttleMs = ms
	}
	rc.Throttle(time.Duration(*throttleMs) * time.Millisecond)
}

// createTopicWithQuota is ZkAdminManager.createTopics' order for one topic: validate, then
// charge the quota one permit per partition, then create. A topic refused by the quota is
// neither created nor charged; validate_only charges nothing.
func (ad *adminState) createTopicWithQuota(spec topicSpec, validateOnly bool, brokers []controller.BrokerMetadata, q controllerMutationQuota) (createdTopic, error) {
	if _, unbounded := q.(unboundedMutationQuota); unbounded || validateOnly {
		return ad.createTopic(spec, validateOnly, brokers)
	}
	v, err := ad.createTopic(spec, true, brokers)
	if err != nil {
		return v, err
	}
	if err := q.record(float64(len(v.Assignment))); err != nil {
		return createdTopic{}, err
	}
	return ad.createTopic(spec, false, brokers)
}

// createPartitionsWithQuota is ZkAdminManager.createPartitions' order for one topic:
// validate, charge one permit per new partition, then write.
func (ad *adminState) createPartitionsWithQuota(t kmsg.CreatePartitionsRequestTopic, validateOnly bool, q controllerMutationQuota) ([]int32, error) {
	if _, unbounded := q.(unboundedMutationQuota); unbounded || validateOnly {
		return ad.createPartitions(t, validateOnly)
	}
	if _, err := ad.createPartitions(t, true); err != nil {
		return nil, err
	}
	existing, _, err := ad.zk.GetTopic(t.Topic)
	if err != nil {
		return nil, fmt.Errorf("read topic %s: %w", t.Topic, err)
	}
	if err := q.record(float64(t.Count - int32(len(existing.Partitions)))); err != nil {
		return nil, err
	}
	return ad.createPartitions(t, false)
}

// topicPartitionCount is metadataCache.numPartitions(topic).getOrElse(0), what deleting a
// topic charges.
func (a *APIs) topicPartitionCount(topic string) int {
	if t, ok := a.Metadata.Topic(topic); ok {
		return len(t.Partitions)
	}
	return 0
}

// isThrottlingError tells a quota refusal, logged at Debug as Kafka does.
func isThrottlingError(err error) bool {
	return errors.Is(err, kerr.ThrottlingQuotaExceeded)
}
