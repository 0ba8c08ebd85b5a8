package broker

// quota_entity.go mirrors ClientQuotaManager's DefaultQuotaCallback: the quota overrides of
// one quota type keyed by (user, client-id) entity, and Kafka's eight-level precedence that
// picks, for a request's (user, client-id), both the quota that applies and the "metric
// tags" naming the sensor the request is counted in. Requests sharing tags share one rate:
// with only a user quota, every client of that user is counted together; with a
// <user, client-id> quota, each pair has its own. ClientQuotaManager (quotas.go) and the
// controller mutation quota (controller_mutation_quota.go) both resolve through this type.
//
// Precedence (most specific first):
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// quotaEntityKind tells an absent entity part from a named one and from <default>, which
// is not the same as a client literally called "<default>".
type quotaEntityKind uint8

const (
	quotaEntityNone quotaEntityKind = iota
	quotaEntityNamed
	quotaEntityDefault
)

// QuotaEntity is KafkaQuotaEntity: an optional user part (sanitized, as in the znode name)
// and an optional client-id part (the client id itself, not sanitized).
type QuotaEntity struct {
	UserKind   quotaEntityKind
	User       string // sanitized user when UserKind is named
	ClientKind quotaEntityKind
	ClientID   string // client id when ClientKind is named
}

func (e QuotaEntity) String() string {
	var parts []string
	switch e.UserKind {
	case quotaEntityNamed:
		parts = append(parts, "user "+e.User)
	case quotaEntityDefault:
		parts = append(parts, "default user")
	}
	switch e.ClientKind {
	case quotaEntityNamed:
		parts = append(parts, "client-id "+e.ClientID)
	case quotaEntityDefault:
		parts = append(parts, "default client-id")
	}
	return strings.Join(parts, " ")
}

func userEntity(sanitizedUser string) QuotaEntity {
	if sanitizedUser == zkmeta.ConfigEntityDefault {
		return QuotaEntity{UserKind: quotaEntityDefault}
	}
	return QuotaEntity{UserKind: quotaEntityNamed, User: sanitizedUser}
}

func (e QuotaEntity) withClient(sanitizedClientID string) (QuotaEntity, error) {
	if sanitizedClientID == zkmeta.ConfigEntityDefault {
		e.ClientKind = quotaEntityDefault
		return e, nil
	}
	id, err := zkmeta.DesanitizeUser(sanitizedClientID) // same Sanitizer for client ids
	if err != nil {
		return e, err
	}
	e.ClientKind, e.ClientID = quotaEntityNamed, id
	return e, nil
}

// ParseQuotaEntityPath turns a config change's entity (entityType "users" with name
// "<user>" or "<user>/clients/<client-id>", or "clients" with "<client-id>", all sanitized
// as in the znode names) into a QuotaEntity, as UserConfigHandler and ClientIdConfigHandler do.
func ParseQuotaEntityPath(entityType, name string) (QuotaEntity, error) {
	switch entityType {
	case zkmeta.ConfigTypeClient:
		return QuotaEntity{}.withClient(name)
	case zkmeta.ConfigTypeUser:
		parts := strings.Split(name, "/")
		switch {
		case len(parts) == 1:
			return userEntity(parts[0]), nil
		case len(parts) == 3 && parts[1] == zkmeta.ConfigTypeClient:
			return userEntity(parts[0]).withClient(parts[2])
		}
		return QuotaEntity{}, fmt.Errorf("invalid quota entity path: %s", name)
	}
	return QuotaEntity{}, fmt.Errorf("entity type %q carries no client quotas", entityType)
}

// QuotaTags are the metric tags of a quota sensor (Kafka's "user" and "client-id" tags); an
// empty tag means the level does not take part.
type QuotaTags struct {
	User     string // sanitized user
	ClientID string
}

// Quota type bits, as Kafka's QuotaTypes: the levels that ever had a quota on this broker.
const (
	quotaTypesClientID     = 1
	quotaTypesUser         = 2
	quotaTypesUserClientID = 4
)

// QuotaEntities is the DefaultQuotaCallback of one quota type. Safe for concurrent use.
type QuotaEntities struct {
	mu        sync.RWMutex
	overrides map[QuotaEntity]float64
	// enabled is quotaTypesEnabled: once a level has had a quota it stays enabled until
	// restart, as in Kafka (it only selects which tags are used).
	enabled atomic.Int32
	// version counts changes, so sensors can cache their bound.
	version atomic.Uint64
}

// NewQuotaEntities returns an empty set: no client is limited.
func NewQuotaEntities() *QuotaEntities {
	return &QuotaEntities{overrides: map[QuotaEntity]float64{}}
}

// Enabled is ClientQuotaManager.quotasEnabled.
func (q *QuotaEntities) Enabled() bool { return q.enabled.Load() != 0 }

// Version changes whenever a quota is set or removed.
func (q *QuotaEntities) Version() uint64 { return q.version.Load() }

// Set is updateQuota with a value; Remove is updateQuota with none.
func (q *QuotaEntities) Set(e QuotaEntity, bound float64) { q.update(e, bound, true) }

// Remove drops the quota of e (levels stay enabled).
func (q *QuotaEntities) Remove(e QuotaEntity) { q.update(e, 0, false) }

func (q *QuotaEntities) update(e QuotaEntity, bound float64, set bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var bit int32
	switch {
	case e.UserKind != quotaEntityNone && e.ClientKind != quotaEntityNone:
		bit = quotaTypesUserClientID
	case e.UserKind != quotaEntityNone:
		bit = quotaTypesUser
	case e.ClientKind != quotaEntityNone:
		bit = quotaTypesClientID
	}
	for {
		old := q.enabled.Load()
		if q.enabled.CompareAndSwap(old, old|bit) {
			break
		}
	}
	if set {
		q.overrides[e] = bound
	} else {
		delete(q.overrides, e)
	}
	q.version.Add(1)
}

// Get returns the override stored for exactly e.
func (q *QuotaEntities) Get(e QuotaEntity) (float64, bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	v, ok := q.overrides[e]
	return v, ok
}

// MetricTags is DefaultQuotaCallback.quotaMetricTags: which sensor a request of
// (sanitizedUser, clientID) is counted in. With a single level of quotas the tags are that
// level's; with several, the most specific level that has an override decides.
func (q *QuotaEntities) MetricTags(sanitizedUser, clientID string) QuotaTags {
	switch q.enabled.Load() {
	case 0, quotaTypesClientID:
		return QuotaTags{ClientID: clientID}
	case quotaTypesUser:
		return QuotaTags{User: sanitizedUser}
	case quotaTypesUserClientID:
		return QuotaTags{User: sanitizedUser, ClientID: clientID}
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	user := QuotaEntity{UserKind: quotaEntityNamed, User: sanitizedUser}
	defUser := QuotaEntity{UserKind: quotaEntityDefault}
	has := func(e QuotaEntity) bool { _, ok := q.overrides[e]; return ok }
	client := func(e QuotaEntity) QuotaEntity { e.ClientKind, e.ClientID = quotaEntityNamed, clientID; return e }
	defClient := func(e QuotaEntity) QuotaEntity { e.ClientKind = quotaEntityDefault; return e }
	both := QuotaTags{User: sanitizedUser, ClientID: clientID}
	switch {
	case has(client(user)), has(defClient(user)):
		return both
	case has(user):
		return QuotaTags{User: sanitizedUser}
	case has(client(defUser)), has(defClient(defUser)):
		return both
	case has(defUser):
		return QuotaTags{User: sanitizedUser}
	}
	return QuotaTags{ClientID: clientID}
}

// Limit is DefaultQuotaCallback.quotaLimit: the quota of the sensor named by tags, walking
// the precedence from the most specific entity; ok=false when none applies.
func (q *QuotaEntities) Limit(t QuotaTags) (float64, bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	get := func(e QuotaEntity) (float64, bool) { v, ok := q.overrides[e]; return v, ok }
	user := QuotaEntity{UserKind: quotaEntityNamed, User: t.User}
	defUser := QuotaEntity{UserKind: quotaEntityDefault}
	withClient := func(e QuotaEntity) QuotaEntity { e.ClientKind, e.ClientID = quotaEntityNamed, t.ClientID; return e }
	withDefClient := func(e QuotaEntity) QuotaEntity { e.ClientKind = quotaEntityDefault; return e }
	var order []QuotaEntity
	switch {
	case t.User != "" && t.ClientID != "":
		order = []QuotaEntity{withClient(user), withDefClient(user), withClient(defUser), withDefClient(defUser)}
	case t.User != "":
		order = []QuotaEntity{user, defUser}
	case t.ClientID != "":
		order = []QuotaEntity{withClient(QuotaEntity{}), withDefClient(QuotaEntity{})}
	}
	for _, e := range order {
		if v, ok := get(e); ok {
			return v, true
		}
	}
	return 0, false
}

// Resolve is the bound that applies to a request of (sanitizedUser, clientID), with the tags
// of the sensor that counts it.
func (q *QuotaEntities) Resolve(sanitizedUser, clientID string) (QuotaTags, float64, bool) {
	t := q.MetricTags(sanitizedUser, clientID)
	v, ok := q.Limit(t)
	return t, v, ok
}
