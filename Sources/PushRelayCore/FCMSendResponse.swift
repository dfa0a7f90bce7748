import PushRelayWire

/// The `200` answer to a token send (`to: <token>` or `registration_ids`): FCM's multicast form.
///
///     {"multicast_id":3529387488852107593,"success":1,"failure":0,"canonical_ids":0,
///      "results":[{"message_id":"1603214613006763"}]}
///
/// `results` follow the request's token order. The plain-text form (``plainTextBody``) answers the first result:
/// `id=<message id>` or `Error=<code>`.
public struct FCMSendResponse: Sendable, Hashable {
    /// The outcome for one token.
    public enum Result: Sendable, Hashable {
        /// Accepted; `canonicalRegistrationID` is set when the sender should use another token from now on.
        case messageID(MessageID, canonicalRegistrationID: String?)
        /// Accepted in a `dry_run` (FCM answers `"message_id":"fake_message_id"`).
        case dryRun
        /// Refused for this token.
        case error(FCMError)

        /// Accepted with no canonical token.
        public static func messageID(_ id: MessageID) -> Result { .messageID(id, canonicalRegistrationID: nil) }
    }

    /// `multicast_id`.
    public var multicastID: MulticastID
    /// `results`, in request order.
    public var results: [Result]

    /// A response.
    public init(multicastID: MulticastID, results: [Result]) {
        self.multicastID = multicastID
        self.results = results
    }

    /// `success`: results that carry a message id.
    public var success: Int { results.count - failure }

    /// `failure`: results that carry an error.
    public var failure: Int {
        results.reduce(0) { count, result in
            if case .error = result { return count + 1 }
            return count
        }
    }

    /// `canonical_ids`: results that carry a `registration_id`.
    public var canonicalIDs: Int {
        results.reduce(0) { count, result in
            if case .messageID(_, let canonical?) = result, !canonical.isEmpty { return count + 1 }
            return count
        }
    }

    /// The JSON body, one line.
    public func jsonBody() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(96 + results.count * 32)
        JSONWriter.appendRaw("{\"multicast_id\":", to: &buffer)
        JSONWriter.appendDecimal(multicastID.value, to: &buffer)
        JSONWriter.appendRaw(",\"success\":", to: &buffer)
        JSONWriter.appendDecimal(Int64(success), to: &buffer)
        JSONWriter.appendRaw(",\"failure\":", to: &buffer)
        JSONWriter.appendDecimal(Int64(failure), to: &buffer)
        JSONWriter.appendRaw(",\"canonical_ids\":", to: &buffer)
        JSONWriter.appendDecimal(Int64(canonicalIDs), to: &buffer)
        JSONWriter.appendRaw(",\"results\":[", to: &buffer)
        for (i, result) in results.enumerated() {
            if i > 0 { buffer.append(UInt8(ascii: ",")) }
            switch result {
            case .messageID(let id, let canonical):
                JSONWriter.appendRaw("{\"message_id\":\"", to: &buffer)
                id.write(into: &buffer)
                buffer.append(UInt8(ascii: "\""))
                if let canonical, !canonical.isEmpty {
                    JSONWriter.appendRaw(",\"registration_id\":", to: &buffer)
                    JSONWriter.appendString(canonical, to: &buffer)
                }
                buffer.append(UInt8(ascii: "}"))
            case .dryRun:
                JSONWriter.appendRaw("{\"message_id\":\"fake_message_id\"}", to: &buffer)
            case .error(let error):
                JSONWriter.appendRaw("{\"error\":", to: &buffer)
                JSONWriter.appendString(error.resultString, to: &buffer)
                buffer.append(UInt8(ascii: "}"))
            }
        }
        JSONWriter.appendRaw("]}", to: &buffer)
        return buffer
    }

    /// The plain-text body for form requests (one token): `id=<id>` (plus a line `registration_id=<token>` for a
    /// canonical id) or `Error=<code>`.
    public func plainTextBody() -> String {
        guard let first = results.first else { return "Error=MissingRegistration" }
        switch first {
        case .messageID(let id, let canonical?) where !canonical.isEmpty: return "id=\(id)\nregistration_id=\(canonical)"
        case .messageID(let id, _): return "id=\(id)"
        case .dryRun: return "id=fake_message_id"
        case .error(let error): return "Error=\(error.resultString)"
        }
    }
}

/// The `200` answer to a topic or condition send: `{"message_id":<number>}` or `{"error":"<code>"}`;
/// in plain text `id=<number>` or `Error=<code>`.
public enum FCMTopicResponse: Sendable, Hashable {
    /// Accepted; the id is a JSON number here, unlike in token results.
    case messageID(MessageID)
    /// Accepted in a `dry_run`: FCM has no documented form; PushRelay answers `{"message_id":-1}`.
    case dryRun
    /// Refused.
    case error(FCMError)

    /// The JSON body, one line.
    public func jsonBody() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(40)
        switch self {
        case .messageID(let id):
            JSONWriter.appendRaw("{\"message_id\":", to: &buffer)
            id.write(into: &buffer)
            buffer.append(UInt8(ascii: "}"))
        case .dryRun:
            JSONWriter.appendRaw("{\"message_id\":-1}", to: &buffer)
        case .error(let error):
            JSONWriter.appendRaw("{\"error\":", to: &buffer)
            JSONWriter.appendString(error.resultString, to: &buffer)
            buffer.append(UInt8(ascii: "}"))
        }
        return buffer
    }

    /// The plain-text body.
    public func plainTextBody() -> String {
        switch self {
        case .messageID(let id): "id=\(id)"
        case .dryRun: "id=-1"
        case .error(let error): "Error=\(error.resultString)"
        }
    }
}
