package controller

// Step-test support for log dir failures (testdata/log_dir_failure.txt): log dir event
// notifications in the fake ZooKeeper and LeaderAndIsr responses with partition errors.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func (s *fakeStore) Get(path string) ([]byte, zkmeta.Stat, error) {
	if name, ok := strings.CutPrefix(path, zkmeta.LogDirEventNotificationPath+"/"); ok {
		if data, ok := s.logDirEvents[name]; ok {
			return data, zkmeta.Stat{}, nil
		}
	}
	return nil, zkmeta.Stat{}, zkmeta.ErrNoNode
}

func (h *stepHarness) runLogDirFailure(f []string) {
	switch f[0] {
	case "logdir-event":
		name := fmt.Sprintf("%s%010d", zkmeta.LogDirEventPrefix, h.zk.logDirSeq)
		h.zk.logDirSeq++
		if f[1] == "malformed" {
			h.zk.logDirEvents[name] = []byte(`{"version":1,"broker":`)
		} else {
			h.zk.logDirEvents[name] = zkmeta.EncodeLogDirEvent(parseIDs(f[1])[0])
		}
	case "show-offline-dirs":
		for _, id := range sortedKeys(h.loop.ctx.replicasOnOfflineDirs) {
			fmt.Fprintf(&h.out, "broker %d offline replicas %v\n", id, sortedTPs(h.loop.ctx.replicasOnOfflineDirs[id]))
		}
	case "respond-lai":
		broker := parseIDs(f[1])[0]
		codes := map[TopicPartition]int16{}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			c, _ := strconv.Atoi(v)
			codes[parseTP(k)] = int16(c)
		}
		ch := h.loop.channels.(*fakeChannels)
		var keep []pendingRequest
		for _, p := range ch.pending {
			req, ok := p.req.(*kmsg.LeaderAndISRRequest)
			if p.broker != broker || !ok {
				keep = append(keep, p)
				continue
			}
			p.cb(leaderAndIsrResponse(req, codes))
		}
		ch.pending = keep
		for _, ev := range h.loop.queue.take() {
			h.process(ev)
		}
	}
}

// leaderAndIsrResponse answers req as a broker does at v5+ (the version the brokers
// negotiate): partitions by topic id.
func leaderAndIsrResponse(req *kmsg.LeaderAndISRRequest, codes map[TopicPartition]int16) *kmsg.LeaderAndISRResponse {
	resp := kmsg.NewPtrLeaderAndISRResponse()
	resp.SetVersion(7)
	for _, t := range req.TopicStates {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.PartitionStates {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[TopicPartition{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
