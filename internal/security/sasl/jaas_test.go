package sasl

import (
	"reflect"
	"strings"
	"testing"
)

// Cases follow Kafka's JaasContextTest and the StreamTokenizer behaviour it relies on.
func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		in     string
		module string
		flag   string
		opts   map[string]string
	}{
		{"test.testConfigNoOptions required;", "test.testConfigNoOptions", "REQUIRED", map[string]string{}},
		{"test.m Requisite propName=propValue;", "test.m", "REQUISITE", map[string]string{"propName": "propValue"}},
		{"test.m sufficient a=b c=d;", "test.m", "SUFFICIENT", map[string]string{"a": "b", "c": "d"}},
		{"test.m OPTIONAL;", "test.m", "OPTIONAL", map[string]string{}},
		{`test.testQuotedOptionValue required propName="prop value" propName2="value1 = 1, value2 = 2";`,
			"test.testQuotedOptionValue", "REQUIRED", map[string]string{"propName": "prop value", "propName2": "value1 = 1, value2 = 2"}},
		{`test.testQuotedOptionName required "prop name"=propValue;`,
			"test.testQuotedOptionName", "REQUIRED", map[string]string{"prop name": "propValue"}},
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			PlainLoginModule, "REQUIRED", map[string]string{"username": "admin", "password": "admin-secret",
				"user_admin": "admin-secret", "user_alice": "alice-secret"}},
		// Unquoted words may hold '-', '_', '$', '.' and digits after the first letter.
		{"m required user_bob=bob-secret.2$x;", "m", "REQUIRED", map[string]string{"user_bob": "bob-secret.2$x"}},
		// Single quotes, escapes, comments and line breaks.
		{"m required a='x\\\"y' b=\"t\\tab\\101\\n\" /* c=d */ e=f // g=h\n i=\"j\";", "m", "REQUIRED",
			map[string]string{"a": `x"y`, "b": "t\tabA\n", "e": "f", "i": "j"}},
		// A lone '/' starts a comment to the end of the line, as in Java.
		{"m required a=b /c=d\n e=f;", "m", "REQUIRED", map[string]string{"a": "b", "e": "f"}},
		// An unterminated quote ends at the line break.
		{"m required a=\"b\n;", "m", "REQUIRED", map[string]string{"a": "b"}},
		// The later of two equal keys wins.
		{"m required a=b a=c;", "m", "REQUIRED", map[string]string{"a": "c"}},
		{"  \t\r\n m required; ", "m", "REQUIRED", map[string]string{}},
		{"m required pw=\"päss wörd\";", "m", "REQUIRED", map[string]string{"pw": "päss wörd"}},
	} {
		e, err := ParseJAAS(tc.in)
		if err != nil {
			t.Errorf("ParseJAAS(%q): %v", tc.in, err)
			continue
		}
		if e.LoginModule != tc.module || e.Flag != tc.flag || !reflect.DeepEqual(e.Options, tc.opts) {
			t.Errorf("ParseJAAS(%q) = %+v, want %s %s %v", tc.in, e, tc.module, tc.flag, tc.opts)
		}
	}
}

func TestParseJAASRejects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "login module not specified"},
		{"  // only a comment", "login module not specified"},
		{"  required option1=value1;", "control flag"},                             // missing login module
		{"test.loginModule option1=value1;", "invalid login module control flag"},  // missing flag
		{"loginModule required option1;", "value not specified for key 'option1'"}, // missing value
		{"test.testMissingSemicolon required option1=value1", "not terminated"},    // missing ';'
		{"test.testNumericOptionWithoutQuotes required option1=3;", "value not specified"},
		{"test.testInvalidControlFlag { option1=3;", "control flag"},
		{"m required a=;", "value not specified"},
		{"m", "control flag not specified"},
		{"m required 5=x;", "invalid option name"},
		{`"" required;`, "class name missing"},
		{"a required; b required;", "contains 2 login modules"},
	} {
		_, err := ParseJAAS(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJAAS(%q) error = %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestParseJAASEntriesMultiple(t *testing.T) {
	es, err := ParseJAASEntries(" test.Module0 required index=Index0; test.Module1 required index=Index1; test.Module2 required index=Index2;")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 {
		t.Fatalf("got %d entries, want 3", len(es))
	}
	for i, e := range es {
		if want := "test.Module" + string(rune('0'+i)); e.LoginModule != want || e.Options["index"] != "Index"+string(rune('0'+i)) {
			t.Errorf("entry %d = %+v", i, e)
		}
	}
}
