#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The operating system's cryptographically secure generator (`getrandom(2)` through `getentropy(3)`, the generator
/// behind `SystemRandomNumberGenerator`), read 256 bytes per system call instead of 8: `SystemRandomNumberGenerator`
/// makes one `getrandom` per `next()`, 24 of them for one registration's token and secret.
///
/// A value for one use — the token, the secret or the key being made — kept on the stack of the call that makes it:
/// bytes it did not hand out go with it, never shared between calls or threads. Where `getentropy` fails it
/// reads through `SystemRandomNumberGenerator`, which traps rather than return weak bytes.
public struct SecureRandom: RandomNumberGenerator {
    /// Words read from the generator and not handed out yet: ``index`` onwards.
    private var block = InlineArray<32, UInt64>(repeating: 0)
    /// The next word of ``block`` to hand out; `block.count`: none left.
    private var index = 32

    /// A generator with nothing read yet (the first ``next()`` reads a block).
    public init() {}

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        if index == block.count { refill() }
        let word = block[index]
        index += 1
        return word
    }

    private mutating func refill() {
        let filled = withUnsafeMutableBytes(of: &block) { Self.fill($0) }
        if !filled {
            var system = SystemRandomNumberGenerator()
            for position in block.indices { block[position] = system.next() }
        }
        index = 0
    }

    /// Fills `bytes` (256 at most, `getentropy`'s limit) from the generator; false when it cannot (then nothing read
    /// is used).
    private static func fill(_ bytes: UnsafeMutableRawBufferPointer) -> Bool {
        #if canImport(Glibc) || canImport(Darwin)
        // `getentropy(3)`: one `getrandom(2)` for up to 256 bytes, retried on EINTR; it fails rather than return
        // fewer bytes.
        return getentropy(bytes.baseAddress!, bytes.count) == 0
        #else
        return false
        #endif
    }
}
