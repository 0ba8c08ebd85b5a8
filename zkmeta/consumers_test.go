package zkmeta

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// The znodes of OffsetCommit v0 as Kafka's KafkaZkClient writes them: the decimal offset at
// /consumers/<group>/offsets/<topic>/<partition>, parents created with null data.
func TestConsumerOffsetZNodes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	raw := rawConn(t)
	root := chrootFor(t)

	if _, ok, err := c.GetConsumerOffset("g1", "t", 0); err != nil || ok {
		t.Fatalf("GetConsumerOffset before any commit = ok %v, err %v; want none", ok, err)
	}
	if err := c.SetOrCreateConsumerOffset("g1", "t", 0, 42); err != nil {
		t.Fatal(err)
	}
	if data, _ := rawGet(t, raw, root+"/consumers/g1/offsets/t/0"); string(data) != "42" {
		t.Errorf("znode data %q, want \"42\"", data)
	}
	if data, _ := rawGet(t, raw, root+"/consumers/g1/offsets/t"); data != nil {
		t.Errorf("parent data %q, want null", data)
	}
	// A second commit overwrites (setData on the existing node).
	if err := c.SetOrCreateConsumerOffset("g1", "t", 0, 7); err != nil {
		t.Fatal(err)
	}
	_, st := rawGet(t, raw, root+"/consumers/g1/offsets/t/0")
	if st.Version != 1 {
		t.Errorf("znode version %d after the second commit, want 1", st.Version)
	}
	if off, ok, err := c.GetConsumerOffset("g1", "t", 0); err != nil || !ok || off != 7 {
		t.Errorf("GetConsumerOffset = %d, %v, %v; want 7", off, ok, err)
	}
	// Negative offsets are stored as sent, as Kafka does.
	if err := c.SetOrCreateConsumerOffset("g1", "t", 1, -1); err != nil {
		t.Fatal(err)
	}
	if off, ok, err := c.GetConsumerOffset("g1", "t", 1); err != nil || !ok || off != -1 {
		t.Errorf("GetConsumerOffset(p1) = %d, %v, %v; want -1", off, ok, err)
	}

	// Written by someone else: a node without data reads as no offset, garbage as an error.
	if _, err := raw.Create(root+"/consumers/g1/offsets/t/2", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.GetConsumerOffset("g1", "t", 2); err != nil || ok {
		t.Errorf("null-data node: ok %v, err %v; want no offset", ok, err)
	}
	if _, err := raw.Create(root+"/consumers/g1/offsets/t/3", []byte("x1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.GetConsumerOffset("g1", "t", 3); err == nil {
		t.Error("a non-numeric offset read without error")
	}
	// A group ZooKeeper cannot take as a path element fails rather than writing elsewhere.
	if err := c.SetOrCreateConsumerOffset("", "t", 0, 1); err == nil {
		t.Error("empty group: no error")
	}
}

func TestConsumerOffsetCodec(t *testing.T) {
	t.Parallel()
	if p := ConsumerOffsetPath("grp", "topic.a", 12); p != "/consumers/grp/offsets/topic.a/12" {
		t.Errorf("path %q", p)
	}
	if b := EncodeConsumerOffset(9223372036854775807); string(b) != "9223372036854775807" {
		t.Errorf("encode %q", b)
	}
	if _, _, err := DecodeConsumerOffset([]byte("")); err == nil {
		t.Error("empty data decoded without error (Kafka: NumberFormatException)")
	}
}
