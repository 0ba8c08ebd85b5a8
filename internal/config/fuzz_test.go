package config

import "testing"

// FuzzFromText feeds arbitrary file text through both parsers and FromMap: nothing may panic,
// and FromMap must return a config or an error, never both or neither.
func FuzzFromText(f *testing.F) {
	for _, s := range []string{
		"broker.id=1\nzookeeper.connect=h:1\n",
		"a\\\n  b=c\\u0041\\",
		"key:value\n!comment\n#c\n  x y",
		"zookeeper.connect: h:1\nlisteners: [PLAINTEXT://:0]\nlog: {dirs: /x}\n",
		"listeners: PLAINTEXT://[::1]:0,SSL://h:1\nzookeeper.connect: h\n",
		"a=\\u12",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		maps := []map[string]string{}
		if m, err := ParseProperties(text); err == nil {
			maps = append(maps, m)
		}
		if m, err := ParseYAML(text); err == nil && m != nil {
			maps = append(maps, m)
		}
		for _, m := range maps {
			c, _, err := FromMap(m)
			if (c == nil) == (err == nil) {
				t.Fatalf("config %v, err %v", c, err)
			}
		}
	})
}
