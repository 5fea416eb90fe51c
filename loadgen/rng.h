/*
 * rng.h - the per-thread random generator of loadgen (xorshift64*, seeded by splitmix64 from
 * --seed and a stream number): deterministic for a seed, never 0. Each worker thread owns
 * one state; nothing here is shared.
 */
#ifndef LG_RNG_H
#define LG_RNG_H

#include <stdint.h>

/* The next 64 random bits of *state. */
static inline uint64_t lg_rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* The state of stream number stream for seed: distinct streams per thread, never 0. */
static inline uint64_t lg_rng_seed(uint64_t seed, uint64_t stream)
{
    /* splitmix64 of (seed, stream) */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z ? z : 0x853C49E6748FEA9Bull;
}

/* Uniform in (0, 1]. */
static inline double lg_rng_unit(uint64_t *state)
{
    return (double)((lg_rng_next(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

#endif /* LG_RNG_H */
