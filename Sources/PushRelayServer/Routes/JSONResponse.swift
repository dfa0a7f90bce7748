import HTTPTypes
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayWire

/// JSON answers of the device and Instance ID APIs. Errors are `{"error": "<CODE>", "message": "<why>"}`.
enum JSONResponse {
    static func ok(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=UTF-8"
        return HTTPServerResponse(status: status, headerFields: fields, body: .bytes(ByteBuffer(bytes: value.serialized())))
    }

    static func error(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> HTTPServerResponse {
        ok(["error": .string(code), "message": .string(message)], status: status)
    }

    static func unauthorized(_ message: String) -> HTTPServerResponse {
        var response = error(.unauthorized, "UNAUTHENTICATED", message)
        response.head.headerFields[.wwwAuthenticate] = "Bearer"
        return response
    }

    /// Parses a JSON object body, or throws an `HTTPError` 400 naming the problem.
    static func parseObject(_ buffer: ByteBuffer) throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(buffer.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, "INVALID_ARGUMENT: \(error.message)")
        }
        guard let object = value.objectValue else { throw HTTPError(.badRequest, "INVALID_ARGUMENT: body must be a JSON object") }
        return object
    }
}
