package zkserver

import (
	"fmt"
	"os"
	"strings"
)

// digestLoginModule is the JAAS module whose user_NAME="password" options are
// ZooKeeper's DIGEST-MD5 users.
const digestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// ReadJAAS reads the SASL users of a JAAS login configuration, as ZooKeeper's
// server reads the file java.security.auth.login.config names: the options
// user_NAME="password" of the DigestLoginModule in its Server section. nil, no
// error: the file has no such section, and SASL stays off. Errors name file:line.
func ReadJAAS(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sections, err := parseJAAS(path, string(b))
	if err != nil {
		return nil, err
	}
	var users map[string]string
	for _, m := range sections["Server"] {
		if m.class != digestLoginModule {
			continue
		}
		users = map[string]string{}
		for k, v := range m.options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				users[name] = v
			}
		}
	}
	return users, nil
}

type jaasModule struct {
	class   string
	options map[string]string
}

// parseJAAS reads `Name { class flag key=value ...; ... };` entries, with // and
// /* */ comments, as Java's ConfigFile does.
func parseJAAS(file, src string) (map[string][]jaasModule, error) {
	toks, err := jaasTokens(file, src)
	if err != nil {
		return nil, err
	}
	out := map[string][]jaasModule{}
	i := 0
	want := func(what string) (jaasToken, error) {
		if i == len(toks) {
			return jaasToken{}, fmt.Errorf("%s: want %s, the file ends", file, what)
		}
		t := toks[i]
		i++
		if what != "a word" && t.text != what || what == "a word" && !t.word {
			return t, fmt.Errorf("%s:%d: want %s, got %q", file, t.line, what, t.text)
		}
		return t, nil
	}
	for i < len(toks) {
		name, err := want("a word")
		if err != nil {
			return nil, err
		}
		if _, err := want("{"); err != nil {
			return nil, err
		}
		for i < len(toks) && toks[i].text != "}" {
			m, err := jaasEntry(file, toks, &i, want)
			if err != nil {
				return nil, err
			}
			out[name.text] = append(out[name.text], m)
		}
		if _, err := want("}"); err != nil {
			return nil, err
		}
		if _, err := want(";"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jaasEntry reads one `class flag key=value ...;` of a section.
func jaasEntry(file string, toks []jaasToken, i *int, want func(string) (jaasToken, error)) (jaasModule, error) {
	class, err := want("a word")
	if err != nil {
		return jaasModule{}, err
	}
	flag, err := want("a word")
	if err != nil {
		return jaasModule{}, err
	}
	switch strings.ToLower(flag.text) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return jaasModule{}, fmt.Errorf("%s:%d: %s: flag %q is not required, requisite, sufficient or optional", file, flag.line, class.text, flag.text)
	}
	m := jaasModule{class: class.text, options: map[string]string{}}
	for *i < len(toks) && toks[*i].text != ";" {
		key, err := want("a word")
		if err != nil {
			return m, err
		}
		if _, err := want("="); err != nil {
			return m, err
		}
		val := toks[*i] // a quoted string or a bare word
		if *i++; !val.word {
			return m, fmt.Errorf("%s:%d: %s: want a value, got %q", file, val.line, key.text, val.text)
		}
		m.options[key.text] = val.text
	}
	_, err = want(";")
	return m, err
}

type jaasToken struct {
	text string
	line int
	word bool // a word or quoted string, not punctuation
}

func jaasTokens(file, src string) ([]jaasToken, error) {
	var toks []jaasToken
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated comment", file, line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case strings.ContainsRune("{};=", rune(c)):
			toks = append(toks, jaasToken{text: string(c), line: line})
			i++
		case c == '"':
			end := strings.IndexByte(src[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated string", file, line)
			}
			toks = append(toks, jaasToken{text: src[i+1 : i+1+end], line: line, word: true})
			line += strings.Count(src[i+1:i+1+end], "\n")
			i += end + 2
		default:
			j := i
			for j < len(src) && !strings.ContainsRune("{};=\" \t\r\n", rune(src[j])) {
				j++
			}
			toks = append(toks, jaasToken{text: src[i:j], line: line, word: true})
			i = j
		}
	}
	return toks, nil
}
