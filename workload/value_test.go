package workload

import (
	"bytes"
	"testing"
)

// TestAppendValue: a value appended to a buffer is Value's, whatever the buffer held.
func TestAppendValue(t *testing.T) {
	for _, size := range []int{0, 4, 64, 1024, 5000} {
		for _, prefix := range []string{"", "xyz"} {
			got := AppendValue([]byte(prefix), "run7", 1<<40|3, size)
			if want := Value("run7", 1<<40|3, size); !bytes.Equal(got[len(prefix):], want) || string(got[:len(prefix)]) != prefix {
				t.Errorf("size %d prefix %q: got %q..., want %q...", size, prefix, got[:min(len(got), 20)], want[:min(len(want), 20)])
			}
		}
	}
}
