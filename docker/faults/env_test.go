package faults

import (
	"slices"
	"testing"
)

// composeProject is docker/compose.yaml's cluster as FindProject reads it from docker inspect.
func composeProject() *Project {
	broker := func(id int32, ip string) *Container {
		n := "broker" + string(rune('0'+id))
		return &Container{
			Name: "samsa-faults_" + n + "_1", Service: n, IP: ip, BrokerID: id,
			Names: []string{"samsa-faults_" + n + "_1", n, n, "0123abcd"},
			Env: map[string]string{
				"KAFKA_ZOOKEEPER_CONNECT":    "zoo1:2181,zoo2:2181,zoo3:2181/samsa",
				"KAFKA_ADVERTISED_LISTENERS": "INTERNAL://" + n + ":29092,EXTERNAL://localhost:9092",
			},
		}
	}
	zoo := func(id int, ip string) *Container {
		n := "zoo" + string(rune('0'+id))
		return &Container{
			Name: "samsa-faults_" + n + "_1", Service: n, IP: ip, ZKID: id, BrokerID: -1,
			Names: []string{"samsa-faults_" + n + "_1", n, n},
			Env:   map[string]string{"ZOO_SERVERS": "server.1=zoo1:2777:3888;2181 server.2=zoo2:2777:3888;2181"},
		}
	}
	return &Project{
		Name:    "samsa-faults",
		Brokers: []*Container{broker(1, "10.0.0.5"), broker(2, "10.0.0.6"), broker(3, "10.0.0.7")},
		ZK:      []*Container{zoo(1, "10.0.0.2"), zoo(2, "10.0.0.3"), zoo(3, "10.0.0.4")},
	}
}

func TestProjectAddresses(t *testing.T) {
	p := composeProject()
	boot, err := p.Bootstrap()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.5:29092", "10.0.0.6:29092", "10.0.0.7:29092"}; !slices.Equal(boot, want) {
		t.Errorf("bootstrap %v, want %v (the internal listener, not EXTERNAL://localhost)", boot, want)
	}
	for in, want := range map[string]string{
		"broker2:29092":   "10.0.0.6:29092",
		"localhost:9092":  "localhost:9092",
		"10.0.0.7:29092":  "10.0.0.7:29092",
		"zoo3:2181":       "10.0.0.4:2181",
		"no-port":         "no-port",
		"elsewhere:29092": "elsewhere:29092",
	} {
		if got := p.Resolve(in); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", in, got, want)
		}
	}
	servers, chroot, err := p.ZKConnect()
	if err != nil || chroot != "/samsa" || !slices.Equal(servers, []string{"10.0.0.2:2181", "10.0.0.3:2181", "10.0.0.4:2181"}) {
		t.Errorf("ZKConnect: %v %q %v", servers, chroot, err)
	}
	if got := p.QuorumPort(); got != 2777 {
		t.Errorf("quorum port %d, want 2777 (from ZOO_SERVERS)", got)
	}
	p.ZK[0].Env = map[string]string{}
	if got := p.QuorumPort(); got != 2888 {
		t.Errorf("quorum port without ZOO_SERVERS %d, want 2888", got)
	}
	p.Brokers[1].Env["KAFKA_ADVERTISED_LISTENERS"] = "EXTERNAL://localhost:9093"
	if _, err := p.Bootstrap(); err == nil {
		t.Error("Bootstrap: no error for a broker that advertises no name of its own")
	}
	if p.Broker(3) != p.Brokers[2] || p.Broker(9) != nil {
		t.Error("Broker(id)")
	}
}
