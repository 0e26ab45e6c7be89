package zkserver

import (
	"crypto/sha1"
	"encoding/base64"
	"net"
	"strings"

	"github.com/polebench/polebench/datatree"
	"github.com/polebench/polebench/zkproto"
)

// digestID is the digest scheme's identity for "user:password": the user and the
// base64 SHA-1 of the whole credential (ZooKeeper's DigestAuthenticationProvider).
func digestID(credential string) string {
	user, _, _ := strings.Cut(credential, ":")
	sum := sha1.Sum([]byte(credential))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// identities is what addAuth adds to a connection for scheme and its credential:
// nil when ZooKeeper has no provider for the scheme (the client gets AuthFailed).
func (s *Server) identities(scheme string, auth []byte, remote net.Addr) []datatree.ID {
	switch scheme {
	case "digest":
		id := datatree.ID{Scheme: "digest", ID: digestID(string(auth))}
		if s.cfg.SuperDigest != "" && id.ID == s.cfg.SuperDigest {
			return []datatree.ID{datatree.Super, id} // ZooKeeper's order, as whoAmI shows
		}
		return []datatree.ID{id}
	case "ip":
		return []datatree.ID{ipID(remote)}
	}
	return nil
}

// ipID is the ip scheme's identity of a connection, which every connection has.
func ipID(remote net.Addr) datatree.ID {
	host := remote.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return datatree.ID{Scheme: "ip", ID: host}
}

// treeACL converts a request's ACL; nil stays nil (the client port refuses an empty
// one before it gets here).
func treeACL(acl []zkproto.ACL) []datatree.ACL {
	if acl == nil {
		return nil
	}
	out := make([]datatree.ACL, len(acl))
	for i, a := range acl {
		out[i] = datatree.ACL{Perms: a.Perms, ID: datatree.ID{Scheme: a.Scheme, ID: a.ID}}
	}
	return out
}

func wireACL(acl []datatree.ACL) []zkproto.ACL {
	out := make([]zkproto.ACL, len(acl))
	for i, a := range acl {
		out[i] = zkproto.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID.ID}
	}
	return out
}

// userOf is the user whoAmI names for an identity: a digest's user without its hash.
func userOf(id datatree.ID) string {
	if id.Scheme == "digest" {
		user, _, _ := strings.Cut(id.ID, ":")
		return user
	}
	return id.ID
}
