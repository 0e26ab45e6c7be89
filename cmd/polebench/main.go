// Command polebench is the harness CLI: it runs experiment specs against a replicated
// coordination service and compares what it measures with the analytic model.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
