package main

// configs_zk_brokers.go is ConfigCommand's ZooKeeper path for brokers: the dynamic configs of
// brokers that are not running (/config/brokers/<id>, or /config/brokers/<default> when none
// runs) are described and altered straight in ZooKeeper, so passwords can be stored
// encrypted before any broker starts.
//
//	--zookeeper zk:2181 --alter --entity-type brokers --entity-name 0
//	    --add-config 'listener.name.internal.ssl.key.password=pw,password.encoder.secret=s'
//
// As preProcessBrokerConfigs does, the password.encoder.* keys only configure the encryption
// and are not stored, the keys are checked as a broker checks a dynamic update
// (DynamicBrokerConfig.validateConfigs), and password configs are stored encrypted.

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/zkmeta"
)

const brokersNotRunningInfo = "Broker configuration operations using ZooKeeper are only supported if the affected broker(s) are not running."

func configsZkBrokers(o *configsOpts, stdout, stderr io.Writer) error {
	var add map[string]string
	var del []string
	if o.alter.set {
		var err error
		if add, del, err = o.alterations(); err != nil {
			return err
		}
		messageFormatWarning(add, stdout)
	}
	entity := ""
	if names := o.entityNames(); len(names) > 0 {
		entity = names[0]
		if entity == "" {
			entity = zkmeta.ConfigEntityDefault
		}
	}
	zk, err := connectConfigsZk(o, stderr)
	if err != nil {
		return err
	}
	defer zk.Close()
	if o.describe.set {
		if err := validateBrokersNotRunning(zk, entity, "--bootstrap-server option must be specified to describe brokers"); err != nil {
			return err
		}
		return describeBrokersZk(zk, entity, stdout)
	}

	delText := "List()"
	if len(o.deleteConfig) > 0 {
		delText = scalaArrayBuffer(del)
	}
	errorMessage := fmt.Sprintf("--bootstrap-server option must be specified to update brokers configs: {add: %s, delete: %s}", javaPropsString(add), delText)
	if err := validateBrokersNotRunning(zk, entity, errorMessage); err != nil {
		return err
	}
	if err := preProcessBrokerConfigs(add, entity != zkmeta.ConfigEntityDefault); err != nil {
		return err
	}
	cfg, err := zk.GetBrokerConfig(entity)
	if err != nil {
		return err
	}
	var invalid []string
	for _, k := range del {
		if _, ok := cfg[k]; !ok {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		return argErr("Invalid config(s): %s", strings.Join(invalid, ","))
	}
	for k, v := range add {
		cfg[k] = v
	}
	for _, k := range del {
		delete(cfg, k)
	}
	// AdminZkClient.changeBrokerConfig checks the stored set's types again.
	if err := config.ValidateDynamicConfigTypes(cfg); err != nil {
		return err
	}
	if err := zk.SetBrokerConfig(entity, cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Completed updating config for entity: %s.\n", zkBrokerEntity(entity))
	return nil
}

// validateBrokersNotRunning is ConfigCommand.validateBrokersNotRunning: a broker's entity only
// while that broker is not registered, the default only while no broker is.
func validateBrokersNotRunning(zk *zkmeta.Client, entity, errorMessage string) error {
	if entity == zkmeta.ConfigEntityDefault {
		ids, err := zk.GetBrokerIDs()
		if err != nil {
			return fmt.Errorf("list registered brokers: %w", err)
		}
		if len(ids) != 0 {
			return argErr("requirement failed: %s - %d brokers are running. %s", errorMessage, len(ids), brokersNotRunningInfo)
		}
		return nil
	}
	if entity == "" {
		return nil // every broker's entity is listed, as Kafka does, running or not
	}
	id, err := strconv.ParseInt(entity, 10, 32)
	if err != nil {
		return argErr("Error parsing broker %s. The broker's Entity Name must be a single integer value", entity)
	}
	_, err = zk.GetBroker(int32(id))
	switch {
	case err == nil:
		return argErr("requirement failed: %s - broker %d is running. %s", errorMessage, id, brokersNotRunningInfo)
	case errors.Is(err, zkmeta.ErrNoNode):
		return nil
	}
	return fmt.Errorf("read registration of broker %d: %w", id, err)
}

// preProcessBrokerConfigs is ConfigCommand.preProcessBrokerConfigs: the password.encoder.*
// keys are taken out, the rest validated as a dynamic update, the passwords encrypted.
func preProcessBrokerConfigs(add map[string]string, perBroker bool) error {
	encoderProps := map[string]string{}
	for k, v := range add {
		if strings.HasPrefix(k, "password.encoder.") {
			encoderProps[k] = v
			delete(add, k)
		}
	}
	if err := config.ValidateDynamicConfigs(add, perBroker); err != nil {
		return err
	}
	var passwords []string
	for k := range add {
		if config.IsDynamicPasswordConfig(k) {
			passwords = append(passwords, k)
		}
	}
	if len(passwords) == 0 {
		return nil
	}
	sort.Strings(passwords)
	if _, ok := encoderProps["password.encoder.secret"]; !ok {
		return argErr("requirement failed: password.encoder.secret must be specified to update %s. "+
			"Other password encoder configs like cipher algorithm and iterations may also be specified "+
			"to override the default encoding parameters. Password encoder configs will not be persisted in ZooKeeper.", scalaSet(passwords))
	}
	enc := config.PasswordEncoderFromProps(encoderProps, "password.encoder.secret")
	for _, k := range passwords {
		v, err := enc.Encode(add[k])
		if err != nil {
			return fmt.Errorf("encrypt %s: %w", k, err)
		}
		add[k] = v
	}
	return nil
}

// describeBrokersZk is describeConfigWithZk for brokers: the entity even without configs, or
// every /config/brokers child.
func describeBrokersZk(zk *zkmeta.Client, entity string, stdout io.Writer) error {
	entities := []string{entity}
	if entity == "" {
		dir := path.Dir(zkmeta.ConfigEntityPath(zkmeta.ConfigTypeBroker, "x"))
		children, err := zk.Children(dir)
		if err != nil && !errors.Is(err, zkmeta.ErrNoNode) {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		sort.Strings(children) // ZooKeeper lists children in no particular order
		entities = children
	}
	for _, e := range entities {
		cfg, err := zk.GetBrokerConfig(e)
		if err != nil {
			return err
		}
		pairs := make([]string, 0, len(cfg))
		for _, k := range javaPropsOrder(cfg) {
			pairs = append(pairs, k+"="+cfg[k])
		}
		fmt.Fprintf(stdout, "Configs for %s are %s\n", zkBrokerEntity(e), strings.Join(pairs, ","))
	}
	return nil
}

// zkBrokerEntity is ConfigCommand.Entity.toString for a brokers entity.
func zkBrokerEntity(name string) string {
	if name == zkmeta.ConfigEntityDefault {
		return "default brokers"
	}
	return "brokers '" + name + "'"
}
