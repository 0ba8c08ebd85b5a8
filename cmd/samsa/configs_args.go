package main

// configs_args.go is ConfigCommand's ConfigCommandOptions: the entity flags, their pairing in
// command-line order and checkArgs, with Kafka's messages.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// ConfigType's names, and ConfigCommand's broker-loggers.
const (
	entityTopics        = "topics"
	entityClients       = "clients"
	entityUsers         = "users"
	entityBrokers       = "brokers"
	entityIPs           = "ips"
	entityBrokerLoggers = "broker-loggers"
	entityClientMetrics = "client-metrics"
)

// brokerSupportedConfigTypes and zkSupportedConfigTypes are ConfigCommand's lists, in its order.
var (
	brokerSupportedConfigTypes = []string{entityTopics, entityClients, entityUsers, entityBrokers, entityIPs, entityBrokerLoggers, entityClientMetrics}
	zkSupportedConfigTypes     = []string{entityUsers, entityBrokers}
)

// entityNameList records --entity-name and --entity-default in command-line order: Kafka
// pairs the i-th name (or default, "") with the i-th --entity-type.
type entityNameList struct {
	order      []string
	names      []string // --entity-name values only
	hasDefault bool
}

type entityNameFlag struct{ l *entityNameList }

func (f entityNameFlag) String() string { return "" }
func (f entityNameFlag) Set(v string) error {
	f.l.order, f.l.names = append(f.l.order, v), append(f.l.names, v)
	return nil
}

type entityDefaultFlag struct{ l *entityNameList }

func (f entityDefaultFlag) String() string   { return "" }
func (f entityDefaultFlag) IsBoolFlag() bool { return true }
func (f entityDefaultFlag) Set(string) error {
	f.l.order, f.l.hasDefault = append(f.l.order, ""), true
	return nil
}

// presenceFlag is a flag without argument that records that it was given.
type presenceFlag struct{ set bool }

func (p *presenceFlag) String() string   { return "" }
func (p *presenceFlag) IsBoolFlag() bool { return true }
func (p *presenceFlag) Set(string) error { p.set = true; return nil }

type configsOpts struct {
	bootstrap, bootstrapController, commandConfig optString
	zookeeper, zkTLSConfigFile                    optString
	entityTypeVals                                multiFlag
	entity                                        entityNameList
	describe, alter, all, force                   presenceFlag
	addConfig, deleteConfig                       multiFlag
	addConfigFile                                 optString

	// The short entity forms, in ConfigCommand's entityFlags and entityDefaultsFlags order.
	topic, client, user, broker, brokerLogger, ip            optString
	clientDefaults, userDefaults, brokerDefaults, ipDefaults presenceFlag
}

// shortEntities are the given short forms as (type, name) in ConfigCommand's order.
func (o *configsOpts) shortEntities() (types, names []string) {
	for _, e := range []struct {
		f *optString
		t string
	}{{&o.topic, entityTopics}, {&o.client, entityClients}, {&o.user, entityUsers}, {&o.broker, entityBrokers},
		{&o.brokerLogger, entityBrokerLoggers}, {&o.ip, entityIPs}} {
		if e.f.set {
			types, names = append(types, e.t), append(names, e.f.v)
		}
	}
	for _, e := range []struct {
		f *presenceFlag
		t string
	}{{&o.clientDefaults, entityClients}, {&o.userDefaults, entityUsers}, {&o.brokerDefaults, entityBrokers}, {&o.ipDefaults, entityIPs}} {
		if e.f.set {
			types, names = append(types, e.t), append(names, "")
		}
	}
	return types, names
}

// entityTypes is ConfigCommandOptions.entityTypes: --entity-type values, then the short forms.
func (o *configsOpts) entityTypes() []string {
	t, _ := o.shortEntities()
	return append(append([]string(nil), o.entityTypeVals...), t...)
}

// entityNames is ConfigCommandOptions.entityNames: names and defaults ("") in command-line
// order, then the short forms'.
func (o *configsOpts) entityNames() []string {
	_, n := o.shortEntities()
	return append(append([]string(nil), o.entity.order...), n...)
}

func (o *configsOpts) hasShortEntity() bool {
	t, _ := o.shortEntities()
	return len(t) > 0
}

// argError is an IllegalArgumentException or InvalidConfigurationException of ConfigCommand:
// the tool prints its message alone and exits 1.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErr(format string, a ...any) error { return &argError{fmt.Sprintf(format, a...)} }

func parseConfigsArgs(args []string, stderr io.Writer) (*configsOpts, *flag.FlagSet, error) {
	o := &configsOpts{}
	fs := newFlagSet("samsa configs", stderr)
	fs.Var(&o.zookeeper, "zookeeper", "DEPRECATED. The connection string for the zookeeper connection in the form host:port[/chroot]. "+
		"Required when configuring SCRAM credentials for users or dynamic broker configs when the relevant broker(s) are down. Not allowed otherwise.")
	fs.Var(&o.bootstrap, "bootstrap-server", "The Kafka servers to connect to.")
	fs.Var(&o.bootstrapController, "bootstrap-controller", "The Kafka controllers to connect to (refused: samsa runs ZooKeeper-mode controllers).")
	fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client. "+
		"This is used only with --bootstrap-server option for describing and altering broker configs.")
	fs.Var(&o.alter, "alter", "Alter the configuration for the entity.")
	fs.Var(&o.describe, "describe", "List configs for the given entity.")
	fs.Var(&o.all, "all", "List all configs for the given topic, broker, or broker-logger entity (includes static configuration when the entity type is brokers)")
	fs.Var(&o.entityTypeVals, "entity-type", "Type of entity (topics/clients/users/brokers/broker-loggers/ips/client-metrics)")
	fs.Var(entityNameFlag{&o.entity}, "entity-name", "Name of entity (topic name/client id/user principal name/broker id/ip/client metrics)")
	fs.Var(entityDefaultFlag{&o.entity}, "entity-default", "Default entity name for clients/users/brokers/ips (applies to corresponding entity type in command line)")
	fs.Var(&o.addConfig, "add-config", "Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'. "+
		"Entity types 'users' and 'clients' may be specified together to update config for clients of a specific user.")
	fs.Var(&o.addConfigFile, "add-config-file", "Path to a properties file with configs to add. See add-config for a list of valid configurations.")
	fs.Var(&o.deleteConfig, "delete-config", "config keys to remove 'k1,k2'")
	fs.Var(&o.force, "force", "Suppress console prompts")
	fs.Var(&o.topic, "topic", "The topic's name.")
	fs.Var(&o.client, "client", "The client's ID.")
	fs.Var(&o.clientDefaults, "client-defaults", "The config defaults for all clients.")
	fs.Var(&o.user, "user", "The user's principal name.")
	fs.Var(&o.userDefaults, "user-defaults", "The config defaults for all users.")
	fs.Var(&o.broker, "broker", "The broker's ID.")
	fs.Var(&o.brokerDefaults, "broker-defaults", "The config defaults for all brokers.")
	fs.Var(&o.brokerLogger, "broker-logger", "The broker's ID for its logger config.")
	fs.Var(&o.ipDefaults, "ip-defaults", "The config defaults for all IPs.")
	fs.Var(&o.ip, "ip", "The IP address.")
	fs.Var(&o.zkTLSConfigFile, "zk-tls-config-file", "Identifies the file where ZooKeeper client TLS connectivity properties are defined. "+
		"Any properties other than zookeeper.ssl.* (and the samsa ZooKeeper digest identity "+zkmeta.DigestKey+"=user:password) are ignored.")
	if len(args) == 0 {
		return nil, fs, usageErr("This tool helps to manipulate and describe entity config for a topic, client, user, broker, ip or client-metrics")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if err := o.checkArgs(); err != nil {
		return nil, fs, err
	}
	return o, fs, nil
}

// checkArgs is ConfigCommandOptions.checkArgs, its checks in its order.
func (o *configsOpts) checkArgs() error {
	if o.describe.set == o.alter.set {
		return usageErr("Command must include exactly one action: --describe, --alter")
	}
	if o.describe.set {
		switch {
		case len(o.addConfig) > 0:
			return usageErr(`Option "[describe]" can't be used with option "[add-config]"`)
		case len(o.deleteConfig) > 0:
			return usageErr(`Option "[describe]" can't be used with option "[delete-config]"`)
		}
	}
	types := o.entityTypes()
	seen := map[string]bool{}
	var dups []string
	for _, t := range types {
		if seen[t] {
			dups = append(dups, t)
		}
		seen[t] = true
	}
	if len(dups) > 0 {
		return argErr("Duplicate entity type(s) specified: %s", strings.Join(dups, ","))
	}
	allowed, connect := brokerSupportedConfigTypes, "--bootstrap-server or --bootstrap-controller"
	if !o.bootstrap.set && !o.bootstrapController.set {
		allowed, connect = zkSupportedConfigTypes, "--zookeeper"
	}
	for _, t := range types {
		if !contains(allowed, t) {
			return argErr("Invalid entity type %s, the entity type must be one of %s with a %s argument", t, strings.Join(allowed, ", "), connect)
		}
	}
	if len(types) == 0 {
		return argErr("At least one entity type must be specified")
	}
	if len(types) > 1 && !(len(types) == 2 && seen[entityUsers] && seen[entityClients]) {
		return argErr("Only '%s' and '%s' entity types may be specified together", entityUsers, entityClients)
	}
	if (len(o.entity.order) > 0 || len(o.entityTypeVals) > 0) && o.hasShortEntity() {
		return argErr("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
	}
	names := o.entityNames()
	hasName, hasDefault := false, false
	for _, n := range names {
		hasName = hasName || n != ""
		hasDefault = hasDefault || n == ""
	}
	switch n := countSet(o.bootstrap.set, o.bootstrapController.set, o.zookeeper.set); {
	case n == 0:
		return argErr("One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified")
	case n > 1:
		return argErr("Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified")
	}
	if o.all.set && o.zookeeper.set {
		return argErr("--bootstrap-server must be specified for --all")
	}
	if o.zkTLSConfigFile.set && !o.zookeeper.set {
		return argErr("Only the --zookeeper option can be used with the --zk-tls-config-file option.")
	}
	// joptsimple's valueOf refuses an option given twice where one value is read.
	single := func(name string, values []string) (string, error) {
		if len(values) > 1 {
			return "", argErr("Found multiple arguments for option %s, but you asked for only one", name)
		}
		return values[0], nil
	}
	if hasName && (seen[entityBrokers] || seen[entityBrokerLoggers]) {
		var ids []string
		if len(o.entity.names) > 0 {
			id, err := single("entity-name", o.entity.names)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		for _, f := range []optString{o.broker, o.brokerLogger} {
			if f.set {
				ids = append(ids, f.v)
			}
		}
		for _, id := range ids {
			if _, err := strconv.ParseInt(id, 10, 32); err != nil {
				return argErr("The entity name for %s must be a valid integer broker id, but it is: %s", types[0], id)
			}
		}
	}
	if hasName && seen[entityIPs] {
		var ips []string
		if len(o.entity.names) > 0 {
			ip, err := single("entity-name", o.entity.names)
			if err != nil {
				return err
			}
			ips = append(ips, ip)
		}
		if o.ip.set {
			ips = append(ips, o.ip.v)
		}
		for _, ip := range ips {
			if !validIPEntity(ip) {
				return argErr("The entity name for %s must be a valid IP or resolvable host, but it is: %s", types[0], ip)
			}
		}
	}
	if o.describe.set && seen[entityBrokerLoggers] && !hasName {
		return argErr("an entity name must be specified with --describe of %s", strings.Join(types, ","))
	}
	if o.alter.set {
		if seen[entityUsers] || seen[entityClients] || seen[entityBrokers] || seen[entityIPs] {
			if !hasName && !hasDefault {
				return argErr("an entity-name or default entity must be specified with --alter of users, clients, brokers or ips")
			}
		} else if !hasName {
			return argErr("an entity name must be specified with --alter of %s", strings.Join(types, ","))
		}
		if len(o.addConfig) > 0 && o.addConfigFile.set {
			return argErr("Only one of --add-config or --add-config-file must be specified")
		}
		if len(o.addConfig) == 0 && !o.addConfigFile.set && len(o.deleteConfig) == 0 {
			return argErr("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter")
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validIPEntity is DynamicConfig.Ip.isValidIpEntity: an address or a name that resolves.
func validIPEntity(ip string) bool {
	if ip == zkmeta.ConfigEntityDefault || net.ParseIP(ip) != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, ip)
	return err == nil && len(addrs) > 0
}

// parseAddConfig is ConfigCommand.parseConfigsToBeAdded for one --add-config: pairs split at
// commas outside brackets, each at its first '=' outside brackets, brackets then removed.
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
			return nil, argErr("Invalid entity config: all configs to be added must be in the format \"key=val\".")
		}
		v = strings.NewReplacer("[", "", "]", "").Replace(strings.TrimSpace(v))
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
