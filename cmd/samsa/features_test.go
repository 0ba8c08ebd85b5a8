package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

func runFeaturesTool(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = dispatch(append([]string{"features"}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// Argument handling before any connection: FeatureCommand's messages and exit code 1.
func TestFeaturesToolArguments(t *testing.T) {
	b := "--bootstrap-server=127.0.0.1:1"
	cases := []struct {
		args   []string
		stderr string
	}{
		{[]string{"describe"}, "one of the arguments --bootstrap-server --bootstrap-controller is required"},
		{[]string{b}, "too few arguments"},
		{[]string{b, "list"}, "invalid choice: 'list'"},
		{[]string{"--bootstrap-controller", "127.0.0.1:1", "describe"}, "--bootstrap-controller is not supported"},
		{[]string{b, "upgrade"}, "You must specify at least one feature to upgrade\n"},
		{[]string{b, "disable", "--dry-run"}, "You must specify at least one feature to disable\n"},
		{[]string{b, "upgrade", "--feature", "foo"}, "Can't parse feature=level string foo: equals sign not found.\n"},
		{[]string{b, "upgrade", "--feature", "foo=x"}, "Can't parse feature=level string foo=x: unable to parse x as a short.\n"},
		{[]string{b, "upgrade", "--feature", "foo=40000"}, "unable to parse 40000 as a short.\n"},
		{[]string{b, "upgrade", "--feature", "foo=0"}, "The downgradeType flag should be set to SAFE or UNSAFE when the provided maxVersionLevel:0 is < 1.\n"},
		{[]string{b, "downgrade", "--feature", "foo=-1"}, "Cannot specify a negative version level.\n"},
		{[]string{b, "upgrade", "--feature", "foo=1", "--feature", " foo =2"}, "Feature foo was specified more than once.\n"},
		{[]string{b, "disable", "--feature", "a", "--feature", "a"}, "Feature a was specified more than once.\n"},
		{[]string{b, "upgrade", "--metadata", "3.3-IV1", "--feature", "metadata.version=5"}, "Feature metadata.version was specified more than once.\n"},
		{[]string{b, "upgrade", "--feature", "=1"}, "Provided feature can not be empty.\n"},
		{[]string{b, "upgrade", "--metadata", "9.9"}, "Unsupported metadata version 9.9. Supported metadata versions are 3.3-IV0, 3.3-IV1, 3.3-IV2, 3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, 3.7-IV2, 3.7-IV3, 3.7-IV4\n"},
		{[]string{b, "upgrade", "--metadata", "2.8"}, "Cannot specify a negative version level.\n"},
		{[]string{b, "describe", "--feature", "x=1"}, "flag provided but not defined: -feature"},
	}
	for _, c := range cases {
		stdout, stderr, code := runFeaturesTool(c.args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, stdout, stderr, c.stderr)
		}
	}
	// The property file is read before the updates are (Admin.create comes first).
	missing := t.TempDir() + "/absent.properties"
	if _, stderr, code := runFeaturesTool(b, "--command-config", missing, "upgrade"); code != 1 ||
		!strings.HasPrefix(stderr, "samsa features: --command-config: open "+missing) {
		t.Errorf("missing property file: exit %d, stderr %q", code, stderr)
	}
	refused := writeProps(t, "security.protocol=FOO\n")
	if _, stderr, code := runFeaturesTool(b, "--command-config", refused, "describe"); code != 1 ||
		stderr != "samsa features: --command-config: Invalid value FOO for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL\n" {
		t.Errorf("refused property file: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := runFeaturesTool(b, "describe", "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}

func TestMetadataVersionLevels(t *testing.T) {
	cases := map[string]int16{
		"3.0-IV1": 1, "3.0": 1, "3.3-IV0": 4, "3.3": 7, "3.7-IV4": 19, "3.7": 19, "3.7.1": 19, "3.8-IV0": 20,
		"0.10.2-IV0": -1, "0.8.2": -1, "0.8.2.1": -1, "2.7": -1, "3.0-IV0": -1,
	}
	for v, want := range cases {
		if got, ok := metadataVersionLevel(v); !ok || got != want {
			t.Errorf("metadataVersionLevel(%q) = %d, %v; want %d", v, got, ok, want)
		}
	}
	for _, v := range []string{"3.8", "9.9", "3.3-IV9", "x"} {
		if got, ok := metadataVersionLevel(v); ok {
			t.Errorf("metadataVersionLevel(%q) = %d, accepted", v, got)
		}
	}
	for level, want := range map[int16]string{0: "UNKNOWN 0", 4: "3.3-IV0", 19: "3.7-IV4", 21: "UNKNOWN 21"} {
		if got := featureLevelString("metadata.version", level); got != want {
			t.Errorf("featureLevelString(%d) = %q, want %q", level, got, want)
		}
	}
	if got := featureLevelString("other", 3); got != "3" {
		t.Errorf("featureLevelString(other) = %q", got)
	}
}

// The result lines for successes and failures, real and dry runs (FeatureCommand.update).
func TestFeatureResultLines(t *testing.T) {
	updates := map[string]featureUpdate{"b": {2, 1}, "a": {3, 1}}
	var out bytes.Buffer
	if err := printFeatureResults(&out, "upgrade", false, updates, nil); err != nil || out.String() != "a was upgraded to 3.\nb was upgraded to 2.\n" {
		t.Fatalf("upgrade: %q %v", out.String(), err)
	}
	out.Reset()
	err := printFeatureResults(&out, "downgrade", true, updates, map[string]string{"b": "Boom."})
	if out.String() != "a can be downgraded to 3.\nCan not downgrade b to 2. Boom.\n" || err == nil || err.Error() != "1 out of 2 operation(s) failed." {
		t.Fatalf("downgrade dry run: %q %v", out.String(), err)
	}
	out.Reset()
	err = printFeatureResults(&out, "disable", false, map[string]featureUpdate{"x": {0, 2}, "y": {0, 2}}, map[string]string{"x": "No."})
	if out.String() != "Could not disable x. No.\ny was disabled.\n" || err == nil {
		t.Fatalf("disable: %q %v", out.String(), err)
	}
	out.Reset()
	if err := printFeatureResults(&out, "disable", true, map[string]featureUpdate{"y": {0, 3}}, nil); err != nil || out.String() != "y can be disabled.\n" {
		t.Fatalf("disable dry run: %q %v", out.String(), err)
	}
}

// Against two live brokers: describe prints nothing (a ZooKeeper-mode broker supports no
// feature, as Kafka's), and every update is refused by the controller with Kafka's reasons,
// leaving /feature as it was.
func TestFeaturesToolEndToEnd(t *testing.T) {
	zk := zktest.Start(t)
	connect := zk.Connect("/features")
	var addrs []string
	for id := 0; id < 2; id++ {
		cfg, _, err := config.FromMap(map[string]string{
			"broker.id":                  strconv.Itoa(id),
			"listeners":                  "PLAINTEXT://127.0.0.1:0",
			"log.dirs":                   t.TempDir(),
			"zookeeper.connect":          connect,
			"controlled.shutdown.enable": "false",
		})
		if err != nil {
			t.Fatal(err)
		}
		b, err := broker.New(cfg, testLog(t).WithField("broker", id))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = b.Start(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Shutdown)
		addrs = append(addrs, b.Addr("PLAINTEXT"))
	}
	boot := strings.Join(addrs, ",")
	zc, err := zkmeta.Connect(context.Background(), connect, 6*time.Second, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zc.Close() })
	deadline := time.Now().Add(15 * time.Second)
	for {
		if ok, _, _ := zc.Exists(zkmeta.FeaturePath); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no /feature after 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	stdout, stderr, code := runFeaturesTool("--bootstrap-server", boot, "describe")
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("describe: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	const notSupported = "Could not apply finalized feature update because the provided feature is not supported."
	cases := []struct {
		args           []string
		stdout, stderr string
	}{
		{[]string{"upgrade", "--feature", "foo=1"},
			"Could not upgrade foo to 1. " + notSupported + "\n", "1 out of 1 operation(s) failed.\n"},
		{[]string{"upgrade", "--feature", "foo=1", "--dry-run"},
			"Can not upgrade foo to 1. " + notSupported + "\n", "1 out of 1 operation(s) failed.\n"},
		{[]string{"downgrade", "--metadata", "3.3-IV0", "--feature", "a=1", "--unsafe"},
			"Could not downgrade a to 1. " + notSupported + "\nCould not downgrade metadata.version to 4. " + notSupported + "\n",
			"2 out of 2 operation(s) failed.\n"},
		{[]string{"disable", "--feature", "bar"},
			"Could not disable bar. Can not delete non-existing finalized feature.\n", "1 out of 1 operation(s) failed.\n"},
	}
	for _, c := range cases {
		stdout, stderr, code := runFeaturesTool(append([]string{"--bootstrap-server", boot}, c.args...)...)
		if code != 1 || stdout != c.stdout || stderr != c.stderr {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant stdout %q\nstderr %q", c.args, code, stdout, stderr, c.stdout, c.stderr)
		}
	}
	data, st, err := zc.Get(zkmeta.FeaturePath)
	if err != nil || string(data) != `{"features":{},"version":2,"status":1}` || st.Version != 0 {
		t.Fatalf("/feature = %s (version %d), %v", data, st.Version, err)
	}

	// No broker listening: the admin client's error, exit 1.
	if _, stderr, code := runFeaturesTool("--bootstrap-server", "127.0.0.1:1", "upgrade", "--feature", "foo=1"); code != 1 || stderr == "" {
		t.Fatalf("unreachable broker: exit %d, stderr %q", code, stderr)
	}
}
