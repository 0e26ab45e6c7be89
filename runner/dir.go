package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/polebench/polebench/spec"
)

// runDir makes the run directory and, for the default location, the latest link.
func runDir(out, name string) (string, error) {
	if out != "" {
		return out, os.MkdirAll(out, 0o755)
	}
	base := filepath.Join("results", name)
	dir := filepath.Join(base, time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	latest := filepath.Join(base, "latest")
	os.Remove(latest)
	if err := os.Symlink(filepath.Base(dir), latest); err != nil {
		return "", fmt.Errorf("latest link: %w", err)
	}
	return dir, nil
}

func writeSpec(dir string, s *spec.Spec) error {
	// The spec as written (a file, or a shipped one), then as resolved with overrides.
	b, err := os.ReadFile(s.File)
	if err != nil {
		b, err = spec.Shipped(s.Name)
	}
	if err == nil {
		if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), b, 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "spec.resolved.json"), s)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
