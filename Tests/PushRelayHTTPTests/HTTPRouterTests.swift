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
        guard case .matched(_, let limit, let params) = router.route(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/healthz?x=1")) else {
            Issue.record("no match"); return
        }
        #expect(limit == HTTPRouter.defaultMaxBodyBytes)
        #expect(params.isEmpty)
    }

    @Test func capturesArePercentDecoded() {
        let head = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/iid/v1/abc%3Adef/rel/topics/news")
        guard case .matched(_, let limit, let params) = router.route(for: head) else { Issue.record("no match"); return }
        #expect(limit == 10)
        #expect(params == ["token": "abc:def", "topic": "news"])
    }

    @Test func wrongMethodAndUnknownPath() {
        guard case .methodNotAllowed = router.route(for: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/healthz")) else {
            Issue.record("expected 405"); return
        }
        guard case .notFound = router.route(for: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/nope")) else {
            Issue.record("expected 404"); return
        }
    }
}
