package broker

// Request builders for the admin and controller-facing keys in the table test
// TestEveryAdvertisedVersionRoundTrips. The data env has no ZooKeeper and no admin state, so
// the controller-only APIs answer NOT_CONTROLLER there; the ZooKeeper-backed behaviour is
// tested in admin_test.go.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	requestBuilders[4] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrLeaderAndISRRequest()
			req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
			ps := kmsg.NewLeaderAndISRRequestTopicPartition()
			ps.Topic, ps.Partition, ps.ControllerEpoch, ps.Leader = "rt-admin", 0, e.ctrlEp, testBrokerID
			ps.LeaderEpoch, ps.ISR, ps.Replicas = int32(v)+1, []int32{testBrokerID}, []int32{testBrokerID}
			if v < 2 {
				req.PartitionStates = []kmsg.LeaderAndISRRequestTopicPartition{ps}
			} else {
				ts := kmsg.NewLeaderAndISRRequestTopicState()
				ts.Topic, ts.TopicID = "rt-admin", [16]byte{0xad}
				ts.PartitionStates = []kmsg.LeaderAndISRRequestTopicPartition{ps}
				req.TopicStates = []kmsg.LeaderAndISRRequestTopicState{ts}
			}
			lb := kmsg.NewLeaderAndISRRequestLiveLeader()
			lb.BrokerID, lb.Host, lb.Port = testBrokerID, "127.0.0.1", 9092
			req.LiveLeaders = []kmsg.LeaderAndISRRequestLiveLeader{lb}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.LeaderAndISRResponse)
			n := len(resp.Partitions)
			for _, tp := range resp.Topics {
				n += len(tp.Partitions)
			}
			if resp.ErrorCode != 0 || n != 1 {
				t.Fatalf("LeaderAndIsr response %+v", resp)
			}
		},
	}
	requestBuilders[5] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrStopReplicaRequest()
			req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
			t := kmsg.NewStopReplicaRequestTopic()
			t.Topic, t.Partition, t.Partitions = "rt-stopped", 0, []int32{0}
			ps := kmsg.NewStopReplicaRequestTopicPartitionState()
			ps.Partition, ps.LeaderEpoch = 0, -1
			t.PartitionStates = []kmsg.StopReplicaRequestTopicPartitionState{ps}
			req.Topics = []kmsg.StopReplicaRequestTopic{t}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			if resp := r.(*kmsg.StopReplicaResponse); resp.ErrorCode != 0 {
				t.Fatalf("StopReplica response %+v", resp)
			}
		},
	}
	requestBuilders[6] = requestBuilder{
		// The current live brokers again, no partitions: the cache keeps its topics.
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrUpdateMetadataRequest()
			req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = testBrokerID, e.ctrlEp, -1
			for _, b := range e.mc.AliveBrokers() {
				lb := kmsg.NewUpdateMetadataRequestLiveBroker()
				lb.ID, lb.Rack = b.ID, b.Rack
				for _, ep := range b.Endpoints {
					if v == 0 {
						lb.Host, lb.Port = ep.Host, ep.Port
						break
					}
					e := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
					e.Host, e.Port, e.ListenerName, e.SecurityProtocol = ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol
					lb.Endpoints = append(lb.Endpoints, e)
				}
				req.LiveBrokers = append(req.LiveBrokers, lb)
			}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			if resp := r.(*kmsg.UpdateMetadataResponse); resp.ErrorCode != 0 {
				t.Fatalf("UpdateMetadata response %+v", resp)
			}
		},
	}
	notController := func(code int16, t *testing.T) {
		t.Helper()
		if code != kerr.NotController.Code {
			t.Fatalf("error %d, want NOT_CONTROLLER without admin state", code)
		}
	}
	requestBuilders[7] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrControlledShutdownRequest()
			req.BrokerID, req.BrokerEpoch = testBrokerID, -1
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			// doControlledShutdown off the active controller: ControllerMovedException.
			if code := r.(*kmsg.ControlledShutdownResponse).ErrorCode; code != kerr.StaleControllerEpoch.Code {
				t.Fatalf("error %d, want STALE_CONTROLLER_EPOCH without admin state", code)
			}
		},
	}
	requestBuilders[56] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrAlterPartitionRequest()
			req.BrokerID, req.BrokerEpoch = testBrokerID, -1
			tp := kmsg.NewAlterPartitionRequestTopic()
			tp.Topic, tp.TopicID = "rt", e.topics["rt"]
			p := kmsg.NewAlterPartitionRequestTopicPartition()
			p.Partition, p.LeaderEpoch, p.NewISR = 0, 0, []int32{testBrokerID}
			bs := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			bs.BrokerID, bs.BrokerEpoch = testBrokerID, -1
			p.NewEpochISR = []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{bs}
			tp.Partitions = []kmsg.AlterPartitionRequestTopicPartition{p}
			req.Topics = []kmsg.AlterPartitionRequestTopic{tp}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			notController(r.(*kmsg.AlterPartitionResponse).ErrorCode, t)
		},
	}
	requestBuilders[43] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrElectLeadersRequest()
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = "rt", []int32{0}
			req.Topics, req.TimeoutMillis = []kmsg.ElectLeadersRequestTopic{t}, 100
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.ElectLeadersResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("ElectLeaders response %+v", resp)
			}
			notController(resp.Topics[0].Partitions[0].ErrorCode, t)
		},
	}
	requestBuilders[19] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			tp := kmsg.NewCreateTopicsRequestTopic()
			tp.Topic, tp.NumPartitions, tp.ReplicationFactor = "rt-new", 1, 1
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
			tp.Configs = []kmsg.CreateTopicsRequestTopicConfig{c}
			req.Topics, req.TimeoutMillis = []kmsg.CreateTopicsRequestTopic{tp}, 100
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.CreateTopicsResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("CreateTopics response %+v", resp)
			}
			notController(resp.Topics[0].ErrorCode, t)
		},
	}
	requestBuilders[20] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TopicNames = []string{"rt"}
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = kmsg.StringPtr("rt")
			req.Topics, req.TimeoutMillis = []kmsg.DeleteTopicsRequestTopic{dt}, 100
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DeleteTopicsResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("DeleteTopics response %+v", resp)
			}
			notController(resp.Topics[0].ErrorCode, t)
		},
	}
	requestBuilders[32] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.IncludeSynonyms = true
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			req.Resources = []kmsg.DescribeConfigsRequestResource{r}
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeConfigsResponse)
			if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) == 0 {
				t.Fatalf("DescribeConfigs response %+v", resp)
			}
		},
	}
	requestBuilders[37] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrCreatePartitionsRequest()
			tp := kmsg.NewCreatePartitionsRequestTopic()
			tp.Topic, tp.Count = "rt", 3
			req.Topics, req.TimeoutMillis = []kmsg.CreatePartitionsRequestTopic{tp}, 100
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("CreatePartitions response %+v", resp)
			}
			notController(resp.Topics[0].ErrorCode, t)
		},
	}
	requestBuilders[60] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeClusterAuthorizedOperations = true
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeClusterResponse)
			if resp.ErrorCode != 0 || resp.ClusterID != "test-cluster-id" || len(resp.Brokers) != 1 || resp.ClusterAuthorizedOperations != clusterOperations {
				t.Fatalf("DescribeCluster response %+v", resp)
			}
		},
	}
}

// The admin and controller-facing keys at Kafka 3.7's ranges (protocol.md §3).
func TestAdminRegistryMatchesKafka37Ranges(t *testing.T) {
	want := map[int16][2]int16{4: {0, 7}, 5: {0, 4}, 6: {0, 8}, 7: {0, 3}, 19: {0, 7},
		20: {0, 6}, 32: {0, 4}, 37: {0, 3}, 43: {0, 2}, 56: {0, 3}, 60: {0, 1}}
	for key, r := range want {
		minV, maxV, ok := SupportedVersions(key)
		if !ok || minV != r[0] || maxV != r[1] {
			t.Errorf("key %d: got [%d, %d] ok=%v, want %v", key, minV, maxV, ok, r)
		}
	}
}
