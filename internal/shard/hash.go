package shard

import (
	"hash/fnv"
)

// Owner is the member that owns key among members, by rendezvous (highest random weight) hashing: every
// member scores the key, the highest score wins. The answer depends only on the key and the set of members,
// not on their order, so every replica that sees the same members picks the same owner; and a member that
// joins or leaves moves only the keys it wins or won (about 1/n of them), the others keep their owner. Empty
// when there are no members.
func Owner(key string, members []string) string {
	var owner string
	var best uint64
	for _, m := range members {
		s := score(m, key)
		if owner == "" || s > best || (s == best && m < owner) {
			owner, best = m, s
		}
	}
	return owner
}

// score is the weight of key for member: FNV-1a of both, mixed by SplitMix64's finalizer, since FNV's low
// bits alone spread keys that differ in their last characters (cluster-001, cluster-002) unevenly.
func score(member, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
