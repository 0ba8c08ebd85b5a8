//go:build samsa_mutations

package mutation

import (
	"fmt"
	"os"
	"strings"
)

// A binary built with -tags samsa_mutations switches on the mutations SAMSA_MUTATIONS names
// (comma-separated, e.g. SAMSA_MUTATIONS=hw-ignores-isr) when it starts, and says so loudly: it
// is a deliberately broken build, for proving that `samsa chaos` finds what these bugs break.
// An unknown name stops it, so a typo cannot pass for a safe run.
func init() {
	on, err := FromEnv(os.Getenv("SAMSA_MUTATIONS"))
	if err != nil {
		panic(err)
	}
	if len(on) > 0 {
		fmt.Fprintf(os.Stderr, "!!! samsa_mutations build: deliberate bugs ON: %s — NEVER use this binary for real data !!!\n", strings.Join(on, ","))
	}
}

// FromEnv switches on the mutations of a SAMSA_MUTATIONS value and lists them; an unknown name
// is an error naming the known ones.
func FromEnv(v string) ([]string, error) {
	var on []string
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !Set(name, true) {
			return nil, fmt.Errorf("SAMSA_MUTATIONS: unknown mutation %q (known: %s)", name, strings.Join(Names(), ", "))
		}
		on = append(on, name)
	}
	return on, nil
}
