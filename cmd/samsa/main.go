// Command samsa is the samsa broker and its tools, mirroring Kafka's shell scripts.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: samsa <command> [flags]")
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "samsa: unknown command %q\n", os.Args[1])
	os.Exit(2)
}
