import PushRelayWire

/// The `200` answer to a send to a device group (`to: <notification_key>`): FCM's group form, without
/// `multicast_id` (firebase-admin-node tells the two forms apart by that field),
///
///     {"success":2,"failure":0}
///     {"success":1,"failure":2,"failed_registration_ids":["<token>","<token>"]}
///
/// with `failed_registration_ids` only when something failed, in member order. The outcome of each member is kept
/// (``members``) for the relay's metrics and for FCM HTTP v1, which answers one message name.
public struct FCMDeviceGroupResponse: Sendable, Hashable {
    /// One member's outcome.
    public struct Member: Sendable, Hashable {
        /// The member's registration token.
        public var token: String
        /// Its result, as it would be in a token send's `results`.
        public var result: FCMSendResponse.Result

        /// A member outcome.
        public init(token: String, result: FCMSendResponse.Result) {
            self.token = token
            self.result = result
        }

        /// Whether the member got the message (or would have, in a dry run).
        public var succeeded: Bool {
            if case .error = result { return false }
            return true
        }
    }

    /// Every member's outcome, in member order.
    public var members: [Member]

    /// A response.
    public init(members: [Member]) {
        self.members = members
    }

    /// `success`: members that got the message.
    public var success: Int { members.count - failure }

    /// `failure`: members that did not.
    public var failure: Int { members.reduce(0) { $0 + ($1.succeeded ? 0 : 1) } }

    /// `failed_registration_ids`: the tokens of the members that did not get the message, in member order.
    public var failedRegistrationIDs: [String] { members.filter { !$0.succeeded }.map(\.token) }

    /// The JSON body, one line.
    public func jsonBody() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(40 + failure * 160)
        JSONWriter.appendRaw("{\"success\":", to: &buffer)
        JSONWriter.appendDecimal(Int64(success), to: &buffer)
        JSONWriter.appendRaw(",\"failure\":", to: &buffer)
        JSONWriter.appendDecimal(Int64(failure), to: &buffer)
        let failed = failedRegistrationIDs
        if !failed.isEmpty {
            JSONWriter.appendRaw(",\"failed_registration_ids\":[", to: &buffer)
            for (index, token) in failed.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(token, to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        }
        buffer.append(UInt8(ascii: "}"))
        return buffer
    }
}
