package broker

// 48_describe_client_quotas.go — DescribeClientQuotas (key 48) v0-1, as
// KafkaApis.handleDescribeClientQuotasRequest and ZkAdminManager.describeClientQuotas: any
// broker answers from ZooKeeper; it needs DESCRIBE_CONFIGS on the cluster
// (CLUSTER_AUTHORIZATION_FAILED). Filter components per entity type ("user", "client-id",
// "ip"): match type 0 names an entity, 1 its <default>, 2 any named or default entity; with
// strict, entities with parts the filter does not name are left out. A type twice, an
// empty type, or ip together with user/client-id is INVALID_REQUEST; another type is
// UNSUPPORTED_VERSION ("Custom entity type '...' not supported"). Entities with no quota
// keys are not listed; SCRAM credentials in the same user znodes never are.
// Deviation: entries are sorted (Kafka's order follows hash maps, i.e. is unspecified).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() { registerAPI(0, 1, (*APIs).handleDescribeClientQuotas) }

// Client quota entity types (ClientQuotaEntity).
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// userAndClientQuotaKeys are QuotaConfigs.USER_AND_CLIENT_QUOTA_NAMES.
var userAndClientQuotaKeys = map[string]bool{
	quotaProducerByteRate: true, quotaConsumerByteRate: true, quotaRequestPercentage: true, "controller_mutation_rate": true,
}

// quotaRequestError is an error a quota request answers with its Kafka error code and message.
type quotaRequestError struct {
	code int16
	msg  string // "" sends a null message (UNKNOWN_SERVER_ERROR never carries one)
}

func (e *quotaRequestError) Error() string { return e.msg }

func quotaInvalidRequest(format string, args ...any) error {
	return &quotaRequestError{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf(format, args...)}
}

// quotaErrorCode is ApiError.fromThrowable for the errors of this file and 49.
func quotaErrorCode(err error) (int16, *string) {
	var qe *quotaRequestError
	if errors.As(err, &qe) {
		if qe.msg == "" {
			return qe.code, nil
		}
		return qe.code, kmsg.StringPtr(qe.msg)
	}
	return kerr.UnknownServerError.Code, nil
}

// quotaName is an optional entity name that may be the default: present=false is Kafka's
// None, isDefault its Some(null).
type quotaName struct {
	present   bool
	isDefault bool
	name      string
}

func (n quotaName) sanitized() string {
	switch {
	case !n.present:
		return ""
	case n.isDefault:
		return zkmeta.ConfigEntityDefault
	}
	return zkmeta.SanitizeUser(n.name)
}

func desanitizedQuotaName(sanitized string) (quotaName, error) {
	if sanitized == zkmeta.ConfigEntityDefault {
		return quotaName{present: true, isDefault: true}, nil
	}
	n, err := zkmeta.DesanitizeUser(sanitized)
	return quotaName{present: true, name: n}, err
}

func (n quotaName) ptr() *string {
	if n.isDefault {
		return nil
	}
	return kmsg.StringPtr(n.name)
}

// quotaFilterComponent is ClientQuotaFilterComponent; match is Kafka's Optional match:
// nil for "any specified" (match type 2).
type quotaFilterComponent struct {
	match *quotaName
}

func (c *quotaFilterComponent) exact() bool { return c != nil && c.match != nil }

// name is toOption(component.match).
func (c *quotaFilterComponent) name() quotaName {
	if c == nil || c.match == nil {
		return quotaName{}
	}
	return *c.match
}

// matches is ZkAdminManager's matches(nameComponent, name).
func (c *quotaFilterComponent) matches(n quotaName, strict bool) bool {
	if c == nil {
		return !n.present || !strict
	}
	if c.match == nil {
		return n.present
	}
	return n.present && n.isDefault == c.match.isDefault && (n.isDefault || n.name == c.match.name)
}

type describedQuota struct {
	user, client, ip quotaName
	values           map[string]float64
}

func (a *APIs) handleDescribeClientQuotas(ctx context.Context, rc *RequestContext, req *kmsg.DescribeClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = quotaErrorCode(err)
		resp.Entries = nil
		return resp, nil
	}
	if !a.authorizeCluster(rc, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ad := a.admin()
	if ad == nil || ad.zk == nil {
		return fail(&quotaRequestError{code: kerr.UnknownServerError.Code})
	}
	found, err := describeClientQuotas(ad.zk, req)
	if err != nil {
		rc.Log.WithError(err).Debug("describe client quotas failed")
		return fail(err)
	}
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(found))
	for _, q := range found {
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		// Kafka's entity map iterates ip, client-id, user.
		add := func(typ string, n quotaName) {
			if n.present {
				ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				ent.Type, ent.Name = typ, n.ptr()
				e.Entity = append(e.Entity, ent)
			}
		}
		add(quotaEntityIP, q.ip)
		add(quotaEntityClientID, q.client)
		add(quotaEntityUser, q.user)
		for _, k := range sortedStringKeys(q.values) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// describeClientQuotas is ZkAdminManager.describeClientQuotas.
func describeClientQuotas(zk *zkmeta.Client, req *kmsg.DescribeClientQuotasRequest) ([]describedQuota, error) {
	var user, client, ip *quotaFilterComponent
	for _, c := range req.Components {
		comp := &quotaFilterComponent{}
		switch c.MatchType {
		case 0: // EXACT: ofEntity requires a name
			if c.Match == nil {
				return nil, &quotaRequestError{code: kerr.UnknownServerError.Code}
			}
			comp.match = &quotaName{present: true, name: *c.Match}
		case 1: // DEFAULT
			comp.match = &quotaName{present: true, isDefault: true}
		case 2: // SPECIFIED
		default:
			return nil, &quotaRequestError{code: kerr.UnknownServerError.Code}
		}
		switch c.EntityType {
		case quotaEntityUser:
			if user != nil {
				return nil, quotaInvalidRequest("Duplicate user filter component entity type")
			}
			user = comp
		case quotaEntityClientID:
			if client != nil {
				return nil, quotaInvalidRequest("Duplicate client filter component entity type")
			}
			client = comp
		case quotaEntityIP:
			if ip != nil {
				return nil, quotaInvalidRequest("Duplicate ip filter component entity type")
			}
			ip = comp
		case "":
			return nil, quotaInvalidRequest("Unexpected empty filter component entity type")
		default:
			return nil, &quotaRequestError{code: kerr.UnsupportedVersion.Code, msg: fmt.Sprintf("Custom entity type '%s' not supported", c.EntityType)}
		}
	}
	if (user != nil || client != nil) && ip != nil {
		return nil, quotaInvalidRequest("Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.")
	}
	var out []describedQuota
	if ip == nil {
		q, err := describeUserClientQuotas(zk, user, client, req.Strict)
		if err != nil {
			return nil, err
		}
		out = append(out, q...)
	}
	if user == nil && client == nil {
		q, err := describeIPQuotas(zk, ip, req.Strict)
		if err != nil {
			return nil, err
		}
		out = append(out, q...)
	}
	sort.Slice(out, func(i, j int) bool {
		ki, kj := out[i].sortKey(), out[j].sortKey()
		return ki < kj
	})
	return out, nil
}

func (q describedQuota) sortKey() string {
	part := func(n quotaName) string {
		switch {
		case !n.present:
			return "0"
		case n.isDefault:
			return "1"
		}
		return "2" + n.name
	}
	return part(q.ip) + "\x00" + part(q.user) + "\x00" + part(q.client)
}

// fetchQuotaEntity reads one entity's config; an empty sanitized name (an empty name in
// the filter) is no znode.
func fetchQuotaEntity(zk *zkmeta.Client, typ, sanitizedPath string) (map[string]string, error) {
	if sanitizedPath == "" {
		return map[string]string{}, nil
	}
	return zk.GetEntityConfig(typ, sanitizedPath)
}

// describeUserClientQuotas is ZkAdminManager.handleDescribeClientQuotas.
func describeUserClientQuotas(zk *zkmeta.Client, userComp, clientComp *quotaFilterComponent, strict bool) ([]describedQuota, error) {
	user, client := userComp.name(), clientComp.name()
	exactUser, exactClient := userComp.exact(), clientComp.exact()
	excludeUser, excludeClient := strict && userComp == nil, strict && clientComp == nil

	type entry struct {
		user, client quotaName
		props        map[string]string
	}
	var entries []entry
	addAll := func(configs map[string]map[string]string, mk func(name string) (entry, error)) error {
		for name, props := range configs {
			e, err := mk(name)
			if err != nil {
				return err
			}
			e.props = props
			entries = append(entries, e)
		}
		return nil
	}

	switch {
	case exactUser && excludeClient:
		props, err := fetchQuotaEntity(zk, zkmeta.ConfigTypeUser, user.sanitized())
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{user: user, props: props})
	case !excludeUser && !exactClient:
		all, err := zk.GetAllQuotaEntityConfigs(zkmeta.ConfigTypeUser)
		if err != nil {
			return nil, err
		}
		if err := addAll(all, func(name string) (entry, error) {
			u, err := desanitizedQuotaName(name)
			return entry{user: u}, err
		}); err != nil {
			return nil, err
		}
	}
	switch {
	case excludeUser && exactClient:
		props, err := fetchQuotaEntity(zk, zkmeta.ConfigTypeClient, client.sanitized())
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{client: client, props: props})
	case !exactUser && !excludeClient:
		all, err := zk.GetAllQuotaEntityConfigs(zkmeta.ConfigTypeClient)
		if err != nil {
			return nil, err
		}
		if err := addAll(all, func(name string) (entry, error) {
			c, err := desanitizedQuotaName(name)
			return entry{client: c}, err
		}); err != nil {
			return nil, err
		}
	}
	switch {
	case exactUser && exactClient:
		path := ""
		if user.sanitized() != "" && client.sanitized() != "" {
			path = zkmeta.UserClientPath(user.sanitized(), client.sanitized())
		}
		props, err := fetchQuotaEntity(zk, zkmeta.ConfigTypeUser, path)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{user: user, client: client, props: props})
	case !excludeUser && !excludeClient:
		all, err := zk.GetAllUserClientConfigs()
		if err != nil {
			return nil, err
		}
		if err := addAll(all, func(name string) (entry, error) {
			u, c, ok := cutUserClientPath(name)
			if !ok {
				return entry{}, fmt.Errorf("unexpected config path: %s", name)
			}
			un, err := desanitizedQuotaName(u)
			if err != nil {
				return entry{}, err
			}
			cn, err := desanitizedQuotaName(c)
			return entry{user: un, client: cn}, err
		}); err != nil {
			return nil, err
		}
	}

	var out []describedQuota
	for _, e := range entries {
		values, err := quotaValues(e.props, func(k string) bool { return userAndClientQuotaKeys[k] })
		if err != nil {
			return nil, err
		}
		if len(values) > 0 && userComp.matches(e.user, strict) && clientComp.matches(e.client, strict) {
			out = append(out, describedQuota{user: e.user, client: e.client, values: values})
		}
	}
	return out, nil
}

// cutUserClientPath splits "<user>/clients/<client-id>".
func cutUserClientPath(p string) (user, client string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) != 3 || parts[1] != zkmeta.ConfigTypeClient {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// describeIPQuotas is ZkAdminManager.handleDescribeIpQuotas.
func describeIPQuotas(zk *zkmeta.Client, comp *quotaFilterComponent, strict bool) ([]describedQuota, error) {
	ip := comp.name()
	all := map[string]map[string]string{}
	switch {
	case comp.exact():
		props, err := fetchQuotaEntity(zk, zkmeta.ConfigTypeIP, ip.sanitized())
		if err != nil {
			return nil, err
		}
		all[ip.sanitized()] = props
	case (comp != nil && comp.match == nil) || (comp == nil && !strict):
		var err error
		if all, err = zk.GetAllQuotaEntityConfigs(zkmeta.ConfigTypeIP); err != nil {
			return nil, err
		}
	}
	var out []describedQuota
	for name, props := range all {
		values, err := quotaValues(props, func(k string) bool { return k == IPConnectionCreationRateConfig })
		if err != nil {
			return nil, err
		}
		if len(values) == 0 {
			continue
		}
		n := ip
		if !comp.exact() {
			if n, err = desanitizedQuotaName(name); err != nil {
				return nil, err
			}
		}
		out = append(out, describedQuota{ip: n, values: values})
	}
	return out, nil
}

// quotaValues is clientQuotaPropsToDoubleMap over the keys keep selects.
func quotaValues(props map[string]string, keep func(string) bool) (map[string]float64, error) {
	values := map[string]float64{}
	for k, v := range props {
		if !keep(k) {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("unexpected client quota configuration value: %s -> %s", k, v)
		}
		values[k] = f
	}
	return values, nil
}
