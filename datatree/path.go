package datatree

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidatePath applies ZooKeeper's PathUtils.validatePath: absolute, no empty,
// "." or ".." components, no trailing slash (except "/"), and none of the
// characters ZooKeeper refuses (NUL, controls, U+007F..U+009F, U+D800..U+F8FF,
// U+FFF0..U+FFFF, and anything outside the BMP, which Java sees as surrogates).
func ValidatePath(path string) error {
	if plainPath(path) {
		return nil
	}
	return checkPath(path)
}

// plainPath accepts the common valid path in one pass: printable ASCII, "/" first,
// no empty, "." or ".." name, no "/" last. Anything else takes checkPath, which
// accepts or names the error as ZooKeeper does.
func plainPath(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) {
			if c := p[i]; c < 0x20 || c > 0x7e {
				return false
			} else if c != '/' {
				continue
			}
		}
		switch name := p[start:i]; name {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

func checkPath(path string) error {
	if path == "" {
		return fmt.Errorf("path length must be > 0")
	}
	if path[0] != '/' {
		return fmt.Errorf("path %s must start with / character", quote(path))
	}
	if path == "/" {
		return nil
	}
	if path[len(path)-1] == '/' {
		return fmt.Errorf("path %s must not end with / character", quote(path))
	}
	for i, r := range path {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(path[i:]); size == 1 {
				return fmt.Errorf("path %s: invalid UTF-8 @%d", quote(path), i)
			}
		}
		if r == 0 || r <= 0x1f || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
			return fmt.Errorf("path %s: invalid character @%d", quote(path), i)
		}
	}
	for comp := range strings.SplitSeq(path[1:], "/") {
		switch comp {
		case "":
			return fmt.Errorf("path %s: empty node name specified", quote(path))
		case ".", "..":
			return fmt.Errorf("path %s: relative paths not allowed", quote(path))
		}
	}
	return nil
}

// validateCreatePath is ZooKeeper's validatePath(path, isSequential): a
// sequential path may end in "/" because the counter completes the name.
func validateCreatePath(path string, sequential bool) error {
	if sequential {
		return ValidatePath(path + "1")
	}
	return ValidatePath(path)
}

// parentOf returns the parent path of a valid, non-root path.
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i == 0 {
		return "/"
	}
	return path[:i]
}

// special paths cannot be deleted (ZKDatabase.isSpecialPath).
func isSpecialPath(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

// quote quotes a path for an error message, shortened: a corrupt input may
// hold a megabyte of garbage.
func quote(path string) string {
	if len(path) > 64 {
		return fmt.Sprintf("%q...", path[:64])
	}
	return fmt.Sprintf("%q", path)
}
