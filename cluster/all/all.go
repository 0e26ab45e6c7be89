// Package all links every backend, so that a program that starts clusters by name
// (cluster.New, cluster.Down, cluster.Check) and checks specs knows each of them: each
// backend registers itself from its init. A new backend is a package under cluster/
// and one import line here.
package all

import (
	_ "github.com/polebench/polebench/cluster/docker"
	_ "github.com/polebench/polebench/cluster/local"
	_ "github.com/polebench/polebench/cluster/netns"
	_ "github.com/polebench/polebench/cluster/swarm"
	_ "github.com/polebench/polebench/cluster/zookeeper"
)
