package broker

// 44_incremental_alter_configs.go — IncrementalAlterConfigs v0-1
// (ZkAdminManager.incrementalAlterConfigs, prepareIncrementalConfigs). The topic's current
// overrides are read from /config/topics/<t>, each op applied (SET, DELETE; APPEND and
// SUBTRACT only for list-typed keys, starting from the default when unset), the result
// validated and stored as AlterConfigs does (33_alter_configs.go). Duplicate keys in one
// resource are INVALID_REQUEST. A broker resource edits /config/brokers/<id> or
// /config/brokers/<default> (dynamic_config_admin.go); a BROKER_LOGGER resource changes this
// broker's log levels (logger_levels.go), each authorizing itself in Kafka's order.

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 1, (*APIs).handleIncrementalAlterConfigs) }

// AlterConfigOp.OpType ids.
const (
	opSet      int8 = 0
	opDelete   int8 = 1
	opAppend   int8 = 2
	opSubtract int8 = 3
)

func (a *APIs) handleIncrementalAlterConfigs(ctx context.Context, rc *RequestContext, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	ad := a.admin()
	seen := map[string]int{}
	for _, res := range req.Resources {
		seen[fmt.Sprintf("%d/%s", res.ResourceType, res.ResourceName)]++
	}
	for _, res := range req.Resources {
		r := kmsg.NewIncrementalAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = res.ResourceType, res.ResourceName
		var err error
		switch {
		case seen[fmt.Sprintf("%d/%s", res.ResourceType, res.ResourceName)] > 1:
			err = newAPIError(kerr.InvalidRequest, "Each resource must appear at most once.")
		case int8(res.ResourceType) == resourceBroker:
			err = a.incrementalAlterBrokerConfigs(rc, ad, res, req.ValidateOnly)
		case int8(res.ResourceType) == resourceBrokerLogger:
			err = a.alterBrokerLoggers(rc, res, req.ValidateOnly)
		case int8(res.ResourceType) != resourceTopic:
			err = newAPIError(kerr.InvalidRequest, "Unknown resource type %d", res.ResourceType)
		default:
			err = a.incrementalAlterTopic(rc, ad, res, req.ValidateOnly)
		}
		r.ErrorCode, r.ErrorMessage = apiErrorParts(err)
		if err != nil {
			a.logConfigError(ad, err, int8(res.ResourceType), res.ResourceName)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// incrementalAlterTopic authorizes ALTER_CONFIGS on the topic (null message), then applies
// the ops to its overrides.
func (a *APIs) incrementalAlterTopic(rc *RequestContext, ad *adminState, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationAlterConfigs, resourceTopic, res.ResourceName); denied != nil {
		return denied
	}
	keys := map[string]bool{}
	for _, c := range res.Configs {
		if keys[c.Name] {
			return newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		keys[c.Name] = true
	}
	if ad == nil || ad.zk == nil {
		return &apiError{code: kerr.UnknownTopicOrPartition}
	}
	if err := validateTopicName(res.ResourceName); err != nil {
		return err
	}
	current, err := ad.zk.GetTopicConfig(res.ResourceName)
	if err != nil {
		return err
	}
	next, err := applyIncrementalOps(current, res.Configs)
	if err != nil {
		return err
	}
	return a.alterResourceConfig(ad, resourceTopic, res.ResourceName, next, validateOnly)
}

// applyIncrementalOps is prepareIncrementalConfigs over a topic's overrides.
func applyIncrementalOps(current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := make(map[string]string, len(current)+len(ops))
	for k, v := range current {
		next[k] = v
	}
	for _, op := range ops {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		switch int8(op.Op) {
		case opSet:
			if op.Value == nil {
				return nil, newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", op.Name)
			}
			next[op.Name] = value
		case opDelete:
			delete(next, op.Name)
		case opAppend, opSubtract:
			if topicConfigTypes[op.Name] != typeList {
				verb := "append"
				if int8(op.Op) == opSubtract {
					verb = "subtract"
				}
				return nil, newAPIError(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, op.Name)
			}
			old, ok := next[op.Name]
			if !ok {
				old, _ = logstore.DefaultLogConfig().Get(op.Name)
			}
			list := splitList(old)
			if int8(op.Op) == opAppend {
				for _, v := range splitList(value) {
					if !containsString(list, v) {
						list = append(list, v)
					}
				}
			} else {
				var kept []string
				for _, v := range list {
					if !containsString(splitList(value), v) {
						kept = append(kept, v)
					}
				}
				list = kept
			}
			next[op.Name] = strings.Join(list, ",")
		default:
			return nil, newAPIError(kerr.InvalidRequest, "Unknown alter config operation type %d", op.Op)
		}
	}
	return next, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
