import HTTPTypes
import NIOCore
import Testing

@testable import PushRelayHTTP

@Suite struct HTTPRouterTests {
    let router: HTTPRouter = {
        let router = HTTPRouter()
        router.add(.get, "/healthz", .immediate { _, _ in HTTPServerResponse(status: .ok) })
        router.add(.post, "/iid/v1/{token}/rel/topics/{topic}", maxBodyBytes: 10, .immediate { _, _ in HTTPServerResponse(status: .ok) })
        return router
    }()

    @Test func exactPathMatches() {
        guard case .matched(_, let limit, let params, _) = router.route(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/healthz?x=1")) else {
            Issue.record("no match"); return
        }
        #expect(limit == HTTPRouter.defaultMaxBodyBytes)
        #expect(params.isEmpty)
    }

    @Test func capturesArePercentDecoded() {
        let head = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/iid/v1/abc%3Adef/rel/topics/news")
        guard case .matched(_, let limit, let params, _) = router.route(for: head) else { Issue.record("no match"); return }
        #expect(limit == 10)
        #expect(params == ["token": "abc:def", "topic": "news"])
    }

    @Test("a path with escaped unreserved characters reaches the route of its normal form; %2F stays no separator")
    func escapedUnreservedCharactersMatch() {
        for path in ["/%68ealthz", "/health%7A?x=1", "/%68%65%61%6c%74%68%7a"] {
            guard case .matched = router.route(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: path))
            else { Issue.record("\(path) did not match"); continue }
        }
        let head = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/%69id/v1/ab%3a/rel/%74opics/n%65ws")
        guard case .matched(_, _, let params, _) = router.route(for: head) else { Issue.record("no match"); return }
        #expect(params == ["token": "ab:", "topic": "news"])
        guard case .notFound = router.route(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "%2Fhealthz"))
        else { Issue.record("expected 404"); return }
        guard case .methodNotAllowed = router.route(for: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/%68ealthz"))
        else { Issue.record("expected 405"); return }
    }

    @Test func wrongMethodAndUnknownPath() {
        guard case .methodNotAllowed = router.route(for: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/healthz")) else {
            Issue.record("expected 405"); return
        }
        guard case .notFound = router.route(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/nope")) else {
            Issue.record("expected 404"); return
        }
    }

    @Test("a 405 comes in the format of the path's routes, with Allow naming their methods (HEAD with GET)")
    func methodNotAllowedInTheRoutesFormat() {
        let router = HTTPRouter()
        let json = HTTPRouter.errors { error in
            HTTPServerResponse(status: error.status, headerFields: [.contentType: "application/json"], body: .bytes(ByteBuffer(string: "{}")))
        }
        router.add(.post, "/v1/register", errors: json, .immediate { _, _ in HTTPServerResponse(status: .ok) })
        router.add(.delete, "/v1/register", errors: json, .immediate { _, _ in HTTPServerResponse(status: .ok) })
        router.add(.get, "/plain", .immediate { _, _ in HTTPServerResponse(status: .ok) })
        let wrong = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/register")
        let match = router.route(for: wrong)
        let response = HTTPResponder.response(forUnmatched: match, to: wrong, by: router)
        #expect(response?.head.status == .methodNotAllowed)
        #expect(response?.head.headerFields[.contentType] == "application/json")
        #expect(response?.head.headerFields[.allow] == "DELETE, POST")
        let plain = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/plain")
        let plainResponse = HTTPResponder.response(forUnmatched: router.route(for: plain), to: plain, by: router)
        #expect(plainResponse?.head.headerFields[.allow] == "GET, HEAD")
        #expect(plainResponse?.head.headerFields[.contentType] == "text/plain; charset=utf-8")
    }

    @Test func staticPathFastPathAgreesWithTheTrie() {
        let router = HTTPRouter()
        router.add(.get, "/v1/stream", maxBodyBytes: 1, .immediate { _, _ in HTTPServerResponse(status: .ok) })
        router.add(.post, "/v1/{name}", maxBodyBytes: 2, .immediate { _, _ in HTTPServerResponse(status: .ok) })
        for path in ["/v1/stream", "/v1/stream/", "//v1//stream?x=1"] {
            guard case .matched(_, let limit, _, _) = router.route(for: HTTPRequest(method: .head, scheme: nil, authority: nil, path: path)) else {
                Issue.record("no match for HEAD \(path)"); continue
            }
            #expect(limit == 1, "\(path)")
        }
        // POST /v1/stream: the static node has no POST, and like the trie the fast path answers 405.
        guard case .methodNotAllowed = router.route(for: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/stream")) else {
            Issue.record("expected 405"); return
        }
        guard case .matched(_, 2, let params, _) = router.route(for: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/other")) else {
            Issue.record("expected capture"); return
        }
        #expect(params == ["name": "other"])
    }
}
