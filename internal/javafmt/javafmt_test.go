package javafmt

import "testing"

func TestDouble(t *testing.T) {
	for v, want := range map[float64]string{
		50: "50.0", 0.5: "0.5", 1e7: "1.0E7", 12345678: "1.2345678E7", 1e-4: "1.0E-4", 0: "0.0",
		1048576: "1048576.0", 10485760: "1.048576E7", 200: "200.0", 1.5e300: "1.5E300", -3: "-3.0",
	} {
		if got := Double(v); got != want {
			t.Errorf("Double(%v) = %q, want %q", v, got, want)
		}
	}
}
