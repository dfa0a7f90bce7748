import Testing
@testable import PushRelayStore

@Suite("FunctionSlot")
struct FunctionSlotTests {
    @Test("set replaces the function, nil removes it")
    func replaceAndRemove() {
        let slot = FunctionSlot<Int, Int>()
        #expect(slot.current == nil)
        slot.set { $0 + 1 }
        #expect(slot.current?(1) == 2)
        slot.set { $0 * 10 }
        #expect(slot.current?(2) == 20)
        slot.set(nil)
        #expect(slot.current == nil)
    }
}
