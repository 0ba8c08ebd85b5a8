package broker

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDynamicListeners adds a listener through AlterConfigs on the broker's id, produces
// through it, sees it in /brokers/ids/<id>, removes it again, and is refused removing the
// inter-broker listener.
func TestDynamicListeners(t *testing.T) {
	chroot := testChroot(t)
	b := startTestBroker(t, chroot, nil)
	waitController(t, b)
	adminWaitFor(t, 10*time.Second, "the broker in its metadata", func() bool { return len(b.Metadata().AliveBrokers()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	adm := kadm.NewClient(kgoClient(t, b.Addr("PLAINTEXT")))
	alter := func(kv map[string]string) error {
		t.Helper()
		var cfgs []kadm.AlterConfig
		for k, v := range kv {
			cfgs = append(cfgs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsg.StringPtr(v)})
		}
		res, err := adm.AlterBrokerConfigs(ctx, cfgs, b.ID())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				return errors.Join(r.Err, errors.New(r.ErrMessage))
			}
		}
		return nil
	}
	registered := func() string {
		info, err := b.zk.GetBroker(b.ID())
		if err != nil {
			t.Fatal(err)
		}
		return endpointList(info.Endpoints)
	}

	// A name without a protocol is refused before anything is stored.
	if err := alter(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,NOPROTO://127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "NOPROTO") {
		t.Fatalf("listener without a security protocol: %v", err)
	}
	// A new TLS listener needs its key store.
	if err := alter(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SSL",
	}); err == nil {
		t.Fatalf("SSL listener without a key store: %v", err)
	}
	if b.Addr("SECURE") != "" {
		t.Fatal("refused listener bound")
	}
	r := &dynamicListenerConfig{b: b}
	next := withProps(t, b.dynConfig.Current(), map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SSL",
	})
	if err := r.ValidateReconfiguration(next); err == nil || !strings.Contains(err.Error(), "SECURE") {
		t.Fatalf("validation of an SSL listener without a key store: %v", err)
	}

	if err := alter(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
	}); err != nil {
		t.Fatalf("adding EXTRA: %v", err)
	}
	adminWaitFor(t, 10*time.Second, "EXTRA bound", func() bool { return b.Addr("EXTRA") != "" })
	extra := b.Addr("EXTRA")
	_, port, _ := net.SplitHostPort(extra)
	adminWaitFor(t, 10*time.Second, "EXTRA registered", func() bool { return strings.Contains(registered(), "EXTRA://127.0.0.1:"+port) })

	// Metadata on EXTRA names the broker's EXTRA endpoint, so a client stays on it.
	cl := kgoClient(t, extra)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "dynl"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dynl", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce through EXTRA: %v", err)
	}
	cl.Close()

	// The inter-broker listener stays.
	if err := alter(map[string]string{
		"listeners":                      "EXTRA://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
	}); err == nil || !strings.Contains(err.Error(), "inter.broker.listener.name") {
		t.Fatalf("removing the inter-broker listener: %v", err)
	}

	if err := alter(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
	}); err != nil {
		t.Fatalf("removing EXTRA: %v", err)
	}
	adminWaitFor(t, 10*time.Second, "EXTRA gone", func() bool { return b.Addr("EXTRA") == "" })
	adminWaitFor(t, 10*time.Second, "EXTRA unregistered", func() bool { return !strings.Contains(registered(), "EXTRA") })
	if c, err := net.DialTimeout("tcp", extra, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after EXTRA was removed", extra)
	}
	if b.Addr("PLAINTEXT") == "" {
		t.Fatal("PLAINTEXT lost")
	}
}
