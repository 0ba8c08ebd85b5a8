package main

// docker-run and docker-health: the container image's entrypoint and health check. The
// broker is configured from environment variables in the convention of Kafka's container
// images (Confluent's cp-kafka and Apache's apache/kafka: KAFKA_BROKER_ID is broker.id;
// Bitnami's KAFKA_CFG_ prefix is accepted too), optionally on top of a mounted config file.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/samsa-kafka/samsa/internal/config"
)

func init() {
	commands["docker-run"] = command{runDockerRun, "run a broker configured from KAFKA_* environment variables (the container image's entrypoint)"}
	commands["docker-health"] = command{runDockerHealth, "exit 0 when the broker of this container serves and is registered (the image's health check)"}
}

// defaultDockerLogDir is where the image keeps its data: the image declares it a volume.
const defaultDockerLogDir = "/var/lib/samsa/data"

// envConfigFile names a mounted config file (server.properties or YAML) the environment
// overrides; it is not a broker property itself.
const envConfigFile = "SAMSA_CONFIG_FILE"

// kafkaEnvIgnored are variables Kafka's images read for the JVM and log4j, not broker
// properties (Confluent's KAFKA_ env exclusion list); samsa has no JVM, so they are ignored.
var kafkaEnvIgnored = map[string]bool{
	"KAFKA_VERSION": true, "KAFKA_HEAP_OPTS": true, "KAFKA_OPTS": true, "KAFKA_JMX_OPTS": true,
	"KAFKA_JMX_PORT": true, "KAFKA_JMX_HOSTNAME": true, "KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS": true, "KAFKA_LOG4J_OPTS": true, "KAFKA_LOG4J_ROOT_LOGLEVEL": true,
	"KAFKA_LOG4J_LOGGERS": true, "KAFKA_TOOLS_LOG4J_LOGLEVEL": true, "KAFKA_HOME": true,
}

// envSource is where one property of the environment's configuration came from.
type envSource struct {
	variable string // the environment variable, or "" for the file or a default
	value    string
}

// envConfig is the raw configuration a container's environment describes.
type envConfig struct {
	raw      map[string]string
	sources  map[string]envSource // property → the variable that set it
	file     string               // the mounted config file, if any
	warnings []string
}

// envPropertyName maps the part of a variable after its prefix to a property name as
// Confluent's images do: "_" is ".", "__" is "_", "___" is "-"
// (KAFKA_LISTENER_SECURITY_PROTOCOL_MAP is listener.security.protocol.map).
func envPropertyName(s string) string {
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, "___", "\x01")
	s = strings.ReplaceAll(s, "__", "\x02")
	s = strings.ReplaceAll(s, "_", ".")
	s = strings.ReplaceAll(s, "\x01", "-")
	return strings.ReplaceAll(s, "\x02", "_")
}

// dockerEnvConfig reads the configuration from environ (KEY=VALUE entries): the file named
// by SAMSA_CONFIG_FILE if set, then KAFKA_*, KAFKA_CFG_* and SAMSA_* variables over it. It
// fails with every problem at once, each naming the variable: an empty value (an unset
// compose substitution), two variables for one property with different values, a SAMSA_
// variable that is no samsa setting, no ZooKeeper connect string or broker id, a wildcard
// listener and no advertised listeners.
func dockerEnvConfig(environ []string) (*envConfig, error) {
	ec := &envConfig{raw: map[string]string{}, sources: map[string]envSource{}}
	env := make(map[string]string, len(environ))
	names := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, dup := env[k]; !dup {
			names = append(names, k)
		}
		env[k] = v
	}
	sort.Strings(names)

	var errs []error
	if f := env[envConfigFile]; f != "" {
		raw, err := config.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", envConfigFile, f, err))
		}
		for k, v := range raw {
			ec.raw[k] = v
			ec.sources[k] = envSource{value: v}
		}
		ec.file = f
	}
	for _, name := range names {
		v := env[name]
		var prop string
		switch {
		case name == envConfigFile:
			continue
		case strings.HasPrefix(name, "KAFKA_CFG_"):
			prop = envPropertyName(strings.TrimPrefix(name, "KAFKA_CFG_"))
		case strings.HasPrefix(name, "KAFKA_"):
			if kafkaEnvIgnored[name] {
				ec.warnings = append(ec.warnings, fmt.Sprintf("%s is a JVM/log4j setting of Kafka's images; samsa ignores it", name))
				continue
			}
			prop = envPropertyName(strings.TrimPrefix(name, "KAFKA_"))
		case strings.HasPrefix(name, "SAMSA_"):
			prop = "samsa." + envPropertyName(strings.TrimPrefix(name, "SAMSA_"))
			if _, ok := config.Lookup(prop); !ok {
				errs = append(errs, fmt.Errorf("%s: %s is not a samsa setting", name, prop))
				continue
			}
		default:
			continue
		}
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("%s is set but empty (an unset variable in the compose file?): remove it or give %s a value", name, prop))
			continue
		}
		if prev, ok := ec.sources[prop]; ok && prev.variable != "" {
			if prev.value != v {
				errs = append(errs, fmt.Errorf("%s=%s and %s=%s both set %s, to different values", prev.variable, prev.value, name, v, prop))
			}
			continue
		}
		ec.raw[prop] = v
		ec.sources[prop] = envSource{variable: name, value: v}
	}
	if _, ok := ec.raw["zookeeper.connect"]; !ok {
		errs = append(errs, errors.New("KAFKA_ZOOKEEPER_CONNECT is not set: the ZooKeeper ensemble, e.g. zoo1:2181,zoo2:2181,zoo3:2181/samsa"))
	}
	// A container may be recreated on a new host name with its volume: its id must not come
	// from broker.id.generation, which would differ from the one in the volume's meta.properties.
	if _, ok := ec.raw["broker.id"]; !ok {
		errs = append(errs, errors.New("KAFKA_BROKER_ID is not set: each broker's id, unique in the cluster (1, 2, 3, ...)"))
	}
	// Kafka advertises listeners itself when advertised.listeners is unset, and rejects a
	// wildcard address there; in a container the wildcard is the usual bind address, so say
	// which variable is missing rather than which value is wrong.
	if _, ok := ec.raw["advertised.listeners"]; !ok {
		for _, l := range strings.Split(ec.raw["listeners"], ",") {
			if strings.Contains(l, "://0.0.0.0:") || strings.Contains(l, "://[::]:") {
				errs = append(errs, fmt.Errorf("KAFKA_LISTENERS binds %s and KAFKA_ADVERTISED_LISTENERS is not set: set it to the addresses clients reach this broker at, e.g. %s://broker1:%s",
					strings.TrimSpace(l), strings.TrimSpace(l[:strings.Index(l, "://")]), l[strings.LastIndex(l, ":")+1:]))
				break
			}
		}
	}
	if _, ok := ec.raw["log.dirs"]; !ok {
		if _, ok := ec.raw["log.dir"]; !ok {
			ec.raw["log.dirs"] = defaultDockerLogDir
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ec, nil
}

// load validates the raw configuration (config.FromMap); its errors name Kafka's property
// names, so each is followed by the variables that set the properties it mentions.
func (ec *envConfig) load() (*config.Config, []string, error) {
	cfg, warnings, err := config.FromMap(ec.raw)
	warnings = append(ec.warnings, warnings...)
	if err == nil {
		return cfg, warnings, nil
	}
	msg := err.Error()
	props := make([]string, 0, len(ec.sources))
	for p := range ec.sources {
		props = append(props, p)
	}
	sort.Strings(props)
	var from []string
	for _, p := range props {
		if s := ec.sources[p]; mentionsProperty(msg, p) {
			if s.variable != "" {
				from = append(from, fmt.Sprintf("%s comes from %s=%s", p, s.variable, s.value))
			} else {
				from = append(from, fmt.Sprintf("%s comes from %s", p, ec.file))
			}
		}
	}
	if len(from) > 0 {
		msg += "\n(" + strings.Join(from, "; ") + ")"
	}
	return nil, warnings, errors.New(msg)
}

// mentionsProperty reports whether msg names property p as a whole name: listeners is not
// mentioned by "advertised.listeners".
func mentionsProperty(msg, p string) bool {
	isNamePart := func(c byte) bool {
		return c == '.' || c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], p)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		if (start == 0 || !isNamePart(msg[start-1])) && (end == len(msg) || !isNamePart(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// runDockerRun is the image's entrypoint: samsa broker with its configuration from the
// environment. A bad configuration exits 1 with every problem on stderr, which `docker logs`
// shows.
func runDockerRun(args []string, _ io.Reader, _, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "samsa docker-run: takes no arguments (configure it with KAFKA_* variables or %s); got %q\n", envConfigFile, args)
		return 2
	}
	ec, err := dockerEnvConfig(os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "samsa docker-run: invalid configuration in the environment:\n%s\n", indent(err.Error()))
		return 1
	}
	cfg, warnings, err := ec.load()
	return startLoadedBroker("samsa docker-run", "the environment", cfg, warnings, err, stderr)
}
