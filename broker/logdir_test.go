package broker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// failingFS is the OS filesystem until fail is set; then every file write and fsync fails
// with EIO, as a dying disk does.
type failingFS struct {
	logstore.OSFS
	fail atomic.Bool
}

func (f *failingFS) OpenFile(name string, flag int, perm fs.FileMode) (logstore.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &failingFile{File: file, fs: f}, nil
}

type failingFile struct {
	logstore.File
	fs *failingFS
}

func (f *failingFile) eio(op string) error {
	return &os.PathError{Op: op, Path: f.Name(), Err: syscall.EIO}
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.fs.fail.Load() {
		return 0, f.eio("write")
	}
	return f.File.Write(p)
}

func (f *failingFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.fail.Load() {
		return 0, f.eio("write")
	}
	return f.File.WriteAt(p, off)
}

func (f *failingFile) Sync() error {
	if f.fs.fail.Load() {
		return f.eio("sync")
	}
	return f.File.Sync()
}

// When its only log dir fails, the broker reports it through Done/Err so cmd/samsa exits,
// as Kafka halts ("Shutdown broker because all log dirs ... have failed").
func TestBrokerStopsWhenAllLogDirsFail(t *testing.T) {
	ffs := &failingFS{}
	b, err := New(testBrokerConfig(t, testChroot(t), nil), adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.fs = ffs
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	waitController(t, b)
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	resp := tc.request(adminCreateTopicsReq(10000, false, adminTopic("disk", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create", resp.Topics[0].ErrorCode, nil)
	if b.Err() != nil {
		t.Fatalf("Err before the failure: %v", b.Err())
	}

	ffs.fail.Store(true)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "disk"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = valuesBatch(1, 10)
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
	req.Topics = []kmsg.ProduceRequestTopic{pt}
	presp := tc.request(req, 9).(*kmsg.ProduceResponse)
	t.Logf("produce on a failing disk: error %s", adminCodeName(presp.Topics[0].Partitions[0].ErrorCode))

	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("broker did not report the failed log dirs")
	}
	if !errors.Is(b.Err(), ErrAllLogDirsOffline) {
		t.Fatalf("Err = %v, want ErrAllLogDirsOffline", b.Err())
	}
	// The controller is told (ReplicaManager.handleLogDirFailure → propagateLogDirEvent).
	// This broker is the controller too and may consume (delete) the notification before it
	// stops, so look at the parent's child version: one create, plus maybe that delete.
	// TestLogDirFailureMovesLeadership checks what the controller does with it.
	_, st, err := b.ZK().Get("/log_dir_event_notification")
	if err != nil || st.Cversion < 1 || st.NumChildren > 1 {
		t.Fatalf("log dir event notifications: %+v, %v", st, err)
	}
}
