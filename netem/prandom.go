package netem

// prandom is the kernel's seeded PRNG as netem uses it since Linux 6.6
// (TCA_NETEM_PRNG_SEED): prandom_seed_state then prandom_u32_state, the combined
// Tausworthe generator taus113 (L'Ecuyer 1999) of lib/random32.c. With it a
// DelayLine draws the same jitter sequence a seeded netem leaf draws.
type prandom struct{ s1, s2, s3, s4 uint32 }

// seedMin is __seed: each component has a minimum below which taus113 degenerates.
func seedMin(x, m uint32) uint32 {
	if x < m {
		return x + m
	}
	return x
}

// newPrandom is prandom_seed_state: all four components start from one 32-bit fold
// of the 64-bit seed.
func newPrandom(seed uint64) *prandom {
	i := uint32(seed>>32 ^ seed<<10 ^ seed)
	return &prandom{seedMin(i, 2), seedMin(i, 8), seedMin(i, 16), seedMin(i, 128)}
}

func taus(s uint32, a, b, c, d uint) uint32 { return (s&uint32(c))<<d ^ (s<<a^s)>>b }

// Uint32 is prandom_u32_state.
func (r *prandom) Uint32() uint32 {
	r.s1 = taus(r.s1, 6, 13, 4294967294, 18)
	r.s2 = taus(r.s2, 2, 27, 4294967288, 2)
	r.s3 = taus(r.s3, 13, 21, 4294967280, 7)
	r.s4 = taus(r.s4, 3, 12, 4294967168, 13)
	return r.s1 ^ r.s2 ^ r.s3 ^ r.s4
}

// splitmix64 is a 64-bit mixer, used to derive per-link and per-leaf seeds from a
// plan's seed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
