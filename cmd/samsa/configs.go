package main

// configs mirrors Kafka 3.7's kafka-configs.sh (kafka.admin.ConfigCommand). With
// --bootstrap-server every entity type of ConfigCommand is served:
//
//	topics          DescribeConfigs / IncrementalAlterConfigs (SET, DELETE)
//	brokers         DescribeConfigs / AlterConfigs of one broker id or the cluster default
//	                (--entity-default), the dynamic entries resent whole, as ConfigCommand does
//	broker-loggers  DescribeConfigs / IncrementalAlterConfigs of BROKER_LOGGER resources
//	users, clients  client quotas through Describe/AlterClientQuotas, alone or combined
//	                (--entity-type users --entity-name u --entity-type clients --entity-name c);
//	                users' SCRAM credentials through Describe/AlterUserScramCredentials
//	ips             connection quotas through Describe/AlterClientQuotas
//
// The short forms (--topic, --client, --user, --broker, --broker-logger, --ip, and the
// --*-defaults flags) name the same entities. Argument checks, messages and output are
// ConfigCommand's; IllegalArgumentException and InvalidConfigurationException print their
// message alone, any other failure is "Error while executing config command with args ...".
//
// With --zookeeper instead of --bootstrap-server (and optionally --zk-tls-config-file), users'
// SCRAM credentials and the dynamic configs of brokers that are not running are read and
// written straight in /config (configs_users.go, configs_zk_brokers.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func runConfigs(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseConfigsArgs(args, stderr)
	var ae *argError
	if errors.As(err, &ae) {
		fmt.Fprintln(stderr, ae.msg)
		return 1
	}
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	if o.zookeeper.set {
		return runConfigsZk(o, args, stdout, stderr)
	}
	if o.bootstrapController.set {
		fmt.Fprintln(stderr, "samsa has no KRaft controllers: use --bootstrap-server")
		return 1
	}
	sec, ok := adminClientSecurity("configs", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	if o.alter.set && len(o.entityTypes()) != len(o.entityNames()) {
		fmt.Fprintln(stderr, "An entity name must be specified for every entity type")
		return 1
	}
	err = withAdminClient(o.bootstrap.v, "adminclient-1", 60*time.Second, sec, func(ctx context.Context, cl *kgo.Client) error {
		if o.alter.set {
			return configsAlter(ctx, cl, o, stdout)
		}
		return configsDescribe(ctx, cl, o, stdout)
	})
	if errors.As(err, &ae) {
		fmt.Fprintln(stderr, ae.msg)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "Error while executing config command with args '"+strings.Join(args, " ")+"'\n"+err.Error())
		return 1
	}
	return 0
}

// alterations are the configs to add (--add-config or --add-config-file) and the keys to
// delete, checked as parseConfigsToBeAdded does. The added keys come in the order a
// java.util.Properties holding them iterates, as Kafka sends and names them.
func (o *configsOpts) alterations() (add map[string]string, del []string, err error) {
	add = map[string]string{}
	if o.addConfigFile.set {
		if add, err = loadPropsFile(o.addConfigFile.v); err != nil {
			return nil, nil, err
		}
	}
	if len(o.addConfig) > 1 {
		return nil, nil, argErr("Found multiple arguments for option add-config, but you asked for only one")
	}
	for _, a := range o.addConfig {
		m, err := parseAddConfig(a)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range m {
			add[k] = v
		}
	}
	for _, k := range javaPropsOrder(add) {
		if !configKeyPattern.MatchString(k) {
			return nil, nil, argErr("Invalid character found for config key: %s", k)
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

// messageFormatWarning is parseConfigsToBeAdded's warning for message.format.version.
func messageFormatWarning(add map[string]string, stdout io.Writer) {
	if v, ok := add["message.format.version"]; ok {
		fmt.Fprintf(stdout, "WARNING: The configuration message.format.version=%s is specified. "+
			"This configuration will be ignored if the version is newer than the inter.broker.protocol.version specified in the broker or "+
			"if the inter.broker.protocol.version is 3.0 or newer. This configuration is deprecated and it will be removed in Apache Kafka 4.0.\n", v)
	}
}

// configsAlter is ConfigCommand.alterConfig.
func configsAlter(ctx context.Context, cl *kgo.Client, o *configsOpts, stdout io.Writer) error {
	types, names := o.entityTypes(), o.entityNames()
	add, del, err := o.alterations()
	if err != nil {
		return err
	}
	messageFormatWarning(add, stdout)
	typeHead, nameHead := types[0], names[0]
	switch typeHead {
	case entityTopics:
		if err := alterResourceIncremental(ctx, cl, kmsg.ConfigResourceTypeTopic, typeHead, nameHead, add, del, false); err != nil {
			return err
		}
	case entityBrokers:
		if err := alterBrokerConfigs(ctx, cl, nameHead, add, del); err != nil {
			return err
		}
	case entityBrokerLoggers:
		if err := alterResourceIncremental(ctx, cl, kmsg.ConfigResourceTypeBrokerLogger, typeHead, nameHead, add, del, true); err != nil {
			return err
		}
	case entityUsers, entityClients:
		if err := alterUsersOrClients(ctx, cl, types, names, add, del); err != nil {
			return err
		}
	case entityIPs:
		var unknown []string
		for _, k := range append(javaPropsOrder(add), del...) {
			if k != ipConnectionRateKey {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			return argErr("Only connection quota configs can be added for '%s' using --bootstrap-server. Unexpected config names: %s", entityIPs, strings.Join(unknown, ","))
		}
		if err := alterQuotaConfigs(ctx, cl, types, names, add, del); err != nil {
			return err
		}
	default:
		return argErr("Unsupported entity type: %s", typeHead)
	}
	if nameHead != "" {
		fmt.Fprintf(stdout, "Completed updating config for %s %s.\n", strings.TrimSuffix(typeHead, "s"), nameHead)
	} else {
		fmt.Fprintf(stdout, "Completed updating default config for %s in the cluster.\n", typeHead)
	}
	return nil
}

// alterResourceIncremental is alterConfig for topics and broker-loggers: deleted keys (and,
// for loggers, added ones) must exist, then IncrementalAlterConfigs SETs and DELETEs.
func alterResourceIncremental(ctx context.Context, cl *kgo.Client, rt kmsg.ConfigResourceType, entityType, name string,
	add map[string]string, del []string, loggers bool) error {
	current, err := getResourceConfig(ctx, cl, entityType, name, loggers, false)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, c := range current {
		have[c.Name] = true
	}
	var invalid []string
	for _, k := range del {
		if !have[k] {
			invalid = append(invalid, k)
		}
	}
	if loggers {
		for _, k := range javaPropsOrder(add) {
			if !have[k] {
				invalid = append(invalid, k)
			}
		}
		if len(invalid) > 0 {
			return argErr("Invalid broker logger(s): %s", strings.Join(invalid, ","))
		}
	} else if len(invalid) > 0 {
		return argErr("Invalid config(s): %s", strings.Join(invalid, ","))
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = rt, name
	for _, k := range javaPropsOrder(add) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(add[k])
		r.Configs = append(r.Configs, c)
	}
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpDelete, kmsg.StringPtr("")
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := brokerRoutedRequest(ctx, cl, req) // kgo sends a broker logger's request to that broker
	if err != nil {
		return err
	}
	for _, rr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if err := kafkaErr(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

// alterBrokerConfigs is alterConfig for brokers: Kafka 3.7's tool sends AlterConfigs with the
// whole new set of the entity's dynamic configs (the current ones, plus the added, minus the
// deleted), so a password config currently set (described without its value) must be given
// again.
func alterBrokerConfigs(ctx context.Context, cl *kgo.Client, name string, add map[string]string, del []string) error {
	current, err := getResourceConfig(ctx, cl, entityBrokers, name, false, false)
	if err != nil {
		return err
	}
	entries := map[string]*string{}
	for _, c := range current {
		entries[c.Name] = c.Value
	}
	var invalid []string
	for _, k := range del {
		if _, ok := entries[k]; !ok {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		return argErr("Invalid config(s): %s", strings.Join(invalid, ","))
	}
	for k, v := range add {
		entries[k] = kmsg.StringPtr(v)
	}
	for _, k := range del {
		delete(entries, k)
	}
	keys := make([]string, 0, len(entries))
	var missing []string
	for k, v := range entries {
		keys = append(keys, k)
		if v == nil {
			missing = append(missing, k)
		}
	}
	sort.Strings(keys)
	if len(missing) > 0 {
		sort.Strings(missing)
		return argErr("All sensitive broker config entries must be specified for --alter, missing entries: %s", scalaSet(missing))
	}
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
	for _, k := range keys {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, entries[k]
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := brokerRoutedRequest(ctx, cl, req) // kgo sends a broker id's request to that broker
	if err != nil {
		return err
	}
	for _, rr := range resp.(*kmsg.AlterConfigsResponse).Resources {
		if err := kafkaErr(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

// configsDescribe is ConfigCommand.describeConfig.
func configsDescribe(ctx context.Context, cl *kgo.Client, o *configsOpts, stdout io.Writer) error {
	types, names := o.entityTypes(), o.entityNames()
	switch types[0] {
	case entityTopics, entityBrokers, entityBrokerLoggers:
		return describeResourceConfig(ctx, cl, types[0], names, o.all.set, stdout)
	case entityUsers, entityClients:
		return describeQuotasAndScram(ctx, cl, types, names, stdout)
	case entityIPs:
		return describeQuotaConfigs(ctx, cl, types, names, stdout)
	case entityClientMetrics:
		return errors.New("samsa has no client metrics resources (KIP-714)")
	}
	return argErr("Invalid entity type: %s", types[0])
}

// describeResourceConfig prints the named entity, or every topic, or every broker and the
// cluster default.
func describeResourceConfig(ctx context.Context, cl *kgo.Client, entityType string, names []string, all bool, stdout io.Writer) error {
	var entities []string
	switch {
	case len(names) > 0:
		entities = names[:1]
	case entityType == entityTopics:
		var err error
		if entities, err = listAllTopics(ctx, cl); err != nil {
			return err
		}
	default:
		var err error
		if entities, err = clusterBrokerIDs(ctx, cl); err != nil {
			return err
		}
		entities = append(entities, "")
	}
	for _, e := range entities {
		if e == "" {
			fmt.Fprintf(stdout, "Default configs for %s in the cluster are:\n", entityType)
		} else {
			kind := "Dynamic"
			if all {
				kind = "All"
			}
			fmt.Fprintf(stdout, "%s configs for %s %s are:\n", kind, strings.TrimSuffix(entityType, "s"), e)
		}
		configs, err := getResourceConfig(ctx, cl, entityType, e, true, all)
		if err != nil {
			return err
		}
		for _, c := range configs {
			syn := make([]string, 0, len(c.ConfigSynonyms))
			for _, s := range c.ConfigSynonyms {
				syn = append(syn, fmt.Sprintf("%s:%s=%s", configSourceName(s.Source), s.Name, nullable(s.Value)))
			}
			fmt.Fprintf(stdout, "  %s=%s sensitive=%t synonyms={%s}\n", c.Name, nullable(c.Value), c.IsSensitive, strings.Join(syn, ", "))
		}
	}
	return nil
}

func nullable(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// configSourceName is ConfigEntry.ConfigSource's constant name for a wire source.
func configSourceName(s kmsg.ConfigSource) string {
	if s == 7 {
		return "DYNAMIC_CLIENT_METRICS_CONFIG"
	}
	return s.String()
}

// listAllTopics is Admin.listTopics(listInternal = true).names: in the order of the Java
// HashMap the admin client collects them in.
func listAllTopics(ctx context.Context, cl *kgo.Client) ([]string, error) {
	resp, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			names = append(names, *t.Topic)
		}
	}
	hashes := make([]int32, len(names))
	for i, n := range names {
		hashes[i] = javaStringHash(n)
	}
	order := javaHashMapOrder(hashes, 16)
	out := make([]string, len(order))
	for i, j := range order {
		out[i] = names[j]
	}
	return out, nil
}

// clusterBrokerIDs is Admin.describeCluster's nodes, in the broker's order.
func clusterBrokerIDs(ctx context.Context, cl *kgo.Client) ([]string, error) {
	resp, err := cl.Request(ctx, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeClusterResponse)
	if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(r.Brokers))
	for _, b := range r.Brokers {
		ids = append(ids, strconv.Itoa(int(b.NodeID)))
	}
	return ids, nil
}

// getResourceConfig is ConfigCommand.getResourceConfig: the entity's configs sorted by name,
// only those of its dynamic source unless all (broker loggers: all of them).
func getResourceConfig(ctx context.Context, cl *kgo.Client, entityType, name string, synonyms, all bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	var (
		rt     kmsg.ConfigResourceType
		source kmsg.ConfigSource = -1
	)
	brokerID := func() error {
		if _, err := strconv.ParseInt(name, 10, 32); err != nil {
			return argErr("The entity name for %s must be a valid integer broker id, found: %s", entityType, name)
		}
		return nil
	}
	switch entityType {
	case entityTopics:
		if name != "" {
			if err := validateTopicName(name); err != nil {
				return nil, err
			}
		}
		rt, source = kmsg.ConfigResourceTypeTopic, kmsg.ConfigSourceDynamicTopicConfig
	case entityBrokers:
		rt, source = kmsg.ConfigResourceTypeBroker, kmsg.ConfigSourceDynamicDefaultBrokerConfig
		if name != "" {
			if err := brokerID(); err != nil {
				return nil, err
			}
			source = kmsg.ConfigSourceDynamicBrokerConfig
		}
	case entityBrokerLoggers:
		if name != "" {
			if err := brokerID(); err != nil {
				return nil, err
			}
		}
		rt = kmsg.ConfigResourceTypeBrokerLogger
	default:
		return nil, argErr("Invalid entity type: %s", entityType)
	}
	if all {
		source = -1
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = synonyms
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = rt, name
	req.Resources = append(req.Resources, r)
	resp, err := brokerRoutedRequest(ctx, cl, req) // kgo sends a broker id's request to that broker
	if err != nil {
		return nil, err
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, rr := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		if err := kafkaErr(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return nil, err
		}
		for _, c := range rr.Configs {
			if source < 0 || c.Source == source {
				out = append(out, c)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// validateTopicName is Topic.validate (InvalidTopicException, so a failed command).
func validateTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return errors.New("Topic name cannot be \".\" or \"..\"")
	case len(name) > 249:
		return fmt.Errorf("Topic name is illegal, it can't be longer than 249 characters, topic name: %s", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// brokerRoutedRequest sends a request that kgo routes to the broker its resource names. Right
// after the client starts kgo may not know that broker yet (its first metadata load is under
// way) and fails with "unknown broker"; Kafka's admin client waits for metadata there, so
// this refreshes it and retries for a few seconds.
func brokerRoutedRequest(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := cl.Request(ctx, req)
		if err == nil || !strings.Contains(err.Error(), "unknown broker") || time.Now().After(deadline) {
			return resp, err
		}
		cl.ForceMetadataRefresh()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
