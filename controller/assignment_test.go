package controller

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func brokersNoRack(ids ...int32) []BrokerMetadata {
	out := make([]BrokerMetadata, len(ids))
	for i, id := range ids {
		out[i] = BrokerMetadata{ID: id}
	}
	return out
}

func brokersWithRacks(m map[int32]string) []BrokerMetadata {
	var out []BrokerMetadata
	for id, r := range m {
		out = append(out, BrokerMetadata{ID: id, Rack: &r})
	}
	return out
}

func TestAssignReplicasToBrokers(t *testing.T) {
	tests := []struct {
		name          string
		brokers       []BrokerMetadata
		n             int32
		rf            int16
		start, firstP int32
		want          map[int32][]int32
	}{
		{
			// Kafka AdminTest.testReplicaAssignment / AdminUtils javadoc table.
			name: "rack unaware 5 brokers 10 partitions rf3 start0", brokers: brokersNoRack(0, 1, 2, 3, 4),
			n: 10, rf: 3, start: 0, firstP: 0,
			want: map[int32][]int32{0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1},
				5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2}},
		},
		{
			// Computed by hand: sorted [1 2 3], start=shift=1.
			name: "rack unaware unsorted sparse ids", brokers: brokersNoRack(3, 1, 2),
			n: 3, rf: 3, start: 1, firstP: 0,
			want: map[int32][]int32{0: {2, 1, 3}, 1: {3, 2, 1}, 2: {1, 3, 2}},
		},
		{
			// CreatePartitions style: startPartitionId 3, shift bumps at p=5.
			name: "rack unaware adding partitions", brokers: brokersNoRack(0, 1, 2, 3, 4),
			n: 3, rf: 2, start: 2, firstP: 3,
			want: map[int32][]int32{3: {0, 3}, 4: {1, 4}, 5: {2, 1}},
		},
		{
			name: "rack unaware rf1", brokers: brokersNoRack(7),
			n: 2, rf: 1, start: 0, firstP: 0,
			want: map[int32][]int32{0: {7}, 1: {7}},
		},
		{
			// AdminUtils javadoc: 0,1→rack1/rack3... arranged 0,3,1,5,4,2; p6 shifts to 0,4,2.
			name:    "rack aware javadoc example",
			brokers: brokersWithRacks(map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}),
			n:       7, rf: 3, start: 0, firstP: 0,
			want: map[int32][]int32{0: {0, 3, 1}, 1: {3, 1, 5}, 2: {1, 5, 4}, 3: {5, 4, 2}, 4: {4, 2, 0}, 5: {2, 0, 3}, 6: {0, 4, 2}},
		},
		{
			// Two racks, rf 3 > racks: the third replica goes back to round robin.
			// arranged: a:{0,2} b:{1,3} → 0,1,2,3; numRacks 2.
			// p0 first=0 (a); k0 idx1=1(b) ok; k1 idx2=2(a) all racks used, broker unused → ok → [0 1 2].
			// p1 first=1 (b); k0 idx2=2(a) ok; k1 idx3=3(b) → [1 2 3].
			name:    "rack aware more replicas than racks",
			brokers: brokersWithRacks(map[int32]string{0: "a", 1: "b", 2: "a", 3: "b"}),
			n:       2, rf: 3, start: 0, firstP: 0,
			want: map[int32][]int32{0: {0, 1, 2}, 1: {1, 2, 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AssignReplicasToBrokers(tt.brokers, tt.n, tt.rf, tt.start, tt.firstP)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestAssignReplicasToBrokersErrors(t *testing.T) {
	r := "r1"
	tests := []struct {
		name    string
		brokers []BrokerMetadata
		n       int32
		rf      int16
		code    *kerr.Error
		msg     string
	}{
		{"rf larger than brokers", brokersNoRack(0, 1), 3, 3, kerr.InvalidReplicationFactor, "Replication factor: 3 larger than available brokers: 2."},
		{"rf zero", brokersNoRack(0, 1), 3, 0, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0."},
		{"rf negative", brokersNoRack(0, 1), 3, -1, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0."},
		{"no brokers", nil, 1, 1, kerr.InvalidReplicationFactor, "Replication factor: 1 larger than available brokers: 0."},
		{"zero partitions", brokersNoRack(0), 0, 1, kerr.InvalidPartitions, "Number of partitions must be larger than 0."},
		{"partial racks", []BrokerMetadata{{ID: 0, Rack: &r}, {ID: 1}}, 1, 1, kerr.UnknownServerError,
			"Not all brokers have rack information for replica rack aware assignment."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AssignReplicasToBrokers(tt.brokers, tt.n, tt.rf, -1, -1)
			if !errors.Is(err, tt.code) || err.Error() != tt.msg {
				t.Fatalf("err = %v, want %v %q", err, tt.code, tt.msg)
			}
		})
	}
}

// With a random start, each broker leads the same number of partitions (± 1), replicas are
// distinct, and with racks every partition spans min(rf, racks) racks.
func TestAssignReplicasRandomStartInvariants(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
	for i := 0; i < 50; i++ {
		for _, racked := range []bool{false, true} {
			brokers := brokersNoRack(1, 2, 3, 4, 5, 6)
			if racked {
				brokers = brokersWithRacks(racks)
			}
			got, err := AssignReplicasToBrokers(brokers, 12, 3, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			leaders := map[int32]int{}
			for p, rs := range got {
				leaders[rs[0]]++
				s := slices.Clone(rs)
				slices.Sort(s)
				if len(slices.Compact(s)) != 3 {
					t.Fatalf("partition %d has duplicate replicas %v", p, rs)
				}
				if racked {
					seen := map[string]bool{}
					for _, b := range rs {
						seen[racks[b]] = true
					}
					if len(seen) != 3 {
						t.Fatalf("partition %d replicas %v span %d racks", p, rs, len(seen))
					}
				}
			}
			for b, n := range leaders {
				if n != 2 {
					t.Fatalf("broker %d leads %d partitions, want 2: %v", b, n, got)
				}
			}
		}
	}
}

func TestRackAlternatedBrokerList(t *testing.T) {
	got := RackAlternatedBrokerList(map[int32]string{0: "r1", 5: "r1", 3: "r2", 4: "r2", 1: "r3", 2: "r3"})
	if want := []int32{0, 3, 1, 5, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	got = RackAlternatedBrokerList(map[int32]string{0: "rack1", 1: "rack1", 2: "rack1", 3: "rack2", 4: "rack2", 5: "rack2", 6: "rack3", 7: "rack3", 8: "rack3"})
	if want := []int32{0, 3, 6, 1, 4, 7, 2, 5, 8}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Uneven racks.
	got = RackAlternatedBrokerList(map[int32]string{0: "a", 1: "a", 2: "a", 3: "b"})
	if want := []int32{0, 3, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
