// Package experiments holds the shipped experiment specs (YAML), embedded so binaries
// and VM tests carry them without the source tree. Package spec reads them.
package experiments

import "embed"

// FS holds the shipped specs, one NAME.yaml each.
//
//go:embed *.yaml
var FS embed.FS
