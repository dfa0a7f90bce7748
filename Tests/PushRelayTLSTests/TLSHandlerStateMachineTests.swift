import Testing

@testable import PushRelayTLS

/// Every transition of the TLS handler's lifecycle, without sockets or OpenSSL.
@Suite("TLS handler state machine")
struct TLSHandlerStateMachineTests {
    typealias Machine = TLSHandler.StateMachine

    private func handshaking() -> Machine {
        var machine = Machine()
        _ = machine.channelActive()
        return machine
    }

    private func active() -> Machine {
        var machine = handshaking()
        _ = machine.handshakeCompleted()
        return machine
    }

    @Test("the handshake starts once, when the channel becomes active")
    func start() {
        var machine = Machine()
        #expect(machine.channelRead() == .ignore)
        let channelActive1 = machine.channelActive()
        #expect(channelActive1)
        let channelActive2 = machine.channelActive()
        #expect(!channelActive2)
        #expect(machine.channelRead() == .feedAndHandshake)
        let handshakeCompleted3 = machine.handshakeCompleted()
        #expect(!handshakeCompleted3 && machine.isActive)
        #expect(machine.channelRead() == .feedAndRead)
    }

    @Test("a flush before or during the handshake is deferred, then honoured once")
    func deferredFlush() {
        var early = Machine()
        #expect(early.write() == .buffer)
        let flush4 = early.flush()
        #expect(flush4 == .deferred)
        _ = early.channelActive()
        let handshakeCompleted5 = early.handshakeCompleted()
        #expect(handshakeCompleted5)

        var during = handshaking()
        let flush6 = during.flush()
        #expect(flush6 == .deferred)
        let handshakeCompleted7 = during.handshakeCompleted()
        #expect(handshakeCompleted7)
        let flush8 = during.flush()
        #expect(flush8 == .encryptAndFlush)

        var none = handshaking()
        let handshakeCompleted9 = none.handshakeCompleted()
        #expect(!handshakeCompleted9)
    }

    @Test("a handshake failure is reported once; the timeout after a failure does nothing")
    func handshakeFailure() {
        var machine = handshaking()
        let handshakeFailed10 = machine.handshakeFailed()
        #expect(handshakeFailed10)
        let handshakeFailed11 = machine.handshakeFailed()
        #expect(!handshakeFailed11)
        #expect(machine.write() == .fail)
        #expect(machine.channelRead() == .ignore)
        let channelInactive12 = machine.channelInactive()
        #expect(!channelInactive12)

        var finished = active()
        let handshakeFailed13 = finished.handshakeFailed()
        #expect(!handshakeFailed13)
        #expect(finished.isActive)
    }

    @Test("close: graceful when active, immediate while handshaking, joined while closing, refused when closed")
    func close() {
        var running = active()
        let close14 = running.close()
        #expect(close14 == .closeGracefully)
        let close15 = running.close()
        #expect(close15 == .joinClose)
        #expect(running.write() == .fail)
        let flush16 = running.flush()
        #expect(flush16 == .flush)
        let channelInactive17 = running.channelInactive()
        #expect(!channelInactive17)
        let close18 = running.close()
        #expect(close18 == .alreadyClosed)

        var starting = handshaking()
        let close19 = starting.close()
        #expect(close19 == .closeNow)
        let channelInactive20 = starting.channelInactive()
        #expect(!channelInactive20)
    }

    @Test("the peer's close_notify and record errors end an active connection once")
    func peerEndings() {
        var notified = active()
        let closeNotifyReceived21 = notified.closeNotifyReceived()
        #expect(closeNotifyReceived21)
        let closeNotifyReceived22 = notified.closeNotifyReceived()
        #expect(!closeNotifyReceived22)
        let recordFailed23 = notified.recordFailed()
        #expect(!recordFailed23)

        var broken = active()
        let recordFailed24 = broken.recordFailed()
        #expect(recordFailed24)
        let closeNotifyReceived25 = broken.closeNotifyReceived()
        #expect(!closeNotifyReceived25)
    }

    @Test("the channel closing mid-handshake is a cut-short handshake; after it, it is not")
    func inactive() {
        var starting = handshaking()
        let channelInactive26 = starting.channelInactive()
        #expect(channelInactive26)
        var never = Machine()
        let channelInactive27 = never.channelInactive()
        #expect(channelInactive27)
        var running = active()
        let channelInactive28 = running.channelInactive()
        #expect(!channelInactive28)
        #expect(running.channelRead() == .ignore)
    }
}
