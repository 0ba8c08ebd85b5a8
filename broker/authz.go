package broker

// authz.go — per-request authorization, as kafka.server.AuthHelper: every handler asks
// these helpers what KafkaApis asks the authorizer, so with no authorizer configured
// (APIs.Authorizer nil) every check passes and the handlers behave exactly as before.
// Resources are always LITERAL patterns here; matching prefixed and wildcard ACLs against
// them is the authorizer's job (internal/security/acl). The ACL host is the IP of the
// client's address, as Kafka's RequestContext.clientAddress.

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/security/acl"
)

// clusterResourceName is Resource.CLUSTER_NAME: the one CLUSTER resource.
const clusterResourceName = "kafka-cluster"

// authorizedOperationsNotRequested is the schema default Kafka sends in the
// *_authorized_operations fields when the client did not ask for them.
const authorizedOperationsNotRequested int32 = -2147483648

// aclSupportedOperations is AclEntry.supportedOperations: what an authorized-operations
// bit field can contain for each resource type.
var aclSupportedOperations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite},
	kmsg.ACLResourceTypeDelegationToken: {kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeUser:            {kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens},
}

// authzTestHook lets package tests give a broker built from a config an authorizer and
// a principal per request (until SASL sets real principals) without racing with the
// requests the broker's own controller sends it from start-up on. Keyed by the
// *config.Config the broker was built from; only tests store into it.
type authzTestHook struct {
	authorizer acl.Authorizer
	principal  func(rc *RequestContext) (security.Principal, bool)
}

var (
	authzTestHooksSet atomic.Bool
	authzTestHooks    sync.Map // *config.Config → *authzTestHook
)

func setAuthzTestHook(cfg *config.Config, h *authzTestHook) {
	authzTestHooks.Store(cfg, h)
	authzTestHooksSet.Store(true)
}

// authz returns the authorizer for rc (nil: allow everything) and the principal to check.
func (a *APIs) authz(rc *RequestContext) (acl.Authorizer, security.Principal) {
	p := security.Anonymous
	if rc != nil && rc.Principal != (security.Principal{}) {
		p = rc.Principal
	}
	if a.Authorizer != nil {
		return a.Authorizer, p
	}
	if authzTestHooksSet.Load() && a.Config != nil {
		if v, ok := authzTestHooks.Load(a.Config); ok {
			h := v.(*authzTestHook)
			if h.principal != nil && rc != nil {
				if tp, ok := h.principal(rc); ok {
					p = tp
				}
			}
			return h.authorizer, p
		}
	}
	return nil, p
}

// aclHost is the host an ACL is matched against: the client's IP.
func aclHost(rc *RequestContext) string {
	if rc == nil || rc.RemoteAddr == nil {
		return ""
	}
	// Kafka matches ACL hosts against InetAddress.getHostAddress: IPv6 in full form.
	switch ad := rc.RemoteAddr.(type) {
	case *net.TCPAddr:
		return acl.HostAddress(ad.IP)
	case *net.UDPAddr:
		return acl.HostAddress(ad.IP)
	}
	host, _, err := net.SplitHostPort(rc.RemoteAddr.String())
	if err != nil {
		return rc.RemoteAddr.String()
	}
	return host
}

// authorize is AuthHelper.authorize on one literal resource; true without an authorizer.
func (a *APIs) authorize(rc *RequestContext, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	az, p := a.authz(rc)
	if az == nil {
		return true
	}
	ok := az.Authorize(p, aclHost(rc), op, rt, name)
	if !ok && rc != nil && rc.Log != nil {
		rc.Log.WithField("principal", p.String()).WithField("operation", op.String()).
			WithField("resource_type", rt.String()).WithField("resource", name).Debug("authorization denied")
	}
	return ok
}

// authorizeCluster checks op on the cluster resource.
func (a *APIs) authorizeCluster(rc *RequestContext, op kmsg.ACLOperation) bool {
	return a.authorize(rc, op, kmsg.ACLResourceTypeCluster, clusterResourceName)
}

// authorizeByResourceType is AuthHelper.authorizeByResourceType: op allowed on at least
// one resource of type rt.
func (a *APIs) authorizeByResourceType(rc *RequestContext, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	az, p := a.authz(rc)
	if az == nil {
		return true
	}
	return az.AuthorizeByResourceType(p, aclHost(rc), op, rt)
}

// authzSet is the answer of AuthHelper.filterByAuthorized: the names among those asked
// for on which op is allowed. The zero value (no authorizer) allows every name and does
// not allocate, which keeps the produce path's allocation count.
type authzSet struct {
	checked bool
	allowed map[string]bool
}

func (s authzSet) has(name string) bool { return !s.checked || s.allowed[name] }

// filterAuthorized authorizes op on each distinct name once.
func (a *APIs) filterAuthorized(rc *RequestContext, op kmsg.ACLOperation, rt kmsg.ACLResourceType, names func(add func(string))) authzSet {
	az, p := a.authz(rc)
	if az == nil {
		return authzSet{}
	}
	host := aclHost(rc)
	s := authzSet{checked: true, allowed: map[string]bool{}}
	seen := map[string]bool{}
	names(func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		if az.Authorize(p, host, op, rt, n) {
			s.allowed[n] = true
		} else if rc != nil && rc.Log != nil {
			rc.Log.WithField("principal", p.String()).WithField("operation", op.String()).
				WithField("resource_type", rt.String()).WithField("resource", n).Debug("authorization denied")
		}
	})
	return s
}

// authorizedOperations is AuthHelper.authorizedOperations: the bit field (bit i = ACL
// operation code i) of the supported operations of (rt, name) the principal may perform;
// every supported one without an authorizer.
func (a *APIs) authorizedOperations(rc *RequestContext, rt kmsg.ACLResourceType, name string) int32 {
	az, p := a.authz(rc)
	host := aclHost(rc)
	var bits int32
	for _, op := range aclSupportedOperations[rt] {
		if az == nil || az.Authorize(p, host, op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// clusterAuthorizedOperations is what Metadata (v8-10) and DescribeCluster send when
// asked: 0 without DESCRIBE on the cluster, else the cluster's authorized operations.
func (a *APIs) clusterAuthorizedOperations(rc *RequestContext) int32 {
	if !a.authorizeCluster(rc, kmsg.ACLOperationDescribe) {
		return 0
	}
	return a.authorizedOperations(rc, kmsg.ACLResourceTypeCluster, clusterResourceName)
}

// clusterAuthorizationError is the ClusterAuthorizationException Kafka throws from
// authorizeClusterOperation; the API's error response carries its code and message.
func clusterAuthorizationError(rc *RequestContext) *apiError {
	name := "request"
	if rc != nil {
		name = kmsg.NameForKey(rc.APIKey)
	}
	return newAPIError(kerr.ClusterAuthorizationFailed, "Request %s is not authorized.", name)
}

// errTopicAuthorization and friends are the authorization failures as errors for the
// handlers that map errors to codes.
var (
	errTopicAuthorization = fmt.Errorf("not authorized: %w", kerr.TopicAuthorizationFailed)
	errTxnIDAuthorization = fmt.Errorf("not authorized: %w", kerr.TransactionalIDAuthorizationFailed)
)

// configResourceClientMetrics is ConfigResource.Type.CLIENT_METRICS, authorized as a
// cluster resource although samsa keeps no such configs.
const configResourceClientMetrics = 16

// configResourceAuthorized checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config
// resource as ConfigHelper and KafkaApis do: broker, broker-logger and client-metrics
// resources are the cluster's, topics their own. It returns the error to answer when
// denied, nil when allowed; types it does not know are left to the handler (allowed).
func (a *APIs) configResourceAuthorized(rc *RequestContext, op kmsg.ACLOperation, resType int8, name string) *apiError {
	switch resType {
	case resourceBroker, resourceBrokerLogger, configResourceClientMetrics:
		if !a.authorizeCluster(rc, op) {
			return &apiError{code: kerr.ClusterAuthorizationFailed}
		}
	case resourceTopic:
		if !a.authorize(rc, op, kmsg.ACLResourceTypeTopic, name) {
			return &apiError{code: kerr.TopicAuthorizationFailed}
		}
	}
	return nil
}
