package main

// cluster mirrors Kafka 3.7's kafka-cluster.sh (org.apache.kafka.tools.ClusterTool):
// "cluster-id" prints the cluster id from DescribeCluster; "unregister --id N" calls
// UnregisterBroker, an API ZooKeeper-mode brokers do not offer, so against a samsa (or Kafka
// ZooKeeper) cluster it reports that the cluster does not support it, as Kafka's tool does.
// --bootstrap-controller targets KRaft controllers; a ZooKeeper-mode broker refuses
// DescribeCluster for the controller endpoint type, which the Admin client treats as fatal.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["cluster"] = command{runCluster, "print the cluster id, unregister a broker (kafka-cluster.sh)"}
}

type clusterOpts struct {
	command                    string
	bootstrap, controller, cfg optString
	id                         optInt
}

func parseClusterArgs(args []string, stderr io.Writer) (*clusterOpts, *flag.FlagSet, error) {
	base := newFlagSet("samsa cluster {cluster-id,unregister}", stderr)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil, base, flag.ErrHelp
		}
		return nil, base, usageErr("too few arguments")
	}
	o := &clusterOpts{command: args[0]}
	if o.command != "cluster-id" && o.command != "unregister" {
		return nil, base, usageErr("argument command: invalid choice: '%s' (choose from 'cluster-id', 'unregister')", o.command)
	}
	fs := newFlagSet("samsa cluster "+o.command, stderr)
	for _, name := range []string{"bootstrap-server", "b"} {
		fs.Var(&o.bootstrap, name, "A list of host/port pairs to use for establishing the connection to the Kafka cluster.")
	}
	for _, name := range []string{"bootstrap-controller", "C"} {
		fs.Var(&o.controller, name, "A list of host/port pairs to use for establishing the connection to the KRaft controllers.")
	}
	for _, name := range []string{"config", "c"} {
		fs.Var(&o.cfg, name, "A property file containing configurations for the Admin client.")
	}
	if o.command == "unregister" {
		for _, name := range []string{"id", "i"} {
			fs.Var(&o.id, name, "The ID of the broker to unregister.")
		}
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return nil, fs, err
	}
	switch {
	case o.bootstrap.set && o.controller.set:
		return nil, fs, usageErr("argument --bootstrap-controller/-C: not allowed with argument --bootstrap-server/-b")
	case !o.bootstrap.set && !o.controller.set:
		return nil, fs, usageErr("one of the arguments --bootstrap-server/-b --bootstrap-controller/-C is required")
	case o.command == "unregister" && !o.id.set:
		return nil, fs, usageErr("argument --id/-i is required")
	case o.id.set && (o.id.v < math.MinInt32 || o.id.v > math.MaxInt32):
		return nil, fs, usageErr("argument --id/-i: could not convert '%d' to Integer", o.id.v)
	}
	return o, fs, nil
}

func runCluster(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseClusterArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	ap, ok := loadAdminProps("cluster", "config", o.cfg, stderr)
	if !ok {
		return 1
	}
	servers := o.bootstrap.v
	if o.controller.set {
		servers = o.controller.v
	}
	err = withAdminClient(servers, ap.clientID("adminclient-1"), ap.apiTimeout, ap.opts, func(ctx context.Context, cl *kgo.Client) error {
		clusterID, err := describeClusterID(ctx, cl, o.controller.set)
		if err != nil {
			return err
		}
		switch o.command {
		case "cluster-id":
			if clusterID == "" {
				fmt.Fprintln(stdout, "No cluster ID found. The Kafka version is probably too old.")
			} else {
				fmt.Fprintln(stdout, "Cluster ID: "+clusterID)
			}
			return nil
		default:
			return unregisterBroker(ctx, cl, int32(o.id.v), stdout)
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, err.Error())
		return 1
	}
	return 0
}

// describeClusterID sends DescribeCluster to the cluster (v1 with the CONTROLLER endpoint
// type when the tool was given --bootstrap-controller, as the Admin client's metadata
// manager does) and returns the cluster id. An error response fails the call with the
// exception the code maps to.
func describeClusterID(ctx context.Context, cl *kgo.Client, controller bool) (string, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	var resp *kmsg.DescribeClusterResponse
	var err error
	if controller {
		req.SetVersion(1)
		req.EndpointType = 2
		resp, err = req.RequestWith(ctx, cl.Broker(math.MinInt32)) // the first bootstrap server
	} else {
		resp, err = req.RequestWith(ctx, cl)
	}
	if err != nil {
		return "", fmt.Errorf("org.apache.kafka.common.errors.TimeoutException: Call(callName=describeCluster) timed out: %v", err)
	}
	if resp.ErrorCode != 0 {
		return "", javaAPIErr(resp.ErrorCode, resp.ErrorMessage)
	}
	return resp.ClusterID, nil
}

// unregisterBroker is ClusterTool.unregisterCommand: the Admin client fails the call with
// UnsupportedVersionException when the broker does not list UnregisterBroker (64) in
// ApiVersions, which the tool reports on stdout, exiting 0.
func unregisterBroker(ctx context.Context, cl *kgo.Client, id int32, stdout io.Writer) error {
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "samsa", "3.7.1"
	avResp, err := av.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		return fmt.Errorf("org.apache.kafka.common.errors.TimeoutException: Call(callName=unregisterBroker) timed out: %v", err)
	}
	supported := false
	for _, k := range avResp.ApiKeys {
		supported = supported || k.ApiKey == 64
	}
	if !supported {
		fmt.Fprintln(stdout, "The target cluster does not support the broker unregistration API.")
		return nil
	}
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		if errors.Is(err, kerr.UnsupportedVersion) {
			fmt.Fprintln(stdout, "The target cluster does not support the broker unregistration API.")
			return nil
		}
		return fmt.Errorf("org.apache.kafka.common.errors.TimeoutException: Call(callName=unregisterBroker) timed out: %v", err)
	}
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.UnsupportedVersion.Code {
			fmt.Fprintln(stdout, "The target cluster does not support the broker unregistration API.")
			return nil
		}
		return javaAPIErr(resp.ErrorCode, resp.ErrorMessage)
	}
	fmt.Fprintf(stdout, "Broker %d is no longer registered.\n", id)
	return nil
}
