package datatree

import (
	"net/netip"
	"slices"
	"strings"
)

// ID is an identity in a scheme (ZooKeeper's Id): ("world", "anyone"), ("ip",
// "10.0.0.1"), ("digest", "user:base64(sha1(user:password))"), ("super", "").
type ID struct {
	Scheme, ID string
}

// ACL is one access control entry: the permissions an identity has on a node.
type ACL struct {
	Perms int32
	ID
}

// Permission bits (ZooDefs.Perms).
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = 0x1f
)

// Anyone is the world scheme's only identity.
var Anyone = ID{"world", "anyone"}

// Super is the identity that passes every ACL (a digest user matching the
// configured superDigest is given it).
var Super = ID{"super", ""}

// openACL is world:anyone with every permission (OPEN_ACL_UNSAFE); a node stores it
// as nil, so the usual ACL costs no memory.
var openACL = []ACL{{Perms: PermAll, ID: Anyone}}

// OpenACL returns world:anyone with every permission.
func OpenACL() []ACL { return slices.Clone(openACL) }

// aclOf is what a node's stored ACL means.
func aclOf(stored []ACL) []ACL {
	if stored == nil {
		return openACL
	}
	return stored
}

// stored is the form a node keeps acl in: nil for the open ACL.
func stored(acl []ACL) []ACL {
	if len(acl) == 1 && acl[0] == openACL[0] {
		return nil
	}
	return acl
}

// Allowed reports whether identities auth hold perm (any of its bits) under acl, as
// ZooKeeper's checkACL: super passes all, world:anyone admits everyone, digest ids
// match exactly, ip ids match an address or a prefix.
func Allowed(acl []ACL, auth []ID, perm int32) bool {
	if acl == nil {
		return true // the open ACL
	}
	if slices.Contains(auth, Super) {
		return true
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID == Anyone {
			return true
		}
		for _, id := range auth {
			if id.Scheme == a.Scheme && matches(a.Scheme, id.ID, a.ID.ID) {
				return true
			}
		}
	}
	return false
}

// matches reports whether an authenticated id is the ACL's id in scheme.
func matches(scheme, id, aclID string) bool {
	if scheme != "ip" {
		return id == aclID
	}
	addr, err := netip.ParseAddr(id)
	if err != nil {
		return false
	}
	if p, err := netip.ParsePrefix(aclID); err == nil {
		return p.Contains(addr)
	}
	a, err := netip.ParseAddr(aclID)
	return err == nil && a == addr
}

// fixACL is ZooKeeper's fixupACL: the ACL a create or setACL stores, or
// InvalidACL. The auth scheme stands for every authenticated identity of the
// requester (digest and sasl ones; an ip is not authenticated), duplicates go. nil is the
// open ACL (a client's empty list never gets here: the client port refuses it).
func fixACL(acl []ACL, auth []ID) ([]ACL, Code) {
	if len(acl) == 0 {
		return nil, Ok
	}
	out := make([]ACL, 0, len(acl))
	add := func(a ACL) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, a := range acl {
		switch a.Scheme {
		case "world":
			if a.ID.ID != "anyone" {
				return nil, InvalidACL
			}
			add(a)
		case "auth":
			n := len(out)
			for _, id := range auth {
				if authenticated(id) {
					add(ACL{Perms: a.Perms, ID: id})
				}
			}
			if len(out) == n && !slices.ContainsFunc(auth, authenticated) {
				return nil, InvalidACL
			}
		case "digest":
			if user, _, ok := strings.Cut(a.ID.ID, ":"); !ok || user == "" || strings.Count(a.ID.ID, ":") != 1 {
				return nil, InvalidACL
			}
			add(a)
		case "ip":
			if !validIP(a.ID.ID) {
				return nil, InvalidACL
			}
			add(a)
		case "sasl":
			if !validSASL(a.ID.ID) {
				return nil, InvalidACL
			}
			add(a)
		default:
			return nil, InvalidACL
		}
	}
	return stored(out), Ok
}

// authenticated reports whether an identity was proven (a digest, a SASL user),
// which the auth scheme stands for; an ip is not.
func authenticated(id ID) bool { return id.Scheme == "digest" || id.Scheme == "sasl" }

// validSASL is ZooKeeper's check of a sasl ACL id, that it reads as a Kerberos
// name: a plain name, or name[/host]@REALM.
func validSASL(s string) bool {
	if !strings.Contains(s, "@") {
		return true
	}
	name, realm, _ := strings.Cut(s, "@")
	return !strings.ContainsAny(realm, "/@") && strings.Count(name, "/") <= 1
}

func validIP(s string) bool {
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// MaskDigests is the ACL as a reader without ADMIN sees it: digest ids' password
// hashes replaced by "x", as ZooKeeper 3.8's getACL does.
func MaskDigests(acl []ACL) []ACL {
	out := slices.Clone(acl)
	for i := range out {
		if out[i].Scheme == "digest" {
			if user, _, ok := strings.Cut(out[i].ID.ID, ":"); ok {
				out[i].ID.ID = user + ":x"
			}
		}
	}
	return out
}
