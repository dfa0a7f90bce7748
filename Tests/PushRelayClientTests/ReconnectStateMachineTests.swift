import PushRelayWire
import Testing

@testable import PushRelayClient

@Suite("ReconnectStateMachine")
struct ReconnectStateMachineTests {
    private let lost = ReconnectStateMachine.Failure.transient("connection refused")

    private func policy(
        _ jitter: BackoffPolicy.Jitter, maximumAttempts: Int? = nil
    ) -> BackoffPolicy {
        BackoffPolicy(base: .seconds(1), maximum: .seconds(10), multiplier: 2, jitter: jitter,
                      stableAfter: .seconds(30), maximumAttempts: maximumAttempts)
    }

    private func delays(
        _ machine: inout ReconnectStateMachine, count: Int, random: inout some RandomNumberGenerator
    ) -> [Duration] {
        (0..<count).map { _ in
            guard case .reconnect(let delay, _) = machine.connectionLost(lost, connectedFor: nil, using: &random) else {
                Issue.record("expected a reconnect")
                return .zero
            }
            machine.reconnecting()
            return delay
        }
    }

    @Test("without jitter: exponential, capped at the maximum")
    func noJitter() {
        var machine = ReconnectStateMachine(policy: policy(.none))
        var random = FixedRandomNumberGenerator(0)
        #expect(machine.start() == .connect)
        #expect(delays(&machine, count: 6, random: &random) == [1, 2, 4, 8, 10, 10].map { .seconds($0) })
        #expect(machine.attempt == 6)
    }

    @Test("full jitter: the lowest draw is zero, the highest is the exponential bound")
    func fullJitter() {
        var low = ReconnectStateMachine(policy: policy(.full))
        var zero = FixedRandomNumberGenerator(0)
        #expect(delays(&low, count: 5, random: &zero) == Array(repeating: .zero, count: 5))

        var high = ReconnectStateMachine(policy: policy(.full))
        var top = FixedRandomNumberGenerator(.max)
        let highDelays = delays(&high, count: 6, random: &top)
        for (delay, bound) in zip(highDelays, [1, 2, 4, 8, 10, 10]) {
            #expect(delay <= .seconds(bound) && delay > .seconds(bound) * 0.99)
        }
    }

    @Test("full jitter stays within bounds for varied draws")
    func fullJitterBounds() {
        var machine = ReconnectStateMachine(policy: policy(.full))
        var random = SeededRandomNumberGenerator(state: 42)
        let drawn = delays(&machine, count: 50, random: &random)
        #expect(drawn.allSatisfy { $0 >= .zero && $0 <= .seconds(10) })
        #expect(Set(drawn).count > 40)
    }

    @Test("decorrelated jitter: between base and previous × multiplier, capped")
    func decorrelatedJitter() {
        var top = ReconnectStateMachine(policy: policy(.decorrelated))
        var high = FixedRandomNumberGenerator(.max)
        let rising = delays(&top, count: 6, random: &high)
        for (delay, expected) in zip(rising, [2.0, 4, 8, 10, 10, 10]) {
            #expect(delay <= .seconds(expected) && delay >= .seconds(expected) * 0.99)
        }
        var bottom = ReconnectStateMachine(policy: policy(.decorrelated))
        var low = FixedRandomNumberGenerator(0)
        #expect(delays(&bottom, count: 4, random: &low) == Array(repeating: .seconds(1), count: 4))

        var varied = ReconnectStateMachine(policy: policy(.decorrelated))
        var random = SeededRandomNumberGenerator(state: 7)
        #expect(delays(&varied, count: 50, random: &random).allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(10) })
    }

    @Test("a stable connection resets the attempts; a short one does not")
    func resetAfterStable() {
        var machine = ReconnectStateMachine(policy: policy(.none))
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        _ = delays(&machine, count: 3, random: &random)
        machine.connected()
        #expect(machine.connectionLost(lost, connectedFor: .seconds(5), using: &random)
            == .reconnect(after: .seconds(8), attempt: 4))
        machine.reconnecting()
        machine.connected()
        #expect(machine.connectionLost(lost, connectedFor: .seconds(30), using: &random)
            == .reconnect(after: .seconds(1), attempt: 1))
    }

    @Test("a heartbeat timeout declares the connection dead and replaces it")
    func heartbeatTimeout() {
        var machine = ReconnectStateMachine(policy: policy(.none))
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        machine.connected()
        #expect(machine.connectionLost(.heartbeatTimeout, connectedFor: .seconds(60), using: &random)
            == .reconnect(after: .seconds(1), attempt: 1))
    }

    @Test("refused credentials fail at once; attempts are bounded when configured")
    func failures() {
        var machine = ReconnectStateMachine(policy: policy(.none, maximumAttempts: 2))
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        #expect(machine.connectionLost(.permanent("401"), connectedFor: nil, using: &random) == .fail(reason: "401", exhausted: false))

        var bounded = ReconnectStateMachine(policy: policy(.none, maximumAttempts: 2))
        _ = bounded.start()
        _ = delays(&bounded, count: 2, random: &random)
        guard case .fail(let reason, let exhausted) = bounded.connectionLost(lost, connectedFor: nil, using: &random) else {
            Issue.record("expected to give up")
            return
        }
        #expect(reason.contains("2 attempts") && exhausted)
    }

    @Test("the resume id follows handled messages and freezes after a failed one until the next connection")
    func resumeEventID() {
        var machine = ReconnectStateMachine(policy: policy(.none), resumeEventID: "0")
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        #expect(machine.resumeEventID == "0")
        machine.connected()
        machine.messageHandled(id: "1")
        machine.messageFailed(id: "2")
        machine.messageHandled(id: "3")
        #expect(machine.resumeEventID == "1")
        _ = machine.connectionLost(lost, connectedFor: .seconds(1), using: &random)
        machine.reconnecting()
        machine.connected()
        machine.messageHandled(id: "2")
        #expect(machine.resumeEventID == "2")
    }

    // MARK: Retry-After

    @Test("a server's Retry-After longer than the backoff is the delay")
    func serverDelayLongerThanBackoff() {
        var machine = ReconnectStateMachine(policy: policy(.none))
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        #expect(machine.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(5), using: &random)
            == .reconnect(after: .seconds(5), attempt: 1))
    }

    @Test("a server's Retry-After shorter than the backoff does not shorten it")
    func serverDelayShorterThanBackoff() {
        var machine = ReconnectStateMachine(policy: policy(.none))
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        _ = delays(&machine, count: 2, random: &random)  // 1 s, 2 s: the third attempt's backoff is 4 s.
        #expect(machine.connectionLost(lost, connectedFor: nil, serverDelay: .milliseconds(500), using: &random)
            == .reconnect(after: .seconds(4), attempt: 3))
        machine.reconnecting()
        #expect(machine.connectionLost(lost, connectedFor: nil, serverDelay: .zero, using: &random)
            == .reconnect(after: .seconds(8), attempt: 4))
    }

    @Test("a server's Retry-After is cut to maximumRetryAfter (one hour by default; zero ignores it)")
    func serverDelayIsCapped() {
        #expect(BackoffPolicy().maximumRetryAfter == .seconds(3600))
        var random = FixedRandomNumberGenerator(0)
        var byDefault = ReconnectStateMachine(policy: policy(.none))
        _ = byDefault.start()
        #expect(byDefault.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(86_400 * 365), using: &random)
            == .reconnect(after: .seconds(3600), attempt: 1))

        var capped = policy(.none)
        capped.maximumRetryAfter = .seconds(60)
        var machine = ReconnectStateMachine(policy: capped)
        _ = machine.start()
        #expect(machine.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(61), using: &random)
            == .reconnect(after: .seconds(60), attempt: 1))

        capped.maximumRetryAfter = .zero
        var ignoring = ReconnectStateMachine(policy: capped)
        _ = ignoring.start()
        #expect(ignoring.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(30), using: &random)
            == .reconnect(after: .seconds(1), attempt: 1))
    }

    @Test("a refusal with Retry-After counts as an attempt; the backoff goes on growing from its own delays")
    func serverDelayCountsAsAttempt() {
        var machine = ReconnectStateMachine(policy: policy(.none, maximumAttempts: 2))
        var random = FixedRandomNumberGenerator(0)
        _ = machine.start()
        #expect(machine.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(7), using: &random)
            == .reconnect(after: .seconds(7), attempt: 1))
        machine.reconnecting()
        #expect(machine.attempt == 1)
        #expect(machine.connectionLost(lost, connectedFor: nil, serverDelay: nil, using: &random)
            == .reconnect(after: .seconds(2), attempt: 2))
        machine.reconnecting()
        guard case .fail(let reason, let exhausted)
            = machine.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(7), using: &random)
        else {
            Issue.record("expected to give up")
            return
        }
        #expect(exhausted && reason.contains("2 attempts"))

        var decorrelated = ReconnectStateMachine(policy: policy(.decorrelated))
        var top = FixedRandomNumberGenerator(.max)
        _ = decorrelated.start()
        #expect(decorrelated.connectionLost(lost, connectedFor: nil, serverDelay: .seconds(60), using: &top)
            == .reconnect(after: .seconds(60), attempt: 1))
        decorrelated.reconnecting()
        // From the backoff's own previous delay (2 s): at most 4 s, not 60 s × 2.
        guard case .reconnect(let next, 2) = decorrelated.connectionLost(lost, connectedFor: nil, using: &top) else {
            Issue.record("expected a reconnect")
            return
        }
        #expect(next <= .seconds(4) && next >= .seconds(4) * 0.99)
    }
}
