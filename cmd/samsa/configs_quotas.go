package main

// configs_quotas.go is the quota side of samsa configs, as ConfigCommand does it with
// --bootstrap-server: users, clients, their <user, client> combination and ips, read with
// DescribeClientQuotas (strict filter) and written with AlterClientQuotas.
//
//	--alter --entity-type users --entity-name alice --entity-type clients --entity-default
//	    --add-config producer_byte_rate=1048576 --delete-config request_percentage
//	--describe --entity-type clients
//	--describe --entity-type ips --entity-default
//
// Quota values are doubles; they print as Java's Double.toString does (1048576.0, 1.0E7), in
// the order of the Java HashMaps the admin client collects them in, so the lines come out as
// kafka-configs.sh prints them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/javafmt"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// ClientQuotaEntity's entity type names.
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// ipConnectionRateKey is QuotaConfigs.IP_CONNECTION_RATE_OVERRIDE_CONFIG, the only ip key.
const ipConnectionRateKey = "connection_creation_rate"

// isClientOrUserQuotaConfig is QuotaConfigs.isClientOrUserQuotaConfig.
func isClientOrUserQuotaConfig(k string) bool { return userQuotaConfigs[k] }

// scalaArrayBuffer prints a Seq as Kafka's messages show a Buffer built from the command line.
func scalaArrayBuffer(names []string) string { return "ArrayBuffer(" + strings.Join(names, ", ") + ")" }

// alterUsersOrClients is alterConfig's users/clients case: quota keys go to AlterClientQuotas,
// SCRAM keys (users alone) to AlterUserScramCredentials, never both at once.
func alterUsersOrClients(ctx context.Context, cl *kgo.Client, types, names []string, add map[string]string, del []string) error {
	addKeys := javaPropsOrder(add)
	var unknownAdd, scramAdd, unknownDel, scramDel []string
	hasQuota := false
	for _, k := range addKeys {
		switch {
		case scramcred.IsMechanism(k):
			scramAdd = append(scramAdd, k)
		case isClientOrUserQuotaConfig(k):
			hasQuota = true
		default:
			unknownAdd = append(unknownAdd, k)
		}
	}
	for _, k := range del {
		switch {
		case scramcred.IsMechanism(k):
			scramDel = append(scramDel, k)
		case isClientOrUserQuotaConfig(k):
			hasQuota = true
		default:
			unknownDel = append(unknownDel, k)
		}
	}
	if types[0] == entityClients || len(types) == 2 {
		if len(unknownAdd)+len(scramAdd) > 0 {
			return argErr("Only quota configs can be added for '%s' using --bootstrap-server. Unexpected config names: %s",
				entityClients, scalaSet(append(unknownAdd, scramAdd...)))
		}
		if len(unknownDel)+len(scramDel) > 0 {
			return argErr("Only quota configs can be deleted for '%s' using --bootstrap-server. Unexpected config names: %s",
				entityClients, scalaArrayBuffer(append(unknownDel, scramDel...)))
		}
	} else {
		if len(unknownAdd) > 0 {
			return argErr("Only quota and SCRAM credential configs can be added for '%s' using --bootstrap-server. Unexpected config names: %s",
				entityUsers, scalaSet(unknownAdd))
		}
		if len(unknownDel) > 0 {
			return argErr("Only quota and SCRAM credential configs can be deleted for '%s' using --bootstrap-server. Unexpected config names: %s",
				entityUsers, scalaArrayBuffer(unknownDel))
		}
		if len(scramAdd)+len(scramDel) > 0 {
			if contains(names, "") {
				return argErr("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.")
			}
			if hasQuota {
				return argErr("Cannot alter both quota and SCRAM credential configs simultaneously for '%s' using --bootstrap-server.", entityUsers)
			}
		}
	}
	if hasQuota {
		return alterQuotaConfigs(ctx, cl, types, names, add, del)
	}
	if len(names) != 1 {
		return fmt.Errorf("Altering user SCRAM credentials should never occur for more zero or multiple users: %s", scalaList(names))
	}
	return alterUserScram(ctx, cl, names[0], add, del)
}

// quotaEntityType maps a ConfigCommand entity type to ClientQuotaEntity's.
func quotaEntityType(t string) (string, error) {
	switch t {
	case entityUsers:
		return quotaEntityUser, nil
	case entityClients:
		return quotaEntityClientID, nil
	case entityIPs:
		return quotaEntityIP, nil
	}
	return "", argErr("Unexpected entity type: %s", t)
}

// parseJavaDouble is Scala's String.toDouble (Double.parseDouble): surrounding blanks and a
// trailing d/f are allowed, "Infinity" is spelled out.
func parseJavaDouble(s string) (float64, error) {
	s = strings.TrimSpace(s)
	t := strings.TrimRight(s, "dDfF")
	if len(s)-len(t) > 1 || t == "" {
		return 0, errors.New("not a number")
	}
	lower := strings.ToLower(strings.TrimLeft(t, "+-"))
	if strings.HasPrefix(lower, "inf") && strings.TrimLeft(t, "+-") != "Infinity" || lower == "nan" && strings.TrimLeft(t, "+-") != "NaN" ||
		strings.Contains(t, "_") {
		return 0, errors.New("not a number")
	}
	return strconv.ParseFloat(t, 64)
}

// alterQuotaConfigs is ConfigCommand.alterQuotaConfigs: deleted keys must be set on the
// entity, values must parse as doubles, then one AlterClientQuotas entry.
func alterQuotaConfigs(ctx context.Context, cl *kgo.Client, types, names []string, add map[string]string, del []string) error {
	if len(types) != len(names) {
		return argErr("Exactly one entity name must be specified for every entity type")
	}
	current, err := getAllClientQuotasConfigs(ctx, cl, types, names)
	if err != nil {
		return err
	}
	old := map[string]bool{}
	if len(current) > 0 {
		for _, v := range current[0].Values {
			old[v.Key] = true
		}
	}
	var invalid []string
	for _, k := range del {
		if !old[k] {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		return argErr("Invalid config(s): %s", strings.Join(invalid, ","))
	}
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	for i, t := range types {
		et, err := quotaEntityType(t)
		if err != nil {
			return err
		}
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type = et
		if names[i] != "" {
			e.Name = kmsg.StringPtr(names[i])
		}
		entry.Entity = append(entry.Entity, e)
	}
	for _, k := range javaPropsOrder(add) {
		v, err := parseJavaDouble(add[k])
		if err != nil {
			return argErr("Cannot parse quota configuration value for %s: %s", k, add[k])
		}
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = k, v
		entry.Ops = append(entry.Ops, op)
	}
	for _, k := range del {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Remove = k, true
		entry.Ops = append(entry.Ops, op)
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = append(req.Entries, entry)
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return err
	}
	for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
		if err := kafkaErr(e.ErrorCode, e.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

// getAllClientQuotasConfigs is ConfigCommand.getAllClientQuotasConfigs: a strict filter with
// one component per entity type (a name, the default, or any), entries in the order the
// admin client's HashMap iterates them.
func getAllClientQuotasConfigs(ctx context.Context, cl *kgo.Client, types, names []string) ([]kmsg.DescribeClientQuotasResponseEntry, error) {
	if len(names) > len(types) {
		return nil, argErr("More entity names specified than entity types")
	}
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict = true
	for i, t := range types {
		et, err := quotaEntityType(t)
		if err != nil {
			return nil, argErr("Unexpected entity type %s", t)
		}
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType = et
		switch {
		case i >= len(names):
			c.MatchType = 2 // ANY: every entity of the type
		case names[i] == "":
			c.MatchType = 1 // DEFAULT
		default:
			c.MatchType, c.Match = 0, kmsg.StringPtr(names[i])
		}
		req.Components = append(req.Components, c)
	}
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeClientQuotasResponse)
	if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
		return nil, err
	}
	return quotaEntriesJavaOrder(r.Entries), nil
}

// quotaEntriesJavaOrder orders the entries, and each entry's values, as the HashMaps of
// DescribeClientQuotasResponse.complete iterate: the entities keyed by ClientQuotaEntity
// (hash of its entity map), the values by key.
func quotaEntriesJavaOrder(entries []kmsg.DescribeClientQuotasResponseEntry) []kmsg.DescribeClientQuotasResponseEntry {
	hashes := make([]int32, len(entries))
	for i, e := range entries {
		var h int32 // AbstractMap.hashCode: the sum of key.hashCode ^ value.hashCode
		for _, en := range e.Entity {
			var vh int32
			if en.Name != nil {
				vh = javaStringHash(*en.Name)
			}
			h += javaStringHash(en.Type) ^ vh
		}
		hashes[i] = h
	}
	out := make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(entries))
	for _, i := range javaHashMapOrder(hashes, len(entries)) {
		e := entries[i]
		vh := make([]int32, len(e.Values))
		for j, v := range e.Values {
			vh[j] = javaStringHash(v.Key)
		}
		values := make([]kmsg.DescribeClientQuotasResponseEntryValue, 0, len(e.Values))
		for _, j := range javaHashMapOrder(vh, len(e.Values)) {
			values = append(values, e.Values[j])
		}
		e.Values = values
		out = append(out, e)
	}
	return out
}

// describeQuotaConfigs is ConfigCommand.describeQuotaConfigs.
func describeQuotaConfigs(ctx context.Context, cl *kgo.Client, types, names []string, stdout io.Writer) error {
	entries, err := getAllClientQuotasConfigs(ctx, cl, types, names)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Fprintf(stdout, "Quota configs for %s are %s\n", quotaEntityString(e.Entity), quotaValuesString(e.Values))
	}
	return nil
}

// quotaEntityString names an entity as describeQuotaConfigs does: user, client-id, ip.
func quotaEntityString(entity []kmsg.DescribeClientQuotasResponseEntryEntity) string {
	var parts []string
	for _, typ := range []struct{ key, label string }{
		{quotaEntityUser, "user-principal"}, {quotaEntityClientID, "client-id"}, {quotaEntityIP, "ip"},
	} {
		for _, en := range entity {
			if en.Type != typ.key {
				continue
			}
			if en.Name != nil {
				parts = append(parts, fmt.Sprintf("%s '%s'", typ.label, *en.Name))
			} else {
				parts = append(parts, "the default "+typ.label)
			}
			break
		}
	}
	return strings.Join(parts, ", ")
}

func quotaValuesString(values []kmsg.DescribeClientQuotasResponseEntryValue) string {
	parts := make([]string, 0, len(values))
	for _, v := range values {
		parts = append(parts, v.Key+"="+javafmt.Double(v.Value))
	}
	return strings.Join(parts, ", ")
}

// describeQuotasAndScram is describeClientQuotaAndUserScramCredentialConfigs: the quotas,
// then users' SCRAM credentials unless clients or a default are involved.
func describeQuotasAndScram(ctx context.Context, cl *kgo.Client, types, names []string, stdout io.Writer) error {
	if err := describeQuotaConfigs(ctx, cl, types, names, stdout); err != nil {
		return err
	}
	if contains(types, entityClients) || contains(names, "") {
		return nil
	}
	return usersDescribeScram(ctx, cl, names, stdout)
}

// javaStringHash is String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaHashMapOrder returns the indexes of keys with the given hashCodes, inserted in index
// order into a java.util.HashMap made with initialCapacity, in the order the map iterates
// them: by bucket (spread hash & (capacity-1)) in the final table, insertion order within a
// bucket (resizing keeps it).
func javaHashMapOrder(hashes []int32, initialCapacity int) []int {
	capacity := 1
	for capacity < initialCapacity { // HashMap.tableSizeFor
		capacity <<= 1
	}
	threshold := capacity * 3 / 4
	for size := 1; size <= len(hashes); size++ {
		if size > threshold {
			capacity <<= 1
			threshold = capacity * 3 / 4
		}
	}
	bucket := func(h int32) uint32 {
		x := uint32(h)
		return (x ^ x>>16) & uint32(capacity-1)
	}
	idx := make([]int, len(hashes))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return bucket(hashes[idx[a]]) < bucket(hashes[idx[b]]) })
	return idx
}
