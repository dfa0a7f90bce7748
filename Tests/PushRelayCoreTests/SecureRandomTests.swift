import Testing

@testable import PushRelayCore

/// ``SecureRandom``: the operating system's generator read a block at a time, behind every token, secret and key.
@Suite struct SecureRandomTests {
    @Test("words across several blocks are all different, and every bit is set about half the time")
    func wordsLookRandom() {
        var generator = SecureRandom()
        let words = (0..<10_000).map { _ in generator.next() }  // 312 blocks of 32 words and a part
        #expect(Set(words).count == words.count)
        for bit in 0..<64 {
            let set = words.filter { $0 & (1 << UInt64(bit)) != 0 }.count
            // Binomial(10,000, 1/2): the standard deviation is 50; ten of them is never reached by chance.
            #expect((4_500...5_500).contains(set), "bit \(bit) set in \(set) of 10,000 words")
        }
    }

    @Test("two generators share nothing: their first words differ")
    func generatorsAreIndependent() {
        var first = SecureRandom()
        var second = SecureRandom()
        let a = (0..<32).map { _ in first.next() }
        let b = (0..<32).map { _ in second.next() }
        #expect(Set(a).isDisjoint(with: b))
    }

    @Test("what it makes keeps its format: tokens, secrets and keys, all distinct")
    func credentialsFromIt() {
        let tokens = (0..<200).map { _ in RegistrationToken.generate().rawValue }
        #expect(tokens.allSatisfy(RegistrationToken.isWellFormed))
        #expect(Set(tokens).count == tokens.count)
        let secrets = (0..<200).map { _ in Credentials.deviceSecret() }
        #expect(secrets.allSatisfy { $0.hasPrefix("prd_") && $0.count == 47 })
        #expect(Set(secrets).count == secrets.count)
        let keys = (0..<200).map { _ in Credentials.serverKey() }
        #expect(Set(keys).count == keys.count)
    }
}
