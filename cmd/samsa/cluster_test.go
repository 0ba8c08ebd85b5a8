package main

import (
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func TestClusterUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "too few arguments\n"},
		{[]string{"nope"}, "argument command: invalid choice: 'nope' (choose from 'cluster-id', 'unregister')\n"},
		{[]string{"cluster-id"}, "one of the arguments --bootstrap-server/-b --bootstrap-controller/-C is required\n"},
		{[]string{"cluster-id", "-b", "h:1", "-C", "h:2"}, "argument --bootstrap-controller/-C: not allowed with argument --bootstrap-server/-b\n"},
		{[]string{"unregister", "--bootstrap-server", "h:1"}, "argument --id/-i is required\n"},
	} {
		code, out, errb := runTool(append([]string{"cluster"}, tt.args...)...)
		if code != 1 || out != "" || !strings.HasPrefix(errb, tt.want) {
			t.Errorf("%v: code %d out %q err %q", tt.args, code, out, errb)
		}
	}
}

// Against live brokers: the cluster id ZooKeeper holds, unregister refused as Kafka's
// ZooKeeper-mode brokers refuse it, and a broker given as a KRaft controller.
func TestClusterEndToEnd(t *testing.T) {
	t.Parallel()
	c := startToolBrokers(t, 2, 1)
	zk := zkConnect(t, c.connect, zkmeta.Security{})
	id, err := zk.GetClusterID()
	if err != nil || id == "" {
		t.Fatalf("cluster id %q: %v", id, err)
	}
	code, out, errb := runTool("cluster", "cluster-id", "--bootstrap-server", c.addrs[1])
	if code != 0 || out != "Cluster ID: "+id+"\n" || errb != "" {
		t.Fatalf("cluster-id: code %d %q %q", code, out, errb)
	}
	code, out, errb = runTool("cluster", "unregister", "-b", c.bootstrap(), "--id", "1")
	if code != 0 || out != "The target cluster does not support the broker unregistration API.\n" || errb != "" {
		t.Fatalf("unregister: code %d %q %q", code, out, errb)
	}
	if ids, err := zk.GetBrokerIDs(); err != nil || len(ids) != 2 {
		t.Fatalf("brokers after unregister: %v %v", ids, err)
	}
	code, out, errb = runTool("cluster", "cluster-id", "--bootstrap-controller", c.addrs[0])
	if code != 1 || out != "" || errb != "org.apache.kafka.common.errors.MismatchedEndpointTypeException: The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER\n" {
		t.Fatalf("controller: code %d %q %q", code, out, errb)
	}
}
