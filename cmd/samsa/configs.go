package main

// configs mirrors Kafka 3.7's kafka-configs.sh (kafka.admin.ConfigCommand) with
// --bootstrap-server for topics and brokers: --describe [--all] prints the dynamic (or all)
// configs of an entity; --alter --add-config k=v,k2=[a,b] --delete-config k sends
// IncrementalAlterConfigs (SET / DELETE), as ConfigCommand.alterConfig does for topics. For
// users, SCRAM credentials are set with --add-config 'SCRAM-SHA-256=[iterations=8192,password=pw]'
// and removed with --delete-config SCRAM-SHA-256 through AlterUserScramCredentials, and
// --describe lists them through DescribeUserScramCredentials (configs_users.go).
//
// With --zookeeper instead of --bootstrap-server (and optionally --zk-tls-config-file), only
// users' SCRAM credentials are read and written, straight in /config/users, so the first
// credential can exist before any broker runs (configs_users.go). Kafka also allows broker
// configs of stopped brokers there; samsa has no dynamic broker configs and refuses them.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

type configsOpts struct {
	bootstrap, entityType, entityName optString
	entityDefault                     bool
	describe, alter, all              bool
	addConfig, deleteConfig           multiFlag
	commandConfig                     optString
	zookeeper, zkTLSConfigFile        optString
}

func parseConfigsArgs(args []string, stderr io.Writer) (*configsOpts, *flag.FlagSet, error) {
	o := &configsOpts{}
	fs := newFlagSet("samsa configs", stderr)
	fs.Var(&o.bootstrap, "bootstrap-server", "The Kafka server to connect to (required unless --zookeeper is given).")
	fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	fs.Var(&o.entityType, "entity-type", "Type of entity (topics/brokers/users)")
	fs.Var(&o.entityName, "entity-name", "Name of entity (topic name/broker id/user principal name)")
	fs.BoolVar(&o.entityDefault, "entity-default", false, "Default entity name for brokers (applies to corresponding entity type in command line)")
	fs.BoolVar(&o.describe, "describe", false, "List configs for the given entity.")
	fs.BoolVar(&o.alter, "alter", false, "Alter the configuration for the entity.")
	fs.BoolVar(&o.all, "all", false, "List all configs for the given topic or broker, including defaults (with --describe).")
	fs.Var(&o.addConfig, "add-config", "Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
	fs.Var(&o.deleteConfig, "delete-config", "config keys to remove 'k1,k2'")
	fs.Var(&o.zookeeper, "zookeeper", "DEPRECATED. The connection string for the zookeeper connection in the form host:port[/chroot]. "+
		"Required when configuring SCRAM credentials for users before brokers run. Not allowed otherwise.")
	fs.Var(&o.zkTLSConfigFile, "zk-tls-config-file", "With --zookeeper: the file defining the ZooKeeper client's TLS properties (zookeeper.ssl.*) "+
		"and the samsa ZooKeeper digest identity ("+zkmeta.DigestKey+"=user:password). Any other properties are ignored.")
	if len(args) == 0 {
		return nil, fs, usageErr("This tool helps to manipulate and describe entity config for a topic, client, user, broker or ip")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if o.describe == o.alter {
		return nil, fs, usageErr("Command must include exactly one action: --describe, --alter")
	}
	// ConfigCommand.checkArgs' order: the entity types allowed depend on the connection option.
	if o.bootstrap.set {
		switch o.entityType.v {
		case "topics", "brokers", "users":
		case "":
			return nil, fs, usageErr("At least one --entity-type must be specified")
		default:
			return nil, fs, usageErr("Invalid entity type %s, the entity type must be one of topics, brokers, users", o.entityType.v)
		}
	} else {
		switch o.entityType.v {
		case "users", "brokers":
		case "":
			return nil, fs, usageErr("At least one entity type must be specified")
		default:
			return nil, fs, usageErr("Invalid entity type %s, the entity type must be one of users, brokers with a --zookeeper argument", o.entityType.v)
		}
	}
	switch {
	case !o.bootstrap.set && !o.zookeeper.set:
		return nil, fs, usageErr("One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified")
	case o.bootstrap.set && o.zookeeper.set:
		return nil, fs, usageErr("Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified")
	case o.all && o.zookeeper.set:
		return nil, fs, usageErr("--bootstrap-server must be specified for --all")
	case o.zkTLSConfigFile.set && !o.zookeeper.set:
		return nil, fs, usageErr("Only the --zookeeper option can be used with the --zk-tls-config-file option.")
	}
	if o.entityType.v == "topics" && o.entityDefault {
		return nil, fs, usageErr("--entity-default is only supported with --entity-type brokers here")
	}
	if o.alter {
		if !o.entityName.set && !o.entityDefault {
			return nil, fs, usageErr("An entity name must be specified with --alter of %s", o.entityType.v)
		}
		if len(o.addConfig) == 0 && len(o.deleteConfig) == 0 {
			return nil, fs, usageErr("At least one of --add-config or --delete-config must be specified with --alter")
		}
	}
	return o, fs, nil
}

// parseAddConfig is ConfigCommand.parseConfigsToBeAdded: comma-separated k=v pairs, where
// [a,b] groups a value containing commas.
func parseAddConfig(s string) (map[string]string, error) {
	out := map[string]string{}
	var pairs []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				pairs = append(pairs, s[start:i])
				start = i + 1
			}
		}
	}
	pairs = append(pairs, s[start:])
	for _, p := range pairs {
		if strings.TrimSpace(p) == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("Invalid entity config: all configs to be added must be in the format \"key=val\".")
		}
		v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "["), "]")
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

func runConfigs(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseConfigsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	if o.zookeeper.set {
		return runConfigsZk(o, args, stdout, stderr)
	}
	sec, ok := adminClientSecurity("configs", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap.v, "adminclient-1", 30*time.Second, sec, func(ctx context.Context, cl *kgo.Client) error {
		switch {
		case o.entityType.v == "users" && o.alter:
			return usersAlter(ctx, cl, o, stdout)
		case o.entityType.v == "users":
			return usersDescribe(ctx, cl, o, stdout)
		case o.alter:
			return configsAlter(ctx, cl, o, stdout)
		}
		return configsDescribe(ctx, cl, o, stdout)
	})
	if err != nil {
		fmt.Fprintln(stderr, "Error while executing config command with args '"+strings.Join(args, " ")+"'\n"+err.Error())
		return 1
	}
	return 0
}

func configResourceType(entityType string) kmsg.ConfigResourceType {
	if entityType == "brokers" {
		return kmsg.ConfigResourceTypeBroker
	}
	return kmsg.ConfigResourceTypeTopic
}

// issue sends req to the broker named by an entity of type brokers (broker configs are
// served by that broker) or to any broker.
func issue(ctx context.Context, cl *kgo.Client, o *configsOpts, req kmsg.Request) (kmsg.Response, error) {
	if o.entityType.v == "brokers" && o.entityName.set {
		var id int32
		if _, err := fmt.Sscan(o.entityName.v, &id); err != nil {
			return nil, fmt.Errorf("The entity name for brokers must be a valid integer broker id, but it is: %s", o.entityName.v)
		}
		return cl.Broker(int(id)).Request(ctx, req)
	}
	return cl.Request(ctx, req)
}

// alterations are --add-config's keys and values and --delete-config's keys.
func (o *configsOpts) alterations() (add map[string]string, del []string, err error) {
	add = map[string]string{}
	for _, a := range o.addConfig {
		m, err := parseAddConfig(a)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range m {
			add[k] = v
		}
	}
	for _, d := range o.deleteConfig {
		for _, k := range strings.Split(d, ",") {
			if k = strings.TrimSpace(k); k != "" {
				del = append(del, k)
			}
		}
	}
	return add, del, nil
}

func configsAlter(ctx context.Context, cl *kgo.Client, o *configsOpts, stdout io.Writer) error {
	add, del, err := o.alterations()
	if err != nil {
		return err
	}
	name := o.entityName.v
	if o.entityDefault {
		name = ""
	}
	// ConfigCommand checks that deleted keys are currently set.
	if len(del) > 0 {
		current, err := describeEntity(ctx, cl, o, name, false)
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, c := range current {
			set[c.Name] = true
		}
		var invalid []string
		for _, k := range del {
			if !set[k] {
				invalid = append(invalid, k)
			}
		}
		if len(invalid) > 0 {
			return fmt.Errorf("Invalid config(s): %s", strings.Join(invalid, ","))
		}
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = configResourceType(o.entityType.v), name
	keys := make([]string, 0, len(add))
	for k := range add {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(add[k])
		r.Configs = append(r.Configs, c)
	}
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := issue(ctx, cl, o, req)
	if err != nil {
		return err
	}
	for _, rr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if err := kafkaErr(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return err
		}
	}
	what := strings.TrimSuffix(o.entityType.v, "s")
	if o.entityDefault {
		fmt.Fprintln(stdout, "Completed updating default config for brokers in the cluster.")
	} else {
		fmt.Fprintf(stdout, "Completed updating config for %s %s.\n", what, name)
	}
	return nil
}

// describeEntity returns the entity's configs: only the dynamic ones unless all.
func describeEntity(ctx context.Context, cl *kgo.Client, o *configsOpts, name string, all bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = configResourceType(o.entityType.v), name
	req.Resources = append(req.Resources, r)
	resp, err := issue(ctx, cl, o, req)
	if err != nil {
		return nil, err
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, rr := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		if err := kafkaErr(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return nil, err
		}
		for _, c := range rr.Configs {
			dynamic := c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.Source == kmsg.ConfigSourceDynamicBrokerConfig ||
				c.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig
			if all || dynamic {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func configsDescribe(ctx context.Context, cl *kgo.Client, o *configsOpts, stdout io.Writer) error {
	names := []string{o.entityName.v}
	if o.entityDefault {
		names = []string{""}
	} else if !o.entityName.set {
		if o.entityType.v != "topics" {
			return errors.New("--entity-name or --entity-default is required to describe brokers")
		}
		md := kmsg.NewPtrMetadataRequest()
		resp, err := cl.Request(ctx, md)
		if err != nil {
			return err
		}
		names = nil
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
		sort.Strings(names)
	}
	for _, name := range names {
		configs, err := describeEntity(ctx, cl, o, name, o.all)
		if err != nil {
			return err
		}
		kind := "Dynamic"
		if o.all {
			kind = "All"
		}
		if name == "" {
			fmt.Fprintf(stdout, "Default configs for brokers in the cluster are:\n")
		} else {
			fmt.Fprintf(stdout, "%s configs for %s %s are:\n", kind, strings.TrimSuffix(o.entityType.v, "s"), name)
		}
		for _, c := range configs {
			v := "null"
			if c.Value != nil && !c.IsSensitive {
				v = *c.Value
			}
			syn := make([]string, 0, len(c.ConfigSynonyms))
			for _, s := range c.ConfigSynonyms {
				sv := "null"
				if s.Value != nil {
					sv = *s.Value
				}
				syn = append(syn, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, sv))
			}
			fmt.Fprintf(stdout, "  %s=%s sensitive=%t synonyms={%s}\n", c.Name, v, c.IsSensitive, strings.Join(syn, ", "))
		}
	}
	return nil
}
