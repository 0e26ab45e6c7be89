// spin is the program TestRunSplits measures: spinA runs n rounds, spinB 2n, both
// called from work.
package main

var sink uint64

func main() { work(3_000_000) }

//go:noinline
func work(n int) { sink = spinA(n) + spinB(2*n) }

//go:noinline
func spinA(n int) uint64 { return spin(n) }

//go:noinline
func spinB(n int) uint64 { return spin(n) }

//go:noinline
func spin(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}
