package main

// broker-api-versions mirrors Kafka 3.7's kafka-broker-api-versions.sh
// (kafka.admin.BrokerApiVersionsCommand): it finds the brokers through Metadata, asks each for
// its ApiVersions and prints them as NodeApiVersions.toString(true) does, with the "usable"
// version a Java 3.7 client would pick (the lower of the broker's and the client's maximum).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["broker-api-versions"] = command{runBrokerAPIVersions, "print the API versions each broker supports (kafka-broker-api-versions.sh)"}
}

const brokerAPIVersionsUsage = "This tool helps to retrieve broker version information."

// javaAPIKey is one org.apache.kafka.common.protocol.ApiKeys entry of the Kafka 3.7.1 client:
// its name, id, oldest and latest version, and whether it is one of ApiKeys.clientApis()
// (served by ZooKeeper-mode or KRaft brokers), which are printed as UNSUPPORTED when a broker
// does not list them.
type javaAPIKey struct {
	id             int16
	name           string
	oldest, latest int16
	clientAPI      bool
}

// javaAPIKeys37 is generated from the request schemas (validVersions, listeners) of Kafka 3.7.1.
var javaAPIKeys37 = []javaAPIKey{
	{0, "Produce", 0, 10, true},
	{1, "Fetch", 0, 16, true},
	{2, "ListOffsets", 0, 8, true},
	{3, "Metadata", 0, 12, true},
	{4, "LeaderAndIsr", 0, 7, true},
	{5, "StopReplica", 0, 4, true},
	{6, "UpdateMetadata", 0, 8, true},
	{7, "ControlledShutdown", 0, 3, true},
	{8, "OffsetCommit", 0, 9, true},
	{9, "OffsetFetch", 0, 9, true},
	{10, "FindCoordinator", 0, 4, true},
	{11, "JoinGroup", 0, 9, true},
	{12, "Heartbeat", 0, 4, true},
	{13, "LeaveGroup", 0, 5, true},
	{14, "SyncGroup", 0, 5, true},
	{15, "DescribeGroups", 0, 5, true},
	{16, "ListGroups", 0, 4, true},
	{17, "SaslHandshake", 0, 1, true},
	{18, "ApiVersions", 0, 3, true},
	{19, "CreateTopics", 0, 7, true},
	{20, "DeleteTopics", 0, 6, true},
	{21, "DeleteRecords", 0, 2, true},
	{22, "InitProducerId", 0, 4, true},
	{23, "OffsetForLeaderEpoch", 0, 4, true},
	{24, "AddPartitionsToTxn", 0, 4, true},
	{25, "AddOffsetsToTxn", 0, 3, true},
	{26, "EndTxn", 0, 3, true},
	{27, "WriteTxnMarkers", 0, 1, true},
	{28, "TxnOffsetCommit", 0, 3, true},
	{29, "DescribeAcls", 0, 3, true},
	{30, "CreateAcls", 0, 3, true},
	{31, "DeleteAcls", 0, 3, true},
	{32, "DescribeConfigs", 0, 4, true},
	{33, "AlterConfigs", 0, 2, true},
	{34, "AlterReplicaLogDirs", 0, 2, true},
	{35, "DescribeLogDirs", 0, 4, true},
	{36, "SaslAuthenticate", 0, 2, true},
	{37, "CreatePartitions", 0, 3, true},
	{38, "CreateDelegationToken", 0, 3, true},
	{39, "RenewDelegationToken", 0, 2, true},
	{40, "ExpireDelegationToken", 0, 2, true},
	{41, "DescribeDelegationToken", 0, 3, true},
	{42, "DeleteGroups", 0, 2, true},
	{43, "ElectLeaders", 0, 2, true},
	{44, "IncrementalAlterConfigs", 0, 1, true},
	{45, "AlterPartitionReassignments", 0, 0, true},
	{46, "ListPartitionReassignments", 0, 0, true},
	{47, "OffsetDelete", 0, 0, true},
	{48, "DescribeClientQuotas", 0, 1, true},
	{49, "AlterClientQuotas", 0, 1, true},
	{50, "DescribeUserScramCredentials", 0, 0, true},
	{51, "AlterUserScramCredentials", 0, 0, true},
	{52, "Vote", 0, 0, false},
	{53, "BeginQuorumEpoch", 0, 0, false},
	{54, "EndQuorumEpoch", 0, 0, false},
	{55, "DescribeQuorum", 0, 1, true},
	{56, "AlterPartition", 0, 3, true},
	{57, "UpdateFeatures", 0, 1, true},
	{58, "Envelope", 0, 0, true},
	{59, "FetchSnapshot", 0, 0, false},
	{60, "DescribeCluster", 0, 1, true},
	{61, "DescribeProducers", 0, 0, true},
	{62, "BrokerRegistration", 0, 3, false},
	{63, "BrokerHeartbeat", 0, 1, false},
	{64, "UnregisterBroker", 0, 0, true},
	{65, "DescribeTransactions", 0, 0, true},
	{66, "ListTransactions", 0, 0, true},
	{67, "AllocateProducerIds", 0, 0, true},
	{68, "ConsumerGroupHeartbeat", 0, 0, true},
	{69, "ConsumerGroupDescribe", 0, 0, true},
	{70, "ControllerRegistration", 0, 0, false},
	{71, "GetTelemetrySubscriptions", 0, 0, true},
	{72, "PushTelemetry", 0, 0, true},
	{73, "AssignReplicasToDirs", 0, 0, false},
	{74, "ListClientMetricsResources", 0, 0, true},
}

type brokerAPIVersionsOpts struct {
	bootstrap, commandConfig optString
}

func parseBrokerAPIVersionsArgs(args []string, stderr io.Writer) (*brokerAPIVersionsOpts, *flag.FlagSet, error) {
	o := &brokerAPIVersionsOpts{}
	fs := newFlagSet("samsa broker-api-versions", stderr)
	fs.Var(&o.commandConfig, "command-config", "A property file containing configs to be passed to Admin Client.")
	fs.Var(&o.bootstrap, "bootstrap-server", "REQUIRED: The server to connect to.")
	if len(args) == 0 {
		return nil, fs, usageErr(brokerAPIVersionsUsage)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if !o.bootstrap.set {
		return nil, fs, usageErr("Missing required argument \"[bootstrap-server]\"")
	}
	return o, fs, nil
}

// javaNode is org.apache.kafka.common.Node.toString.
func javaNode(host string, port, id int32, rack *string) string {
	r := "null"
	if rack != nil {
		r = *rack
	}
	return fmt.Sprintf("%s:%d (id: %d rack: %s)", host, port, id, r)
}

// nodeAPIVersionsText is NodeApiVersions.toString(true) for a broker's ApiVersions keys.
func nodeAPIVersionsText(keys []kmsg.ApiVersionsResponseApiKey) string {
	known := map[int16]javaAPIKey{}
	for _, k := range javaAPIKeys37 {
		known[k.id] = k
	}
	text := map[int16]string{}
	for _, k := range keys {
		var b strings.Builder
		jk, ok := known[k.ApiKey]
		if ok {
			fmt.Fprintf(&b, "%s(%d): ", jk.name, jk.id)
		} else {
			fmt.Fprintf(&b, "UNKNOWN(%d): ", k.ApiKey)
		}
		if k.MinVersion == k.MaxVersion {
			fmt.Fprintf(&b, "%d", k.MinVersion)
		} else {
			fmt.Fprintf(&b, "%d to %d", k.MinVersion, k.MaxVersion)
		}
		if ok {
			switch {
			case jk.latest < k.MinVersion:
				b.WriteString(" [unusable: node too new]")
			case k.MaxVersion < jk.oldest:
				b.WriteString(" [unusable: node too old]")
			default:
				fmt.Fprintf(&b, " [usable: %d]", min(jk.latest, k.MaxVersion))
			}
		}
		text[k.ApiKey] = b.String()
	}
	for _, jk := range javaAPIKeys37 {
		if _, ok := text[jk.id]; !ok && jk.clientAPI {
			text[jk.id] = fmt.Sprintf("%s(%d): UNSUPPORTED", jk.name, jk.id)
		}
	}
	ids := make([]int, 0, len(text))
	for id := range text {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = text[int16(id)]
	}
	return "(\n\t" + strings.Join(parts, ",\n\t") + "\n)"
}

func runBrokerAPIVersions(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseBrokerAPIVersionsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	ap, ok := loadAdminProps("broker-api-versions", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	// The tool's own AdminClient: request.timeout.ms 5000 unless configured.
	reqTimeout := 5 * time.Second
	if _, set := ap.props["request.timeout.ms"]; set {
		reqTimeout = ap.requestTimeout
	}
	seeds := splitServers(o.bootstrap.v)
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(ap.clientID("admin-1")),
		kgo.RequestRetries(0), kgo.RetryTimeout(reqTimeout)}, ap.opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" org.apache.kafka.common.config.ConfigException: %v\n", err)
		return 1
	}
	defer cl.Close()
	// awaitBrokers: Metadata from any bootstrap server until the cluster has brokers.
	var md *kmsg.MetadataResponse
	for md == nil || len(md.Brokers) == 0 {
		md = nil
		for i := range seeds {
			ctx, cancel := context.WithTimeout(context.Background(), reqTimeout)
			req := kmsg.NewPtrMetadataRequest()
			resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32+i)) // the i-th seed
			cancel()
			if err == nil {
				md = resp
				break
			}
		}
		if md == nil {
			nodes := make([]string, len(seeds))
			for i, s := range seeds {
				host, port := s, "9092"
				if j := strings.LastIndexByte(s, ':'); j >= 0 {
					host, port = s[:j], s[j+1:]
				}
				nodes[i] = fmt.Sprintf("%s:%s (id: -1 rack: null)", host, port)
			}
			fmt.Fprintf(stderr, "Exception in thread \"main\" java.lang.RuntimeException: Request METADATA failed on brokers List(%s)\n", strings.Join(nodes, ", "))
			return 1
		}
		if len(md.Brokers) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	brokers := append([]kmsg.MetadataResponseBroker(nil), md.Brokers...)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].NodeID < brokers[j].NodeID })
	for _, b := range brokers {
		node := javaNode(b.Host, b.Port, b.NodeID, b.Rack)
		ctx, cancel := context.WithTimeout(context.Background(), reqTimeout)
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa", "3.7.1" // v3 requires both
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		cancel()
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			fmt.Fprintf(stdout, "%s -> ERROR: %s\n", node, javaErrText(err))
			continue
		}
		fmt.Fprintf(stdout, "%s -> %s\n", node, nodeAPIVersionsText(resp.ApiKeys))
	}
	return 0
}
