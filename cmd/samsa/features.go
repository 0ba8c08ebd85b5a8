package main

// features mirrors Kafka 3.7.1's kafka-features.sh (org.apache.kafka.tools.FeatureCommand):
//
//	samsa features --bootstrap-server H:P [--command-config F] describe
//	samsa features --bootstrap-server H:P upgrade [--metadata 3.7-IV4] [--feature name=level]... [--dry-run]
//	samsa features --bootstrap-server H:P downgrade [--metadata V] [--feature name=level]... [--unsafe] [--dry-run]
//	samsa features --bootstrap-server H:P disable [--feature name]... [--unsafe] [--dry-run]
//
// describe is Admin.describeFeatures (ApiVersions to any broker), one line per supported
// feature: a ZooKeeper-mode broker supports none, so it prints nothing, as Kafka's does.
// The others are Admin.updateFeatures (UpdateFeatures to the controller, validate_only =
// --dry-run), with FeatureCommand's result lines ("foo was upgraded to 2." / "Could not
// upgrade foo to 2. <reason>"), features in name order, and "N out of M operation(s)
// failed." on standard error with exit code 1 when any failed. 3.7.1 has no
// --release-version (added in 3.8). --bootstrap-controller is refused: there is no KRaft
// quorum in ZooKeeper mode.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["features"] = command{runFeatures, "describe, upgrade, downgrade or disable feature flags (kafka-features.sh)"}
}

// featureCommands are kafka-features.sh's sub-commands.
var featureCommands = []string{"describe", "upgrade", "downgrade", "disable"}

type featuresOpts struct {
	bootstrap     string
	commandConfig optString
	command       string
	metadata      optString
	features      multiFlag
	unsafe        bool
	dryRun        bool
}

// featuresTerse is a failure whose message alone goes to standard error (Kafka's TerseException
// and the other exceptions FeatureCommand.mainNoExit prints with getMessage).
type featuresTerse struct{ msg string }

func (e featuresTerse) Error() string { return e.msg }

func parseFeaturesArgs(args []string, stderr io.Writer) (*featuresOpts, *flag.FlagSet, error) {
	o := &featuresOpts{}
	var bootstrap, bootstrapController optString
	addBase := func(fs *flag.FlagSet) {
		fs.Var(&bootstrap, "bootstrap-server", "A comma-separated list of host:port pairs to use for establishing the connection to the Kafka cluster.")
		fs.Var(&bootstrapController, "bootstrap-controller", "A comma-separated list of host:port pairs to use for establishing the connection to the KRaft quorum.")
		fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	}
	base := newFlagSet("samsa features", stderr)
	addBase(base)
	base.Usage = func() {
		fmt.Fprint(base.Output(), "usage: samsa features (--bootstrap-server BOOTSTRAP_SERVER | --bootstrap-controller BOOTSTRAP_CONTROLLER)\n"+
			"                      [--command-config COMMAND_CONFIG] {describe,upgrade,downgrade,disable} ...\n\n"+
			"This tool manages feature flags in Kafka.\n\n"+
			"  describe   Describes the current active feature flags.\n"+
			"  upgrade    Upgrade one or more feature flags.\n"+
			"  downgrade  Upgrade one or more feature flags.\n"+
			"  disable    Disable one or more feature flags. This is the same as downgrading the version to zero.\n")
		base.PrintDefaults()
	}
	// argparse4j: the base options come before the sub-command; flag stops at it.
	if err := base.Parse(args); err != nil {
		return nil, base, err
	}
	rest := base.Args()
	if len(rest) == 0 {
		return nil, base, usageErr("too few arguments")
	}
	o.command = rest[0]
	fs := newFlagSet("samsa features "+o.command, stderr)
	addBase(fs)
	switch o.command {
	case "describe":
	case "upgrade":
		fs.Var(&o.metadata, "metadata", "The level to which we should upgrade the metadata. For example, 3.3-IV3.")
		fs.Var(&o.features, "feature", "A feature upgrade we should perform, in feature=level format. For example: `metadata.version=5`.")
		fs.BoolVar(&o.dryRun, "dry-run", false, "Validate this upgrade, but do not perform it.")
	case "downgrade":
		fs.Var(&o.metadata, "metadata", "The level to which we should downgrade the metadata. For example, 3.3-IV0.")
		fs.Var(&o.features, "feature", "A feature downgrade we should perform, in feature=level format. For example: `metadata.version=5`.")
		fs.BoolVar(&o.unsafe, "unsafe", false, "Perform this downgrade even if it may irreversibly destroy metadata.")
		fs.BoolVar(&o.dryRun, "dry-run", false, "Validate this downgrade, but do not perform it.")
	case "disable":
		fs.Var(&o.features, "feature", "A feature flag to disable.")
		fs.BoolVar(&o.unsafe, "unsafe", false, "Disable this feature flag even if it may irreversibly destroy metadata.")
		fs.BoolVar(&o.dryRun, "dry-run", false, "Perform a dry-run of this disable operation.")
	default:
		return nil, base, usageErr("argument {describe,upgrade,downgrade,disable}: invalid choice: '%s' (choose from '%s')", o.command, strings.Join(featureCommands, "', '"))
	}
	if err := parseFlags(fs, rest[1:]); err != nil {
		return nil, fs, err
	}
	switch {
	case bootstrap.set && bootstrapController.set:
		return nil, fs, usageErr("argument --bootstrap-controller: not allowed with argument --bootstrap-server")
	case bootstrapController.set:
		return nil, fs, featuresTerse{"--bootstrap-controller is not supported: samsa runs in ZooKeeper mode, without a KRaft quorum; use --bootstrap-server"}
	case !bootstrap.set:
		return nil, fs, usageErr("one of the arguments --bootstrap-server --bootstrap-controller is required")
	}
	o.bootstrap = bootstrap.v
	return o, fs, nil
}

// runFeatures is kafka-features.sh.
func runFeatures(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseFeaturesArgs(args, stderr)
	var terse featuresTerse
	if errors.As(err, &terse) {
		fmt.Fprintln(stderr, terse.msg)
		return 1
	}
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	// As FeatureCommand: the admin client (and its property file) first, then the updates.
	sec, ok := adminClientSecurity("features", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	var updates map[string]featureUpdate
	if o.command != "describe" {
		if updates, err = featureUpdatesFor(o); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	err = withAdminClient(o.bootstrap, "adminclient-1", 60*time.Second, sec, func(ctx context.Context, cl *kgo.Client) error {
		if o.command == "describe" {
			return describeFeatures(ctx, cl, stdout)
		}
		return updateFeatures(ctx, cl, o, updates, stdout)
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// describeFeatures is FeatureCommand.handleDescribe over Admin.describeFeatures.
func describeFeatures(ctx context.Context, cl *kgo.Client, stdout io.Writer) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa", "3.7.1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return errors.New(kafkaErrorMessage(resp.ErrorCode, nil))
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	epoch := "-"
	if resp.FinalizedFeaturesEpoch >= 0 {
		epoch = strconv.FormatInt(resp.FinalizedFeaturesEpoch, 10)
	}
	sort.Slice(resp.SupportedFeatures, func(i, j int) bool { return resp.SupportedFeatures[i].Name < resp.SupportedFeatures[j].Name })
	for _, s := range resp.SupportedFeatures {
		fmt.Fprintf(stdout, "Feature: %s\tSupportedMinVersion: %s\tSupportedMaxVersion: %s\tFinalizedVersionLevel: %s\tEpoch: %s\n",
			s.Name, featureLevelString(s.Name, s.MinVersion), featureLevelString(s.Name, s.MaxVersion),
			featureLevelString(s.Name, finalized[s.Name]), epoch)
	}
	return nil
}

// featureUpdate is Admin's FeatureUpdate: a level and an upgrade type (1 upgrade, 2 safe
// downgrade, 3 unsafe downgrade).
type featureUpdate struct {
	level       int16
	upgradeType int8
}

// newFeatureUpdate checks as FeatureUpdate's constructor does.
func newFeatureUpdate(level int16, upgradeType int8) (featureUpdate, error) {
	if level == 0 && upgradeType == 1 {
		return featureUpdate{}, featuresTerse{fmt.Sprintf("The downgradeType flag should be set to SAFE or UNSAFE when the provided maxVersionLevel:%d is < 1.", level)}
	}
	if level < 0 {
		return featureUpdate{}, featuresTerse{"Cannot specify a negative version level."}
	}
	return featureUpdate{level, upgradeType}, nil
}

// featureUpdatesFor is FeatureCommand.handleUpgradeOrDowngrade / handleDisable: the updates
// the options ask for, or the error FeatureCommand prints.
func featureUpdatesFor(o *featuresOpts) (map[string]featureUpdate, error) {
	upgradeType := int8(1)
	if o.command != "upgrade" {
		upgradeType = 2
		if o.unsafe {
			upgradeType = 3
		}
	}
	updates := map[string]featureUpdate{}
	if o.command == "disable" {
		for _, f := range o.features {
			u, _ := newFeatureUpdate(0, upgradeType)
			if _, dup := updates[f]; dup {
				return nil, featuresTerse{"Feature " + f + " was specified more than once."}
			}
			updates[f] = u
		}
	} else {
		if o.metadata.set {
			level, ok := metadataVersionLevel(o.metadata.v)
			if !ok {
				return nil, featuresTerse{"Unsupported metadata version " + o.metadata.v + ". Supported metadata versions are " + supportedMetadataVersions()}
			}
			u, err := newFeatureUpdate(level, upgradeType)
			if err != nil {
				return nil, err
			}
			updates[metadataVersionFeature] = u
		}
		for _, f := range o.features {
			eq := strings.Index(f, "=")
			if eq < 0 {
				return nil, featuresTerse{"Can't parse feature=level string " + f + ": equals sign not found."}
			}
			name, levelStr := strings.TrimSpace(f[:eq]), strings.TrimSpace(f[eq+1:])
			level, err := strconv.ParseInt(levelStr, 10, 16)
			if err != nil {
				return nil, featuresTerse{"Can't parse feature=level string " + f + ": unable to parse " + levelStr + " as a short."}
			}
			u, err := newFeatureUpdate(int16(level), upgradeType)
			if err != nil {
				return nil, err
			}
			if _, dup := updates[name]; dup {
				return nil, featuresTerse{"Feature " + name + " was specified more than once."}
			}
			updates[name] = u
		}
	}
	if len(updates) == 0 {
		return nil, featuresTerse{"You must specify at least one feature to " + o.command}
	}
	// KafkaAdminClient.updateFeatures refuses blank names before sending anything.
	for name := range updates {
		if strings.TrimSpace(name) == "" {
			return nil, featuresTerse{"Provided feature can not be empty."}
		}
	}
	return updates, nil
}

// updateFeatures sends the updates (FeatureCommand.update) and prints one line per feature.
func updateFeatures(ctx context.Context, cl *kgo.Client, o *featuresOpts, updates map[string]featureUpdate, stdout io.Writer) error {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30000 // the admin client's request.timeout.ms
	req.ValidateOnly = o.dryRun
	names := make([]string, 0, len(updates))
	for n := range updates {
		names = append(names, n)
	}
	sort.Strings(names) // FeatureCommand prints from a TreeMap
	for _, n := range names {
		k := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		k.Feature, k.MaxVersionLevel, k.UpgradeType = n, updates[n].level, updates[n].upgradeType
		k.AllowDowngrade = updates[n].upgradeType != 1 // v0's form of the same request
		req.FeatureUpdates = append(req.FeatureUpdates, k)
	}
	failures := map[string]string{}
	resp, err := req.RequestWith(ctx, cl)
	switch {
	case err != nil && errors.Is(err, kerr.NotController):
		for _, n := range names {
			failures[n] = kafkaErrorMessage(kerr.NotController.Code, nil)
		}
	case err != nil:
		return err
	case resp.ErrorCode != 0:
		for _, n := range names {
			failures[n] = kafkaErrorMessage(resp.ErrorCode, resp.ErrorMessage)
		}
	default:
		seen := map[string]bool{}
		for _, r := range resp.Results {
			if _, ok := updates[r.Feature]; !ok {
				continue // Kafka logs "Server response mentioned unknown feature"
			}
			seen[r.Feature] = true
			if r.ErrorCode != 0 {
				failures[r.Feature] = kafkaErrorMessage(r.ErrorCode, r.ErrorMessage)
			}
		}
		for _, n := range names {
			if !seen[n] {
				failures[n] = "The controller response did not contain a result for feature " + n
			}
		}
	}
	return printFeatureResults(stdout, o.command, o.dryRun, updates, failures)
}

// printFeatureResults prints FeatureCommand.update's lines, features in name order, and
// returns the "N out of M operation(s) failed." error when any failed (failures: name →
// message).
func printFeatureResults(stdout io.Writer, op string, dryRun bool, updates map[string]featureUpdate, failures map[string]string) error {
	names := make([]string, 0, len(updates))
	for n := range updates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		level := updates[n].level
		if msg, failed := failures[n]; failed {
			helper := "Could not "
			if dryRun {
				helper = "Can not "
			}
			suffix := op + " " + n + " to " + strconv.Itoa(int(level))
			if op == "disable" {
				suffix = "disable " + n
			}
			fmt.Fprintln(stdout, helper+suffix+". "+msg)
			continue
		}
		verb := " was "
		if dryRun {
			verb = " can be "
		}
		obj := op + "d to " + strconv.Itoa(int(level)) + "."
		if op == "disable" {
			obj = "disabled."
		}
		fmt.Fprintln(stdout, n+verb+obj)
	}
	if len(failures) > 0 {
		return featuresTerse{fmt.Sprintf("%d out of %d operation(s) failed.", len(failures), len(updates))}
	}
	return nil
}

// kafkaErrorMessage is the message of Errors.exception(message): the server's message, or
// the error's default one.
func kafkaErrorMessage(code int16, msg *string) string {
	if msg != nil {
		return *msg
	}
	if m, ok := kafkaDefaultErrorMessages[code]; ok {
		return m
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		if _, d, found := strings.Cut(e.Description, ": "); found {
			return d
		}
		return e.Description
	}
	return "Unexpected error code " + strconv.Itoa(int(code))
}

// kafkaDefaultErrorMessages are the Errors enum's default messages UpdateFeatures can carry.
var kafkaDefaultErrorMessages = map[int16]string{
	kerr.ClusterAuthorizationFailed.Code: "Cluster authorization failed.",
	kerr.NotController.Code:              "This is not the correct controller for this cluster.",
	kerr.InvalidRequest.Code:             "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
	kerr.FeatureUpdateFailed.Code:        "Unable to update finalized features due to an unexpected server error.",
}

// metadataVersionFeature is MetadataVersion.FEATURE_NAME.
const metadataVersionFeature = "metadata.version"

// metadataVersions are Kafka 3.7.1's MetadataVersion values from IBP_3_0_IV1 (the first with
// a feature level) to LATEST_PRODUCTION, IBP_3_7_IV4; the level is the index + 1.
var metadataVersions = []string{
	"3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0",
	"3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV1",
	"3.7-IV2", "3.7-IV3", "3.7-IV4",
}

// olderIBPs are the versions before 3.0-IV1: valid, but with no feature level (-1).
var olderIBPs = map[string]bool{
	"0.8.0": true, "0.8.1": true, "0.8.2": true, "0.9.0": true,
	"0.10.0-IV0": true, "0.10.0-IV1": true, "0.10.1-IV0": true, "0.10.1-IV1": true, "0.10.1-IV2": true,
	"0.10.2-IV0": true, "0.11.0-IV0": true, "0.11.0-IV1": true, "0.11.0-IV2": true, "1.0-IV0": true,
	"1.1-IV0": true, "2.0-IV0": true, "2.0-IV1": true, "2.1-IV0": true, "2.1-IV1": true, "2.1-IV2": true,
	"2.2-IV0": true, "2.2-IV1": true, "2.3-IV0": true, "2.3-IV1": true, "2.4-IV0": true, "2.4-IV1": true,
	"2.5-IV0": true, "2.6-IV0": true, "2.7-IV0": true, "2.7-IV1": true, "2.7-IV2": true, "2.8-IV0": true,
	"2.8-IV1": true, "3.0-IV0": true,
	// A release alone means its latest production version.
	"0.10.0": true, "0.10.1": true, "0.10.2": true, "0.11.0": true, "1.0": true, "1.1": true,
	"2.0": true, "2.1": true, "2.2": true, "2.3": true, "2.4": true, "2.5": true, "2.6": true,
	"2.7": true, "2.8": true,
}

// metadataVersionLevel is MetadataVersion.fromVersionString(v).featureLevel(): "3.3" is its
// latest production version 3.3-IV3; only the first two (three for 0.x) dot segments count.
func metadataVersionLevel(v string) (int16, bool) {
	seg := strings.Split(v, ".")
	n := 2
	if strings.HasPrefix(v, "0.") {
		n = 3
	}
	key := v
	if len(seg) > n {
		key = strings.Join(seg[:n], ".")
	}
	if olderIBPs[key] {
		return -1, true
	}
	if key == "3.8-IV0" { // unstable in 3.7.1, but a known version
		return 20, true
	}
	latest := -1
	for i, mv := range metadataVersions {
		if mv == key {
			return int16(i + 1), true
		}
		if strings.HasPrefix(mv, key+"-") {
			latest = i
		}
	}
	if latest >= 0 {
		return int16(latest + 1), true
	}
	return 0, false
}

// supportedMetadataVersions is metadataVersionsToString(MINIMUM_BOOTSTRAP_VERSION, latestProduction).
func supportedMetadataVersions() string {
	return strings.Join(metadataVersions[3:], ", ") // from 3.3-IV0
}

// featureLevelString is FeatureCommand.levelToString.
func featureLevelString(feature string, level int16) string {
	if feature == metadataVersionFeature {
		if level >= 1 && int(level) <= len(metadataVersions) {
			return metadataVersions[level-1]
		}
		if level == 20 {
			return "3.8-IV0" // the unstable version 3.7.1 knows
		}
		return "UNKNOWN " + strconv.Itoa(int(level))
	}
	return strconv.Itoa(int(level))
}
