package broker

// 33_alter_configs.go — AlterConfigs v0-2 (ConfigAdminManager.preprocess, then
// ZkAdminManager.alterConfigs). Each resource appears once ("Each resource must appear at
// most once."), with no duplicate keys and no null values. A topic resource replaces the
// topic's whole override set: the topic must exist (UNKNOWN_TOPIC_OR_PARTITION), names and
// values are LogConfig-validated (INVALID_CONFIG), then /config/topics/<t> is written with a
// /config/changes notification that every broker applies to its live logs
// (config_handler.go). A broker resource replaces /config/brokers/<id> or
// /config/brokers/<default> (dynamic_config_admin.go). BROKER_LOGGER and other types are
// INVALID_REQUEST ("Unknown resource type 8"), as in Kafka. validate_only stops after
// validation.

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 2, (*APIs).handleAlterConfigs) }

func (a *APIs) handleAlterConfigs(ctx context.Context, rc *RequestContext, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	ad := a.admin()
	seen := map[string]int{}
	for _, res := range req.Resources {
		seen[fmt.Sprintf("%d/%s", res.ResourceType, res.ResourceName)]++
	}
	for _, res := range req.Resources {
		r := kmsg.NewAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = res.ResourceType, res.ResourceName
		var err error
		if seen[fmt.Sprintf("%d/%s", res.ResourceType, res.ResourceName)] > 1 {
			err = newAPIError(kerr.InvalidRequest, "Each resource must appear at most once.")
		} else {
			err = a.alterConfigsResource(rc, ad, res, req.ValidateOnly)
		}
		r.ErrorCode, r.ErrorMessage = apiErrorParts(err)
		if err != nil {
			a.logConfigError(ad, err, int8(res.ResourceType), res.ResourceName)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// alterConfigsResource is preprocess and alterConfigs for one resource.
func (a *APIs) alterConfigsResource(rc *RequestContext, ad *adminState, res kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	cfg := map[string]string{}
	var nulls []string
	for _, c := range res.Configs {
		if _, dup := cfg[c.Name]; dup {
			return newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		cfg[c.Name] = ""
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		cfg[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	switch int8(res.ResourceType) {
	case resourceBroker:
		return a.alterBrokerConfigs(rc, ad, res.ResourceName, cfg, validateOnly)
	case resourceTopic:
		// KafkaApis: ALTER_CONFIGS on the topic (null message).
		if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationAlterConfigs, resourceTopic, res.ResourceName); denied != nil {
			return denied
		}
		return a.alterResourceConfig(ad, resourceTopic, res.ResourceName, cfg, validateOnly)
	}
	return newAPIError(kerr.InvalidRequest, "Unknown resource type %d", res.ResourceType)
}

// alterResourceConfig validates cfg as the complete new override set of a topic and, unless
// validateOnly, stores it (AdminZkClient.changeTopicConfig).
func (a *APIs) alterResourceConfig(ad *adminState, resType int8, name string, cfg map[string]string, validateOnly bool) error {
	switch resType {
	case resourceTopic:
		if ad == nil || ad.zk == nil {
			return &apiError{code: kerr.UnknownTopicOrPartition}
		}
		if err := validateTopicName(name); err != nil {
			return err
		}
		exists, err := ad.zk.TopicExists(name)
		if err != nil {
			return err
		}
		if !exists {
			return newAPIError(kerr.UnknownTopicOrPartition, "Topic %s does not exist.", name)
		}
		if err := ad.validateTopicConfigs(cfg); err != nil {
			return err
		}
		if validateOnly {
			return nil
		}
		if _, err := ad.zk.SetEntityConfig("topics", name, cfg); err != nil {
			return fmt.Errorf("write config of topic %s: %w", name, err)
		}
		ad.log.WithFields(logrus.Fields{"topic": name, "config": cfg}).Info("updated topic config")
		return nil
	}
	return newAPIError(kerr.InvalidRequest, "Unsupported resource type: %d", resType)
}

func (a *APIs) logConfigError(ad *adminState, err error, resType int8, name string) {
	log := a.Log
	if ad != nil {
		log = ad.log
	}
	if log != nil {
		log.WithError(err).WithFields(logrus.Fields{"resource_type": resType, "resource_name": name}).
			Debug("error processing alter configs request")
	}
}
