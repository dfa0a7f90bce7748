import PushRelayCore

/// Tokens and helpers shared by the suites.
enum Fixture {
    static let token = SeedScenarioTests.token

    /// A distinct well-formed token per index.
    static func token(_ index: Int) -> String {
        let digits = String(index)
        return "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "x", count: 40 - digits.count) + digits
    }

    /// Parses a JSON request body given as text.
    static func request(_ json: String) throws(FCMError) -> FCMSendRequest {
        try FCMSendRequest.parse(json: Array(json.utf8))
    }

    /// The request-level error a JSON body throws, or `nil`.
    static func requestError(_ json: String) -> FCMError? {
        do {
            _ = try request(json)
            return nil
        } catch {
            return error
        }
    }

    /// The request-level error a form body throws, or `nil`.
    static func formError(_ form: String) -> FCMError? {
        do {
            _ = try FCMSendRequest.parse(form: Array(form.utf8))
            return nil
        } catch {
            return error
        }
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
