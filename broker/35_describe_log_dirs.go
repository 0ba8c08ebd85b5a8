package broker

// 35_describe_log_dirs.go — DescribeLogDirs (key 35) v0-4 (KafkaApis.handleDescribeLogDirsRequest,
// ReplicaManager.describeLogDirs): for each log dir, its partitions (all, or those asked
// for) with size and offset lag (max(HW − LEO, 0), as Kafka reports for current replicas),
// KAFKA_STORAGE_ERROR for an offline dir, and from v4 the file system's total and usable
// bytes. The future log of a replica being moved between log dirs (AlterReplicaLogDirs) is
// listed in its dir with IsFuture, its lag the current log's end minus its own
// (ReplicaManager.getLogEndOffsetLag).

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 4, (*APIs).handleDescribeLogDirs) }

// logDirLister is the part of logstore.Manager DescribeLogDirs reads.
type logDirLister interface {
	Dirs() []string
	OfflineDirs() []string
	AllLogs() []*logstore.Log
}

func (a *APIs) handleDescribeLogDirs(ctx context.Context, rc *RequestContext, req *kmsg.DescribeLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !a.authorizeCluster(rc, kmsg.ACLOperationDescribe) { // KafkaApis: DESCRIBE on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	lister, ok := a.Replicas.cfg.Logs.(logDirLister)
	if !ok {
		return resp, nil
	}
	var want map[logstore.TopicPartition]bool // nil: all
	if req.Topics != nil {
		want = map[logstore.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[logstore.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	offline := lister.OfflineDirs()
	byDir := map[string][]*logstore.Log{}
	current := map[logstore.TopicPartition]*logstore.Log{}
	future := map[*logstore.Log]bool{}
	all := lister.AllLogs()
	for _, l := range all {
		current[l.TopicPartition()] = l
	}
	if fl, ok := lister.(interface{ FutureLogs() []*logstore.Log }); ok {
		for _, l := range fl.FutureLogs() {
			future[l] = true
			all = append(all, l)
		}
	}
	for _, l := range all {
		if want != nil && !want[l.TopicPartition()] {
			continue
		}
		d := filepath.Dir(l.Dir())
		byDir[d] = append(byDir[d], l)
	}
	for _, dir := range lister.Dirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = dir
		if slices.Contains(offline, dir) {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		if req.Version >= 4 {
			var st unix.Statfs_t
			if err := unix.Statfs(dir, &st); err == nil {
				rd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
				rd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
			}
		}
		topics := map[string]int{}
		for _, l := range byDir[filepath.Clean(dir)] {
			tp := l.TopicPartition()
			i, ok := topics[tp.Topic]
			if !ok {
				i = len(rd.Topics)
				topics[tp.Topic] = i
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = tp.Topic
				rd.Topics = append(rd.Topics, t)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = tp.Partition, l.Size()
			switch cur := current[tp]; {
			case cur == nil:
				rp.OffsetLag = -1 // DescribeLogDirsResponse.INVALID_OFFSET_LAG
			case future[l]:
				rp.OffsetLag, rp.IsFuture = cur.LogEndOffset()-l.LogEndOffset(), true
			default:
				rp.OffsetLag = max(cur.HighWatermark()-l.LogEndOffset(), 0)
			}
			rd.Topics[i].Partitions = append(rd.Topics[i].Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}
