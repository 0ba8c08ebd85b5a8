package broker

// 49_alter_client_quotas.go — AlterClientQuotas (key 49) v0-1, as
// KafkaApis.handleAlterClientQuotasRequest and ZkAdminManager.alterClientQuotas: any broker
// writes ZooKeeper; it needs ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED for
// every entry). Per entity, in Kafka's order of checks:
//   - an empty entity, an unknown entity type, an empty name, ip with user/client-id, or an
//     ip that is neither <default>, an address nor a resolvable host → INVALID_REQUEST;
//   - per op: removal drops the key; a key the entity kind does not have → INVALID_REQUEST
//     "Invalid configuration key ..."; a LONG/INT key with a fractional value →
//     INVALID_REQUEST "Configuration ... must be a LONG value"; a SCRAM key (a STRING, only
//     AlterUserScramCredentials sets those) → UNKNOWN_SERVER_ERROR, as Kafka fails on it;
//   - unless validate_only: the entity's whole config is validated as AdminZkClient does
//     (UNKNOWN_SERVER_ERROR when refused, INVALID_CONFIG never: Kafka's ConfigException is
//     not an API error) and written back with a change notification. The user znode keeps
//     its SCRAM credentials; a config left empty removes the znode (tryCleanQuotaNodes).
// A failing entity does not stop the others.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/javafmt"
	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() { registerAPI(0, 1, (*APIs).handleAlterClientQuotas) }

// Config types of the quota keys (ConfigDef.Type).
const (
	quotaTypeLong   = "LONG"
	quotaTypeDouble = "DOUBLE"
	quotaTypeInt    = "INT"
	quotaTypeString = "STRING"
)

// clientQuotaKeyTypes is QuotaConfigs.userAndClientQuotaConfigs (DynamicConfig.Client).
var clientQuotaKeyTypes = map[string]string{
	quotaProducerByteRate: quotaTypeLong, quotaConsumerByteRate: quotaTypeLong,
	quotaRequestPercentage: quotaTypeDouble, "controller_mutation_rate": quotaTypeDouble,
}

// userQuotaKeyTypes is scramMechanismsPlusUserAndClientQuotaConfigs (DynamicConfig.User).
var userQuotaKeyTypes = map[string]string{
	"SCRAM-SHA-256": quotaTypeString, "SCRAM-SHA-512": quotaTypeString,
	quotaProducerByteRate: quotaTypeLong, quotaConsumerByteRate: quotaTypeLong,
	quotaRequestPercentage: quotaTypeDouble, "controller_mutation_rate": quotaTypeDouble,
}

// ipQuotaKeyTypes is QuotaConfigs.ipConfigs (DynamicConfig.Ip).
var ipQuotaKeyTypes = map[string]string{IPConnectionCreationRateConfig: quotaTypeInt}

func (a *APIs) handleAlterClientQuotas(ctx context.Context, rc *RequestContext, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	entityOf := func(e *kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntryEntity {
		out := make([]kmsg.AlterClientQuotasResponseEntryEntity, 0, len(e.Entity))
		for _, c := range quotaEntityMap(e.Entity) {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.typ, c.name
			out = append(out, ent)
		}
		return out
	}
	ad := a.admin()
	if !a.authorizeCluster(rc, kmsg.ACLOperationAlterConfigs) || ad == nil || ad.zk == nil {
		code := kerr.ClusterAuthorizationFailed.Code
		if ad == nil || ad.zk == nil {
			code = kerr.UnknownServerError.Code
		}
		for i := range req.Entries {
			r := kmsg.NewAlterClientQuotasResponseEntry()
			r.ErrorCode, r.Entity = code, entityOf(&req.Entries[i])
			resp.Entries = append(resp.Entries, r)
		}
		return resp, nil
	}
	// Kafka answers one result per distinct entity (a map), the last alteration's.
	index := map[string]int{}
	for i := range req.Entries {
		e := &req.Entries[i]
		err := alterEntityQuotas(ad.zk, e, req.ValidateOnly)
		r := kmsg.NewAlterClientQuotasResponseEntry()
		r.Entity = entityOf(e)
		if err != nil {
			r.ErrorCode, r.ErrorMessage = quotaErrorCode(err)
			rc.Log.WithError(err).WithField("entity", quotaEntityKey(r.Entity)).Info("error while updating client quotas")
		} else if !req.ValidateOnly {
			rc.Log.WithFields(logrus.Fields{"entity": quotaEntityKey(r.Entity), "ops": len(e.Ops)}).Info("altered client quotas")
		}
		k := quotaEntityKey(r.Entity)
		if j, ok := index[k]; ok {
			resp.Entries[j] = r
			continue
		}
		index[k] = len(resp.Entries)
		resp.Entries = append(resp.Entries, r)
	}
	return resp, nil
}

func quotaEntityKey(ents []kmsg.AlterClientQuotasResponseEntryEntity) string {
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Type)
		b.WriteByte('=')
		if e.Name == nil {
			b.WriteString("<default>\x00")
		} else {
			b.WriteString(strconv.Quote(*e.Name))
		}
		b.WriteByte(';')
	}
	return b.String()
}

type quotaEntityPart struct {
	typ  string
	name *string
}

// quotaEntityMap is ClientQuotaEntity's map: one name per type (the last one given), in the
// order Kafka's HashMap iterates the known types (ip, client-id, user), others after.
func quotaEntityMap(ents []kmsg.AlterClientQuotasRequestEntryEntity) []quotaEntityPart {
	byType := map[string]*string{}
	var others []string
	for _, e := range ents {
		if _, seen := byType[e.Type]; !seen && e.Type != quotaEntityIP && e.Type != quotaEntityClientID && e.Type != quotaEntityUser {
			others = append(others, e.Type)
		}
		byType[e.Type] = e.Name
	}
	var out []quotaEntityPart
	for _, t := range append([]string{quotaEntityIP, quotaEntityClientID, quotaEntityUser}, others...) {
		if n, ok := byType[t]; ok {
			out = append(out, quotaEntityPart{t, n})
		}
	}
	return out
}

// alterEntityQuotas is ZkAdminManager.alterClientQuotas's alterEntityQuotas.
func alterEntityQuotas(zk *zkmeta.Client, e *kmsg.AlterClientQuotasRequestEntry, validateOnly bool) error {
	parts := quotaEntityMap(e.Entity)
	if len(parts) == 0 {
		return quotaInvalidRequest("Invalid empty client quota entity")
	}
	// parseAndSanitizeQuotaEntity: names sanitized, null is <default>.
	var user, client, ip *string
	for _, p := range parts {
		s := zkmeta.ConfigEntityDefault
		if p.name != nil {
			s = zkmeta.SanitizeUser(*p.name)
		}
		switch p.typ {
		case quotaEntityUser:
			user = &s
		case quotaEntityClientID:
			client = &s
		case quotaEntityIP:
			ip = &s
		default:
			return quotaInvalidRequest("Unhandled client quota entity type: %s", p.typ)
		}
		if p.name != nil && *p.name == "" {
			return quotaInvalidRequest("Empty %s not supported", p.typ)
		}
	}
	var (
		typ, path string
		keys      map[string]string
	)
	switch {
	case ip == nil && user != nil && client != nil:
		typ, path, keys = zkmeta.ConfigTypeUser, zkmeta.UserClientPath(*user, *client), userQuotaKeyTypes
	case ip == nil && user != nil:
		typ, path, keys = zkmeta.ConfigTypeUser, *user, userQuotaKeyTypes
	case ip == nil && client != nil:
		typ, path, keys = zkmeta.ConfigTypeClient, *client, clientQuotaKeyTypes
	case ip != nil && user == nil && client == nil:
		// Kafka checks the sanitized name, as here.
		if !IsValidIPEntity(*ip) {
			return quotaInvalidRequest("%s is not a valid IP or resolvable host.", *ip)
		}
		typ, path, keys = zkmeta.ConfigTypeIP, *ip, ipQuotaKeyTypes
	case ip != nil:
		return quotaInvalidRequest("Invalid quota entity combination, IP entity should not be used with user/client ID entity.")
	default:
		return quotaInvalidRequest("Invalid client quota entity")
	}

	props, err := zk.GetEntityConfig(typ, path)
	if err != nil {
		return fmt.Errorf("read %s/%s: %w", typ, path, err)
	}
	for _, op := range e.Ops {
		if op.Remove {
			delete(props, op.Key)
			continue
		}
		kt, ok := keys[op.Key]
		if !ok {
			return quotaInvalidRequest("Invalid configuration key %s", op.Key)
		}
		switch kt {
		case quotaTypeDouble:
			props[op.Key] = javafmt.Double(op.Value)
		case quotaTypeLong, quotaTypeInt:
			const epsilon = 1e-6
			var n int64
			if kt == quotaTypeLong {
				n = saturatingInt64(op.Value + epsilon)
			} else {
				n = int64(saturatingInt32(op.Value + epsilon))
			}
			if math.Abs(float64(n)-op.Value) > epsilon {
				return quotaInvalidRequest("Configuration %s must be a %s value", op.Key, kt)
			}
			props[op.Key] = strconv.FormatInt(n, 10)
		default: // Kafka: IllegalStateException("Unexpected config type STRING")
			return &quotaRequestError{code: kerr.UnknownServerError.Code}
		}
	}
	if validateOnly {
		return nil
	}
	// AdminZkClient.changeConfigs validates the whole config first.
	validateKeys := clientQuotaKeyTypes
	switch {
	case typ == zkmeta.ConfigTypeIP:
		if err := ValidateIPQuotaConfig(props); err != nil {
			return &quotaRequestError{code: kerr.UnknownServerError.Code, msg: ""}
		}
		validateKeys = nil
	case typ == zkmeta.ConfigTypeUser && path != zkmeta.ConfigEntityDefault && !strings.Contains(path, "/clients"):
		validateKeys = userQuotaKeyTypes
	}
	if validateKeys != nil {
		if err := validateQuotaProps(props, validateKeys); err != nil {
			return &quotaRequestError{code: kerr.UnknownServerError.Code}
		}
	}
	if _, err := zk.ChangeQuotaEntityConfig(typ, path, props); err != nil {
		return err
	}
	return nil
}

// validateQuotaProps is DynamicConfig.validate: known keys only, values of their type.
func validateQuotaProps(props map[string]string, keys map[string]string) error {
	for k, v := range props {
		kt, ok := keys[k]
		if !ok {
			return fmt.Errorf("unknown dynamic configuration: %s", k)
		}
		var err error
		switch kt {
		case quotaTypeLong:
			_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		case quotaTypeInt:
			_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		case quotaTypeDouble:
			_, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if err != nil {
			return fmt.Errorf("invalid value %s for configuration %s: %w", v, k, err)
		}
	}
	return nil
}

// saturatingInt64 and saturatingInt32 are Scala's Double.toLong / toInt: truncation
// toward zero, NaN to 0, out of range to the nearest bound.
func saturatingInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func saturatingInt32(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}
