package zkmeta

import (
	"errors"
	"reflect"
	"regexp"
	"testing"
)

// Sanitized names as Java's URLEncoder plus Kafka's '*' and '+' rewrites produce them.
func TestSanitizeUser(t *testing.T) {
	cases := map[string]string{
		"alice":                   "alice",
		"a.b-c_d":                 "a.b-c_d",
		"user one":                "user%20one",
		"a*b":                     "a%2Ab",
		"a+b":                     "a%2Bb",
		"a~b":                     "a%7Eb",
		"CN=alice,O=Org":          "CN%3Dalice%2CO%3DOrg",
		"bob@example.com":         "bob%40example.com",
		"ü":                       "%C3%BC",
		"../../brokers/ids/1":     "..%2F..%2Fbrokers%2Fids%2F1",
		ConfigEntityDefault:       "%3Cdefault%3E",
		"CN=Some characters !@#$": "CN%3DSome%20characters%20%21%40%23%24",
	}
	for in, want := range cases {
		if got := SanitizeUser(in); got != want {
			t.Errorf("SanitizeUser(%q) = %q, want %q", in, got, want)
		}
		back, err := DesanitizeUser(want)
		if err != nil || back != in {
			t.Errorf("DesanitizeUser(%q) = %q, %v; want %q", want, back, err, in)
		}
	}
	// Kafka's SanitizerTest principal: only safe characters remain, and it round-trips.
	p := "CN=Some characters !@#$%&*()_-+=';:,/~"
	s := SanitizeUser(p)
	if !regexp.MustCompile(`^[a-zA-Z0-9._%-]+$`).MatchString(s) {
		t.Errorf("sanitized %q has unsafe characters", s)
	}
	if back, err := DesanitizeUser(s); err != nil || back != p {
		t.Errorf("round trip of %q: %q, %v", p, back, err)
	}
	// URLDecoder reads '+' as a space (znodes written by other tools).
	if back, _ := DesanitizeUser("a+b"); back != "a b" {
		t.Errorf("DesanitizeUser(a+b) = %q", back)
	}
	if _, err := DesanitizeUser("bad%zz"); err == nil {
		t.Error("DesanitizeUser accepted a malformed escape")
	}
}

func TestUserConfigZNodes(t *testing.T) {
	c := newClient(t)
	raw := rawConn(t)
	root := chrootFor(t)
	cred := "salt=c2FsdA==,stored_key=c3Q=,server_key=c2s=,iterations=4096"

	n, err := c.SetUserConfig("bob smith", map[string]string{"SCRAM-SHA-512": cred, "SCRAM-SHA-256": cred})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := rawGet(t, raw, root+"/config/users/bob%20smith")
	want := `{"version":1,"config":{"SCRAM-SHA-256":"` + cred + `","SCRAM-SHA-512":"` + cred + `"}}`
	if string(data) != want {
		t.Errorf("user znode\n got %s\nwant %s", data, want)
	}
	note, _ := rawGet(t, raw, root+"/config/changes/"+n[len("/config/changes/"):])
	if string(note) != `{"version":2,"entity_path":"users/bob%20smith"}` {
		t.Errorf("notification %s = %s", n, note)
	}

	got, err := c.GetUserConfig("bob smith")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"SCRAM-SHA-256": cred, "SCRAM-SHA-512": cred}) {
		t.Errorf("GetUserConfig = %v, %v", got, err)
	}
	if _, err := c.SetUserConfig("carol", map[string]string{"SCRAM-SHA-256": cred}); err != nil {
		t.Fatal(err)
	}
	all, err := c.GetAllUserConfigs()
	if err != nil || len(all) != 2 || all["bob%20smith"]["SCRAM-SHA-512"] != cred || all["carol"]["SCRAM-SHA-256"] != cred {
		t.Errorf("GetAllUserConfigs = %v, %v", all, err)
	}

	// Emptying a user removes its znode but still notifies.
	n2, err := c.SetUserConfig("carol", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := raw.Exists(root + "/config/users/carol"); ok || err != nil {
		t.Errorf("emptied user znode still exists (err %v)", err)
	}
	if n2 == "" || n2 <= n {
		t.Errorf("no newer notification for the emptied user: %q after %q", n2, n)
	}
	// A user node with <user>/clients children is kept (quota overrides live there).
	if err := c.CreateRecursive(ConfigEntityPath(ConfigTypeUser, "dave")+"/clients/app", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetUserConfig("dave", map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := rawGet(t, raw, root+"/config/users/dave"); string(data) != `{"version":1,"config":{}}` {
		t.Errorf("user with children: %s", data)
	}
	// Emptying a user that never existed writes nothing.
	if _, err := c.SetUserConfig("nobody", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(UserConfigPath("nobody")); !errors.Is(err, ErrNoNode) {
		t.Errorf("nobody: %v", err)
	}
}
