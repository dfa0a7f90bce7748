import Testing

@testable import PushRelayWire

/// ``PathSegments`` cuts where `Collection.split(separator: "/")` cuts, over the bytes.
@Suite struct PathSegmentsTests {
    @Test("the segments of listed paths, empty ones kept or omitted")
    func listed() {
        let path: Substring = "/v1/projects//shop/messages:send/"
        #expect(PathSegments.split(path, omittingEmpty: true) == ["v1", "projects", "shop", "messages:send"])
        #expect(PathSegments.split(path, omittingEmpty: false) == ["", "v1", "projects", "", "shop", "messages:send", ""])
        #expect(PathSegments.split("", omittingEmpty: true) == [])
        #expect(PathSegments.split("", omittingEmpty: false) == [""])
        #expect(PathSegments.split("shop", omittingEmpty: false) == ["shop"])
        #expect(PathSegments.split("/", omittingEmpty: true) == [])
        // Multi-byte characters stay whole within a segment.
        #expect(PathSegments.split("/café/日本/x", omittingEmpty: true) == ["café", "日本", "x"])
    }

    @Test("the same segments as a Character split, on generated paths")
    func generated() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["/", "/", "a", "b", "%", "2", "F", ":", "é", "日", "."]
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            let path = text[...]
            for omitting in [true, false] {
                #expect(
                    PathSegments.split(path, omittingEmpty: omitting)
                        == path.split(separator: "/", omittingEmptySubsequences: omitting), "\(text)")
            }
        }
    }
}
