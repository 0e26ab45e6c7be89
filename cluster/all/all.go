// Package all links every backend and flavor, so that a program that starts clusters
// by name (cluster.New, cluster.Down, cluster.Check), runs specs and checks them knows
// each of them: each registers itself, and what it carries, from its init (package
// backend is the registry). A new backend or flavor is a package under cluster/ and
// one import line here (docs/backends.md, "Adding a backend or a flavor").
package all

import (
	_ "github.com/polebench/polebench/cluster/docker"
	_ "github.com/polebench/polebench/cluster/etcd"
	_ "github.com/polebench/polebench/cluster/local"
	_ "github.com/polebench/polebench/cluster/netns"
	_ "github.com/polebench/polebench/cluster/swarm"
	_ "github.com/polebench/polebench/cluster/zookeeper"
	_ "github.com/polebench/polebench/sim" // the sim backend: virtual time, no cluster
)
