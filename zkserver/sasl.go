package zkserver

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SASL DIGEST-MD5 (RFC 2831) as ZooKeeper's server runs it: service "zookeeper",
// server name and realm "zk-sasl-md5" (hard-wired there, whatever the host), qop
// auth only, the users a JAAS file's DigestLoginModule lists. A success adds the
// identity sasl:<user>.
const (
	saslService = "zookeeper"
	saslRealm   = "zk-sasl-md5"
)

// digestMD5 is one connection's exchange: the challenge sent, then the response
// checked. It is used once; anything after the end is a failure.
type digestMD5 struct {
	users map[string]string
	nonce string
	step  int // 0: expects the empty initial token; 1: the digest response; 2: done
}

var errSASL = errors.New("DIGEST-MD5 authentication failed")

// next answers one client token: the server's next token, and, when the exchange
// has succeeded, the authenticated user.
func (d *digestMD5) next(token []byte) (reply []byte, user string, err error) {
	switch d.step {
	case 0:
		// DIGEST-MD5 has no initial response; ZooKeeper (Java's server) ignores one.
		d.step = 1
		var b [30]byte
		rand.Read(b[:])
		d.nonce = base64.StdEncoding.EncodeToString(b[:])
		// No qop directive: its default, auth, is the one offered (RFC 2831 2.1.1).
		return fmt.Appendf(nil, `realm="%s",nonce="%s",charset=utf-8,algorithm=md5-sess`, saslRealm, d.nonce), "", nil
	case 1:
		d.step = 2
		return d.verify(token)
	}
	return nil, "", fmt.Errorf("%w: a token after the exchange ended", errSASL)
}

// verify checks the client's digest-response (RFC 2831 2.1.2) and returns
// rspauth, the server's proof that it knows the password too.
func (d *digestMD5) verify(token []byte) ([]byte, string, error) {
	dir, err := parseDirectives(string(token))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errSASL, err)
	}
	user, uri := dir["username"], saslService+"/"+saslRealm
	password, known := d.users[user]
	qop := dir["qop"]
	if qop == "" {
		qop = "auth"
	}
	switch {
	case !known:
		return nil, "", fmt.Errorf("%w: no user %q", errSASL, user)
	case dir["nonce"] != d.nonce:
		return nil, "", fmt.Errorf("%w: not the nonce sent", errSASL)
	case dir["nc"] != "00000001":
		return nil, "", fmt.Errorf("%w: nonce count %q, want 00000001", errSASL, dir["nc"])
	case qop != "auth":
		return nil, "", fmt.Errorf("%w: qop %q, only auth is offered", errSASL, qop)
	case dir["digest-uri"] != uri:
		return nil, "", fmt.Errorf("%w: digest-uri %q, want %q", errSASL, dir["digest-uri"], uri)
	case dir["realm"] != "" && dir["realm"] != saslRealm:
		return nil, "", fmt.Errorf("%w: realm %q, want %q", errSASL, dir["realm"], saslRealm)
	case dir["cnonce"] == "":
		return nil, "", fmt.Errorf("%w: no cnonce", errSASL)
	}
	proof := func(a2 string) string {
		ha1 := md5hex(md5raw(user+":"+dir["realm"]+":"+password) + ":" + d.nonce + ":" + dir["cnonce"] + authzidPart(dir))
		return md5hex(ha1 + ":" + d.nonce + ":" + dir["nc"] + ":" + dir["cnonce"] + ":" + qop + ":" + md5hex(a2))
	}
	if subtle.ConstantTimeCompare([]byte(proof("AUTHENTICATE:"+uri)), []byte(dir["response"])) != 1 {
		return nil, "", fmt.Errorf("%w: wrong password for %q", errSASL, user)
	}
	return []byte("rspauth=" + proof(":"+uri)), user, nil
}

// authzidPart is A1's tail when the client names an authorization id.
func authzidPart(dir map[string]string) string {
	if z, ok := dir["authzid"]; ok {
		return ":" + z
	}
	return ""
}

func md5raw(s string) string { h := md5.Sum([]byte(s)); return string(h[:]) }
func md5hex(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }

// parseDirectives reads RFC 2831's comma-separated name=value list; values may be
// quoted strings with backslash escapes. A directive given twice is an error.
func parseDirectives(s string) (map[string]string, error) {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("directive %q has no value", s)
		}
		name = strings.ToLower(strings.TrimSpace(name))
		rest = strings.TrimLeft(rest, " \t")
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if i == len(rest) {
				return nil, fmt.Errorf("directive %s: unterminated quoted string", name)
			}
			val, rest = b.String(), rest[i+1:]
		} else {
			val, rest, _ = strings.Cut(rest, ",")
			val, rest = strings.TrimSpace(val), ","+rest
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("directive %s given twice", name)
		}
		out[name] = val
		rest = strings.TrimSpace(rest)
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("directive %s: %q after its value", name, rest)
		}
		s = strings.TrimSpace(strings.TrimLeft(rest, ","))
	}
	return out, nil
}
