// Command hog is a noisy neighbour for the load runs: on one core, until
// it is stopped, it reads and writes one word in every 64 bytes of a
// 256 MB array, which keeps the caches and the memory bus busy. Start one
// per core to take from a run (docs/benchmarks.md, "Scale, fifth pass").
package main

func main() {
	words := make([]uint64, 32<<20) // 256 MB
	for i := range words {
		words[i] = uint64(i)
	}
	var sum uint64
	for {
		for i := 0; i < len(words); i += 8 { // one word per 64-byte line
			sum += words[i]
			words[i] = sum
		}
	}
}
