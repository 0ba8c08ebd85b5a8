package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// multiFlag is a repeatable string flag (joptsimple's valuesOf): --config a=1 --config b=2.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// optString is a string flag that records whether it was given (joptsimple's has()).
type optString struct {
	v   string
	set bool
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(v string) error { o.v, o.set = v, true; return nil }

// optInt is an int flag that records whether it was given.
type optInt struct {
	v   int64
	set bool
}

func (o *optInt) String() string { return fmt.Sprint(o.v) }
func (o *optInt) Set(v string) error {
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err != nil {
		return fmt.Errorf("value %q is not a number", v)
	}
	o.v, o.set = n, true
	return nil
}

// errUsage marks argument errors: the tool prints the message and its usage, like
// CommandLineUtils.printUsageAndDie, and exits 1.
var errUsage = errors.New("usage")

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return fs
}

// parseFlags parses args and rejects leftover positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("unrecognized argument %q", fs.Arg(0))
	}
	return nil
}

// parseKeyValues parses key=value pairs as CommandLineUtils.parseKeyValueArgs does: split at
// the first '='; a pair without '=' is an error.
func parseKeyValues(pairs []string) (map[string]string, error) {
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, usageErr("invalid command line properties: %q (expected key=value)", p)
		}
		m[k] = v
	}
	return m, nil
}

// propsFileThenArgs reads the properties file named by file (when given), then lays the
// key=value pairs on top: --x-property wins over --x.config, as in Kafka's console tools.
func propsFileThenArgs(file optString, pairs []string) (map[string]string, error) {
	m := map[string]string{}
	if file.set {
		var err error
		if m, err = loadPropsFile(file.v); err != nil {
			return nil, err
		}
	}
	extra, err := parseKeyValues(pairs)
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		m[k] = v
	}
	return m, nil
}

// reportUsage prints a usage error the way Kafka's tools do and returns exit code 1.
func reportUsage(fs *flag.FlagSet, stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if !errors.Is(err, errUsage) {
		return 1 // the flag package has printed the error and the usage already
	}
	fmt.Fprintln(stderr, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
	fs.SetOutput(stderr)
	fs.PrintDefaults()
	return 1
}
