package coordinator

import "testing"

func TestJavaStringHashCodeAndPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		s    string
		hash int32
		p50  int32
	}{
		{"", 0, 0},
		{"a", 97, 47},
		{"abc", 96354, 4},
		{"hello", 99162322, 22},
		{"polygenelubricants", -1 << 31, 0}, // Int.MinValue: Utils.abs maps it to 0
		{"\U0001F600", 1772899, 49},         // a surrogate pair hashes as two UTF-16 units
	} {
		t.Run(tc.s, func(t *testing.T) {
			if h := JavaStringHashCode(tc.s); h != tc.hash {
				t.Fatalf("hash %d, want %d", h, tc.hash)
			}
			if p := PartitionFor(tc.s, 50); p != tc.p50 {
				t.Fatalf("partition %d, want %d", p, tc.p50)
			}
		})
	}
	// A negative hash: abs, not a negative modulo.
	if h := JavaStringHashCode("console-consumer-12345"); h >= 0 {
		t.Logf("hash %d", h)
	}
	for _, s := range []string{"x-negative", "zzzzzzzzzzzz", "group-7"} {
		if p := PartitionFor(s, 50); p < 0 || p >= 50 {
			t.Fatalf("%s: partition %d", s, p)
		}
	}
}
