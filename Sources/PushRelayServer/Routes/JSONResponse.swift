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

    /// `429 RESOURCE_EXHAUSTED` with `Retry-After: seconds`.
    static func tooManyRequests(_ message: String, retryAfter seconds: Int) -> HTTPServerResponse {
        var response = error(.tooManyRequests, "RESOURCE_EXHAUSTED", message)
        response.head.headerFields[.retryAfter] = String(seconds)
        return response
    }

    /// `401 UNAUTHENTICATED` with the challenge of the credential the route takes (RFC 9110 §11.6.1): `Bearer` for a
    /// device secret or stream ticket, `key` for the client key of `POST /v1/register` (`Authorization: key=…`).
    static func unauthorized(_ message: String, scheme: String = "Bearer") -> HTTPServerResponse {
        var response = error(.unauthorized, "UNAUTHENTICATED", message)
        response.head.headerFields[.wwwAuthenticate] = scheme
        return response
    }

    /// Reads the request's body (at most `maxBytes`) as a JSON object, or throws an `HTTPError` whose body is this
    /// API's JSON error: `400 INVALID_ARGUMENT` naming the problem, `413 PAYLOAD_TOO_LARGE` past the limit.
    static func parseObject(_ request: HTTPServerRequest, upTo maxBytes: Int) async throws -> JSONObject {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBytes)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw Self.thrown(.contentTooLarge, "PAYLOAD_TOO_LARGE", "the body is larger than \(maxBytes) bytes")
        }
        return try parseObject(buffer)
    }

    /// Parses a JSON object body, or throws an `HTTPError` whose body is the JSON error `400 INVALID_ARGUMENT`.
    static func parseObject(_ buffer: ByteBuffer) throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(buffer.readableBytesView))
        } catch {
            throw Self.thrown(.badRequest, "INVALID_ARGUMENT", error.message)
        }
        guard let object = value.objectValue else {
            throw Self.thrown(.badRequest, "INVALID_ARGUMENT", "body must be a JSON object")
        }
        return object
    }

    /// An error answer that a handler throws: the transport writes it as is (JSON, with its content type).
    static func thrown(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> HTTPError {
        let body: JSONValue = ["error": .string(code), "message": .string(message)]
        return HTTPError(status, body.serializedString(), headerFields: [.contentType: "application/json; charset=UTF-8"])
    }
}
