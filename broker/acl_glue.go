package broker

// acl_glue.go — the authorizer KafkaServer builds from authorizer.class.name
// (AuthorizerUtils.createAuthorizer), and the conversions between the ACL request/response
// messages and internal/security/acl's types (CreateAclsRequest.aclBinding,
// DescribeAclsResponse.aclsResources, DeleteAclsResponse.matchingAcl).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security/acl"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// newAuthorizer builds the broker's authorizer once its ZooKeeper session is up and before
// any listener serves: nil (allow all) when authorizer.class.name is empty, the ACL
// authorizer for kafka.security.authorizer.AclAuthorizer. Its ACLs are fully loaded when
// it returns. Close it with closeAuthorizer at shutdown.
func newAuthorizer(ctx context.Context, b *Broker) (acl.Authorizer, error) {
	return buildAuthorizer(ctx, b.cfg, b.zk, b.log)
}

func buildAuthorizer(ctx context.Context, cfg *config.Config, zk *zkmeta.Client, log *logrus.Entry) (acl.Authorizer, error) {
	props := cfg.Props
	switch class := strings.TrimSpace(props["authorizer.class.name"]); class {
	case "":
		return nil, nil
	case acl.ClassName:
	default:
		return nil, fmt.Errorf("authorizer.class.name %q is not supported: samsa serves %s only", class, acl.ClassName)
	}
	// authorizer.zookeeper.url: ACLs in another ensemble, with a client of their own.
	if url := strings.TrimSpace(props["authorizer.zookeeper.url"]); url != "" {
		session := time.Duration(propInt(props, "authorizer.zookeeper.session.timeout.ms",
			int64(cfg.ZookeeperSessionTimeout/time.Millisecond))) * time.Millisecond
		if session <= 0 {
			session = 18 * time.Second
		}
		connTimeout := time.Duration(propInt(props, "authorizer.zookeeper.connection.timeout.ms",
			int64(cfg.ZookeeperConnectionTimeout/time.Millisecond))) * time.Millisecond
		if connTimeout <= 0 {
			connTimeout = session
		}
		sec, err := zkmeta.AuthorizerSecurityFromProps(props)
		if err != nil {
			return nil, fmt.Errorf("authorizer: zookeeper security: %w", err)
		}
		cctx, cancel := context.WithTimeout(ctx, connTimeout)
		own, err := zkmeta.ConnectSecure(cctx, url, session, log.WithField("zk_client", "ACL authorizer"), sec)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("authorizer: connect to authorizer.zookeeper.url %s: %w", url, err)
		}
		a, err := acl.NewOwningClient(ctx, own, props, log)
		if err != nil {
			_ = own.Close()
			return nil, fmt.Errorf("authorizer: %w", err)
		}
		return a, nil
	}
	if zk == nil {
		return nil, errors.New("authorizer: no ZooKeeper client")
	}
	a, err := acl.New(ctx, zk, props, log)
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	return a, nil
}

// closeAuthorizer stops what newAuthorizer started (nil is fine).
func closeAuthorizer(a acl.Authorizer) {
	if c, ok := a.(interface{ Close() }); ok {
		c.Close()
	}
}

// aclAdmin is the authorizer's ACL management side, or nil when there is none (the ACL
// APIs then answer SECURITY_DISABLED).
func (a *APIs) aclAdmin() acl.Admin {
	if a.Authorizer == nil {
		return nil
	}
	adm, _ := a.Authorizer.(acl.Admin)
	return adm
}

// aclErrorCode maps an ACL result error to the code and message Kafka's ApiError.fromThrowable
// would send: the message is null for UNKNOWN_SERVER_ERROR.
func aclErrorCode(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var ae *acl.Error
	if errors.As(err, &ae) {
		if ae.Code == kerr.UnknownServerError || ae.Message == "" {
			return ae.Code.Code, nil
		}
		m := ae.Message
		return ae.Code.Code, &m
	}
	return kerr.UnknownServerError.Code, nil
}

// aclResourcesOf groups bindings per resource pattern (DescribeAclsResponse.aclsResources).
func aclResourcesOf(bindings []acl.Binding) []kmsg.DescribeACLsResponseResource {
	var out []kmsg.DescribeACLsResponseResource
	index := map[acl.Resource]int{}
	for _, b := range bindings {
		i, ok := index[b.Resource]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = b.Resource.Type, b.Resource.Name, b.Resource.Pattern
			out = append(out, r)
			i = len(out) - 1
			index[b.Resource] = i
		}
		d := kmsg.NewDescribeACLsResponseResourceACL()
		d.Principal, d.Host, d.Operation, d.PermissionType = b.Entry.Principal, b.Entry.Host, b.Entry.Operation, b.Entry.Permission
		out[i].ACLs = append(out[i].ACLs, d)
	}
	return out
}

// sortedDeleted orders one filter's deletions by resource then entry, so responses are stable.
func sortedDeleted(d []acl.DeletedBinding) []acl.DeletedBinding {
	sort.SliceStable(d, func(i, j int) bool {
		x, y := d[i].Binding, d[j].Binding
		if x.Resource != y.Resource {
			if x.Resource.Type != y.Resource.Type {
				return x.Resource.Type < y.Resource.Type
			}
			if x.Resource.Pattern != y.Resource.Pattern {
				return x.Resource.Pattern < y.Resource.Pattern
			}
			return x.Resource.Name < y.Resource.Name
		}
		return false
	})
	return d
}
