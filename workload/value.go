package workload

import (
	"bytes"
	"fmt"
	"strconv"
)

// The value of every write starts with a header line naming the run and the request,
// so a read-back can tell which write a znode holds: "pb <run> <id>\n", then padding.
// Id 0 is the value Prepare writes.

// KeyPath is the znode of key i under prefix.
func KeyPath(prefix string, i int) string { return fmt.Sprintf("%s/k%05d", prefix, i) }

func encodeValue(run string, id uint64, size int) []byte {
	return appendValue(make([]byte, 0, max(size, 64)), run, id, size)
}

// appendValue appends the value to b (b's own bytes do not count towards size).
func appendValue(b []byte, run string, id uint64, size int) []byte {
	size += len(b)
	b = append(b, "pb "...)
	b = append(b, run...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, id, 10)
	b = append(b, '\n')
	for len(b) < size {
		b = append(b, padding[:min(len(padding), size-len(b))]...)
	}
	return b
}

var padding = bytes.Repeat([]byte{'.'}, 4096)

// decodeValue returns the run and request id a value was written by.
func decodeValue(v []byte) (run string, id uint64, err error) {
	line, _, ok := bytes.Cut(v, []byte{'\n'})
	f := bytes.Fields(line)
	if !ok || len(f) != 3 || string(f[0]) != "pb" {
		return "", 0, fmt.Errorf("value %.40q is not a polebench value", v)
	}
	id, err = strconv.ParseUint(string(f[2]), 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("value %.40q: request id: %w", v, err)
	}
	return string(f[1]), id, nil
}
