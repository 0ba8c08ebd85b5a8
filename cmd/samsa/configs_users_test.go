package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

func TestUserAlterations(t *testing.T) {
	req, err := userAlterations("alice", false, map[string]string{
		"SCRAM-SHA-256": "iterations=8192,password=alice-secret",
		"SCRAM-SHA-512": "password=p,w=x", // everything after password= is the password
	}, []string{"SCRAM-SHA-512"})
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Deletions) != 1 || req.Deletions[0].Name != "alice" || req.Deletions[0].Mechanism != 2 {
		t.Errorf("deletions %+v", req.Deletions)
	}
	if len(req.Upsertions) != 2 {
		t.Fatalf("upsertions %+v", req.Upsertions)
	}
	for i, want := range []struct {
		mech     string
		iters    int
		password string
	}{{scramcred.SHA256, 8192, "alice-secret"}, {scramcred.SHA512, 4096, "p,w=x"}} {
		u := req.Upsertions[i]
		if u.Name != "alice" || scramMechanismName(u.Mechanism) != want.mech || int(u.Iterations) != want.iters || len(u.Salt) == 0 {
			t.Errorf("upsertion %d: %+v", i, u)
			continue
		}
		salted, _ := scramcred.SaltedPassword(want.mech, want.password, u.Salt, want.iters)
		if !bytes.Equal(salted, u.SaltedPassword) {
			t.Errorf("upsertion %d: salted password is not Hi(password, salt, iterations)", i)
		}
	}
	if bytes.Equal(req.Upsertions[0].Salt, req.Upsertions[1].Salt) {
		t.Error("the same salt twice")
	}

	bad := []struct {
		add  map[string]string
		del  []string
		def  bool
		want string
	}{
		{map[string]string{"SCRAM-SHA-256": "iterations=4095,password=x"}, nil, false, "Iterations 4095 is less than the minimum 4096 required for SCRAM-SHA-256"},
		{map[string]string{"SCRAM-SHA-256": "iterations=-1,password="}, nil, false, "Password must not be empty"},
		{map[string]string{"SCRAM-SHA-256": "iterations=,password=x"}, nil, false, `For input string: ""`},
		{map[string]string{"SCRAM-SHA-256": "pw"}, nil, false, "Invalid credential property SCRAM_SHA_256=pw"},
		{map[string]string{"SCRAM-SHA-1": "password=x"}, nil, false, "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: Set(SCRAM-SHA-1)"},
		{nil, []string{"foo", "bar"}, false, "Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. Unexpected config names: ArrayBuffer(foo, bar)"},
		{map[string]string{"a b": "x"}, nil, false, "Invalid character found for config key: a b"},
		{map[string]string{"producer_byte_rate": "10", "SCRAM-SHA-256": "password=x"}, nil, false, "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server."},
		{nil, []string{"SCRAM-SHA-256"}, true, "The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server."},
	}
	for _, b := range bad {
		_, err := userAlterations("alice", b.def, b.add, b.del)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v %v: error %v, want %q", b.add, b.del, err, b.want)
		}
	}
}

func TestConfigsUsersEndToEnd(t *testing.T) {
	addrs, _ := startTxnBrokers(t, 2)
	bs := strings.Join(addrs, ",")
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := runConfigs(append([]string{"--bootstrap-server", bs}, args...), nil, &out, &errb)
		return out.String(), errb.String(), code
	}
	mustRun := func(want string, args ...string) {
		t.Helper()
		out, errs, code := run(args...)
		if code != 0 || out != want {
			t.Fatalf("configs %v: code %d\nstdout %q\nstderr %q\nwant stdout %q", args, code, out, errs, want)
		}
	}

	mustRun("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-512]")
	mustRun("Completed updating config for user bob.\n", "--alter", "--entity-type", "users", "--entity-name", "bob",
		"--add-config", "SCRAM-SHA-512=[iterations=5000,password=b]")
	mustRun("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice")
	mustRun("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"+
		"SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=5000\n",
		"--describe", "--entity-type", "users")

	mustRun("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "SCRAM-SHA-256")
	mustRun("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice")
	mustRun("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "SCRAM-SHA-512")
	mustRun("", "--describe", "--entity-type", "users", "--entity-name", "alice") // no credentials: nothing, as Kafka

	// The broker's refusals reach the operator.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[iterations=20000,password=x]"}, "Too many iterations"},
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256"}, "Attempt to delete a user credential that does not exist"},
	} {
		out, errs, code := run(c.args...)
		if code != 1 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("configs %v: code %d stdout %q stderr %q, want %q", c.args, code, out, errs, c.want)
		}
	}
}
