package broker

// dynamic_config_admin.go is the BROKER resource of AlterConfigs and IncrementalAlterConfigs
// in Kafka 3.7's order: ConfigAdminManager.preprocess (the resource name must be empty for
// the cluster default or this broker's id; DynamicBrokerConfig.validate, whose failures are
// INVALID_REQUEST with the validation's own message), then ALTER_CONFIGS on the cluster,
// then ZkAdminManager.alterBrokerConfigs (passwords encrypted, refused at the default and
// without password.encoder.secret as INVALID_CONFIG; /config/brokers/<id|<default>> written
// with its brokers/<name> notification, which every broker, this one included, applies from
// its config handler). An id names this broker only: clients send a broker's configs to
// that broker, the default to any.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
)

// brokerConfigTarget is ConfigAdminManager.validateResourceNameIsCurrentNodeId: perBroker
// for this broker's id, false for "" (the cluster default).
func (a *APIs) brokerConfigTarget(name string) (perBroker bool, err error) {
	if name == "" {
		return false, nil
	}
	id, perr := strconv.ParseInt(name, 10, 32)
	if perr != nil {
		return false, newAPIError(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != a.BrokerID {
		return false, newAPIError(kerr.InvalidRequest, "Unexpected broker id, expected %d, but received %s", a.BrokerID, name)
	}
	return true, nil
}

// brokerConfigResource is ConfigResource.toString for a BROKER resource.
func brokerConfigResource(name string) string {
	return fmt.Sprintf("ConfigResource(type=BROKER, name='%s')", name)
}

// validateBrokerConfigs is ConfigAdminManager.validateBrokerConfigChange: props is the whole
// new content of the entity (passwords in clear).
func (a *APIs) validateBrokerConfigs(props map[string]string, perBroker bool) error {
	if a.DynamicConfig == nil {
		return newAPIError(kerr.InvalidRequest, "dynamic broker configs are not available on this broker")
	}
	if err := a.DynamicConfig.Validate(props, perBroker); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return err
		}
		// KAFKA-13609: Kafka answers a failed validation with INVALID_REQUEST.
		return newAPIError(kerr.InvalidRequest, "%s", err.Error())
	}
	return nil
}

// storeBrokerConfigs is ZkAdminManager.alterBrokerConfigs after validation:
// toPersistentProps, then AdminZkClient.changeBrokerConfig.
func (a *APIs) storeBrokerConfigs(ad *adminState, name string, props map[string]string, perBroker bool) error {
	if ad == nil || ad.zk == nil {
		return newAPIError(kerr.InvalidRequest, "dynamic broker configs are not available on this broker")
	}
	persistent, err := a.DynamicConfig.ToPersistentProps(props, perBroker)
	if err != nil {
		return newAPIError(kerr.InvalidConfig, "Invalid config value for resource %s: %s", brokerConfigResource(name), err.Error())
	}
	if perBroker {
		a.DynamicConfig.ReloadUpdatedFilesWithoutConfigChange(props)
	}
	entity := config.DynamicBrokerDefault
	if perBroker {
		entity = name
	}
	if err := ad.zk.SetBrokerConfig(entity, persistent); err != nil {
		return err
	}
	fields := logrus.Fields{"config": loggableBrokerProps(props)}
	if perBroker {
		ad.log.WithFields(fields).WithField("broker_id", name).Info("updating broker with new configuration")
	} else {
		ad.log.WithFields(fields).Info("updating brokers with new configuration")
	}
	return nil
}

// loggableBrokerProps is KafkaConfig.loggableValue over props: passwords "[hidden]".
func loggableBrokerProps(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := props[k]
		if def, ok := config.Lookup(k); ok && def.Sensitive() || config.IsDynamicPasswordConfig(k) {
			v = "[hidden]"
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, ",")
}

// alterBrokerConfigs is the whole legacy AlterConfigs path for one BROKER resource: props
// replace the entity's configs.
func (a *APIs) alterBrokerConfigs(rc *RequestContext, ad *adminState, name string, props map[string]string, validateOnly bool) error {
	perBroker, err := a.brokerConfigTarget(name)
	if err != nil {
		return err
	}
	if err := a.validateBrokerConfigs(props, perBroker); err != nil {
		return err
	}
	if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationAlterConfigs, resourceBroker, name); denied != nil {
		return denied
	}
	if validateOnly {
		return nil
	}
	return a.storeBrokerConfigs(ad, name, props, perBroker)
}

// incrementalAlterBrokerConfigs is the IncrementalAlterConfigs path for one BROKER
// resource: the stored configs (as they apply: fromPersistentProps) with each op applied
// (prepareIncrementalConfigs over KafkaConfig's keys) are validated and stored.
func (a *APIs) incrementalAlterBrokerConfigs(rc *RequestContext, ad *adminState, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	seen := map[string]bool{}
	var nulls []string
	for _, c := range res.Configs {
		if seen[c.Name] {
			return newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if int8(c.Op) != opDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	perBroker, err := a.brokerConfigTarget(res.ResourceName)
	if err != nil {
		return err
	}
	for _, c := range res.Configs {
		if op := int8(c.Op); op < opSet || op > opSubtract {
			return newAPIError(kerr.InvalidRequest, "Unknown operations type %d", c.Op)
		}
	}
	if a.DynamicConfig == nil || ad == nil || ad.zk == nil {
		return newAPIError(kerr.InvalidRequest, "dynamic broker configs are not available on this broker")
	}
	entity := config.DynamicBrokerDefault
	if perBroker {
		entity = res.ResourceName
	}
	stored, err := ad.zk.GetBrokerConfig(entity)
	if err != nil {
		return err
	}
	props := a.DynamicConfig.FromPersistentProps(stored, perBroker)
	if err := applyBrokerIncrementalOps(props, res.Configs); err != nil {
		return err
	}
	if err := a.validateBrokerConfigs(props, perBroker); err != nil {
		return err
	}
	if denied := a.configResourceAuthorized(rc, kmsg.ACLOperationAlterConfigs, resourceBroker, res.ResourceName); denied != nil {
		return denied
	}
	if validateOnly {
		return nil
	}
	return a.storeBrokerConfigs(ad, res.ResourceName, props, perBroker)
}

// applyBrokerIncrementalOps is ConfigAdminManager.prepareIncrementalConfigs with
// KafkaConfig's keys: APPEND and SUBTRACT only on LIST keys, starting from the key's
// default when unset.
func applyBrokerIncrementalOps(props map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	for _, op := range ops {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		switch int8(op.Op) {
		case opSet:
			props[op.Name] = value
		case opDelete:
			delete(props, op.Name)
		case opAppend, opSubtract:
			verb := "append"
			if int8(op.Op) == opSubtract {
				verb = "subtract"
			}
			def, ok := config.Lookup(op.Name)
			if !ok {
				// Kafka fails here on a missing map key (an unknown server error); its
				// listType meant to say this.
				return newAPIError(kerr.InvalidConfig, "Unknown config name: %s", op.Name)
			}
			if def.Type != config.TypeList {
				return newAPIError(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, op.Name)
			}
			old, ok := props[op.Name]
			if !ok && def.HasDefault {
				old = def.Default
			}
			var list []string
			if old != "" {
				list = strings.Split(old, ",")
			}
			if int8(op.Op) == opAppend {
				for _, v := range strings.Split(value, ",") {
					if !containsString(list, v) {
						list = append(list, v)
					}
				}
			} else {
				drop := strings.Split(value, ",")
				kept := list[:0:0]
				for _, v := range list {
					if !containsString(drop, v) {
						kept = append(kept, v)
					}
				}
				list = kept
			}
			props[op.Name] = strings.Join(list, ",")
		}
	}
	return nil
}
