package broker

// 33_alter_configs.go — AlterConfigs v0-2 (ZkAdminManager.alterConfigs). A topic resource
// replaces the topic's whole override set: the topic must exist (UNKNOWN_TOPIC_OR_PARTITION),
// names and values are LogConfig-validated (INVALID_CONFIG), then /config/topics/<t> is
// written with a /config/changes notification that every broker applies to its live logs
// (config_handler.go). validate_only stops after validation. Deviation: samsa has no
// dynamic broker configs, so a broker resource is INVALID_REQUEST instead of being written to
// /config/brokers (DescribeConfigs shows the static ones).

import (
	"context"
	"fmt"

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
			// KafkaApis rejects duplicate resources before authorizing them.
			err = newAPIError(kerr.InvalidRequest, "Error due to duplicate config resources")
		} else {
			cfg := map[string]string{}
			for _, c := range res.Configs {
				if c.Value == nil {
					err = newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", c.Name)
					break
				}
				cfg[c.Name] = *c.Value
			}
			if err == nil && int8(res.ResourceType) != resourceBrokerLogger {
				// KafkaApis: ALTER_CONFIGS on the topic or the cluster (null message).
				if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationAlterConfigs, int8(res.ResourceType), res.ResourceName); denied != nil {
					err = denied
				}
			}
			if err == nil {
				err = a.alterResourceConfig(ad, int8(res.ResourceType), res.ResourceName, cfg, req.ValidateOnly)
			}
		}
		r.ErrorCode, r.ErrorMessage = apiErrorParts(err)
		if err != nil {
			a.logConfigError(ad, err, int8(res.ResourceType), res.ResourceName)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// alterResourceConfig validates cfg as the complete new override set of a resource and, unless
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
	case resourceBroker:
		if name != "" {
			if _, err := resourceNameToBrokerID(name); err != nil {
				return err
			}
		}
		return newAPIError(kerr.InvalidRequest, "samsa does not support dynamic broker configs; set them in the broker's config file")
	case resourceBrokerLogger:
		return newAPIError(kerr.InvalidRequest, "samsa does not support changing broker log levels at runtime")
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
