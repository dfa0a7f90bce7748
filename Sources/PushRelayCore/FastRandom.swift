internal import Synchronization

/// A fast, lock-free, non-cryptographic random source for ids that need only be unpredictable enough to avoid
/// collisions (`multicast_id`): SplitMix64 over one atomic counter, seeded once from the system generator.
/// Never used for tokens, secrets or keys.
enum FastRandom {
    private static let state = Atomic<UInt64>({
        var system = SystemRandomNumberGenerator()
        return system.next()
    }())

    /// The next 64 random bits.
    static func next() -> UInt64 {
        var z = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
