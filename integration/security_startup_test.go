package integration

// Start-up refusals of the real `samsa broker`: a security setting the broker cannot honour
// must stop it before it registers, with an error naming the key, and a non-zero exit; a
// broker that came up anyway would serve something weaker than the operator configured.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
)

func TestSecurityStartupRefusals(t *testing.T) {
	bin := samsaBinary(t)
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	jks := filepath.Join(t.TempDir(), "broker.jks")
	// A JKS file starts with the magic 0xFEEDFEED; the content beyond does not matter.
	if err := os.WriteFile(jks, []byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	sslStores := map[string]string{
		"ssl.keystore.type":       "PKCS12",
		"ssl.keystore.location":   certs.Broker.PKCS12,
		"ssl.keystore.password":   certs.Password,
		"ssl.truststore.type":     "PKCS12",
		"ssl.truststore.location": certs.Truststore,
		"ssl.truststore.password": certs.Password,
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	saslJAAS := map[string]string{
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_alice="alice-secret";`,
	}

	cases := []struct {
		name      string
		listeners string
		props     map[string]string
		want      []string // in the output, all of them
	}{
		// Every refusal below is this broker with one thing changed: it must start.
		{name: "control: SSL and SASL listeners start", listeners: "PLAINTEXT,SSL,SASL_PLAINTEXT",
			props: with(with(sslStores), "sasl.enabled.mechanisms", "PLAIN",
				"listener.name.sasl_plaintext.plain.sasl.jaas.config", saslJAAS["listener.name.sasl_plaintext.plain.sasl.jaas.config"],
				"authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")},
		{name: "unknown security protocol", listeners: "PLAINTEXT,EXTERNAL",
			props: map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:KERBEROS"},
			want:  []string{"listener.security.protocol.map", "KERBEROS"}},
		{name: "listener name without a protocol", listeners: "PLAINTEXT,TLS",
			want: []string{"configuration listeners", "no security protocol defined for listener TLS"}},
		{name: "SSL listener without a key store", listeners: "PLAINTEXT,SSL",
			props: with(sslStores, "ssl.keystore.type", "", "ssl.keystore.location", "", "ssl.keystore.password", ""),
			want:  []string{"listener SSL", "no SSL key store", "ssl.keystore.location"}},
		{name: "SSL key store file missing", listeners: "PLAINTEXT,SSL",
			props: with(sslStores, "ssl.keystore.location", filepath.Join(t.TempDir(), "no-such.p12")),
			want:  []string{"listener SSL", "ssl.keystore.location", "no-such.p12", "no such file"}},
		{name: "JKS key store", listeners: "PLAINTEXT,SSL",
			props: with(sslStores, "ssl.keystore.type", "JKS", "ssl.keystore.location", jks),
			want:  []string{"listener SSL", "ssl.keystore.type", "JKS key stores are not supported", "PKCS12"}},
		{name: "SASL mechanism without a JAAS entry", listeners: "PLAINTEXT,SASL_PLAINTEXT",
			props: with(saslJAAS, "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256"),
			want:  []string{"listener SASL_PLAINTEXT", "SCRAM-SHA-256", "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"}},
		{name: "GSSAPI enabled", listeners: "PLAINTEXT,SASL_PLAINTEXT",
			props: with(saslJAAS, "sasl.enabled.mechanisms", "PLAIN,GSSAPI"),
			want:  []string{"sasl.enabled.mechanisms", "GSSAPI (Kerberos) is not supported"}},
		{name: "unknown authorizer class", listeners: "PLAINTEXT",
			props: map[string]string{"authorizer.class.name": "com.example.OpenDoorAuthorizer"},
			want:  []string{"authorizer.class.name", "com.example.OpenDoorAuthorizer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			chroot := fmt.Sprintf("/TestSecurityStartupRefusals-%d", chrootSeq.Add(1))
			props := map[string]string{
				"broker.id":                    "7",
				"log.dirs":                     t.TempDir(),
				"zookeeper.connect":            zkServer.Connect(chroot),
				"zookeeper.session.timeout.ms": "6000",
			}
			var listeners []string
			for _, l := range strings.Split(tc.listeners, ",") {
				listeners = append(listeners, l+"://127.0.0.1:0")
			}
			props["listeners"] = strings.Join(listeners, ",")
			for k, v := range tc.props {
				props[k] = v
			}
			cfg := writeProperties(t, props)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "broker", "--config", cfg)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = sysProcAttr()
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			if tc.want == nil {
				// The control: it registers, then is stopped.
				waitFor(t, 20*time.Second, func() error {
					select {
					case err := <-exited:
						t.Fatalf("control broker exited: %v\n%s", err, out.String())
					default:
					}
					if !zkExists(t, chroot+"/brokers/ids/7") {
						return errors.New("not registered")
					}
					return nil
				})
				cmd.Process.Kill()
				<-exited
				return
			}

			var err error
			select {
			case err = <-exited:
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("still running after 15 s\n%s", out.String())
			}
			took := time.Since(start)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("exit: %v, want a non-zero status\n%s", err, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if zkExists(t, chroot+"/brokers/ids/7") {
				t.Errorf("the refused broker is registered in ZooKeeper")
			}
			t.Logf("exit %d after %v: %s", ee.ExitCode(), took.Round(time.Millisecond), lastLine(out.String()))
		})
	}
}

// writeProperties writes props as a server.properties file (sorted keys; '\' and newlines
// escaped as java.util.Properties reads them).
func writeProperties(t testing.TB, props map[string]string) string {
	t.Helper()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, esc.Replace(props[k]))
	}
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// zkExists asks the package's ZooKeeper directly (a fresh session, closed at once).
func zkExists(t testing.TB, path string) bool {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkServer.Addr()}, 10*time.Second, zk.WithLogger(discardLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ok, _, err := conn.Exists(path)
	if err != nil {
		t.Fatalf("zk exists %s: %v", path, err)
	}
	return ok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
