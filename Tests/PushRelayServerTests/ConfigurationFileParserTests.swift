@testable import PushRelayServer
import Testing

@Suite("Config file parser (TOML subset)")
struct ConfigurationFileParserTests {
    @Test("strings, integers, booleans, arrays over lines, comments")
    func acceptedSyntax() throws {
        let entries = try ConfigurationFileParser.parse("""
            # a comment
            a = "x \\"q\\" \\u00e9 # not a comment"   # trailing comment
            b = 'C:\\raw'
            c = 1_000
            d = -3
            e = true
            f = [
              "one",  # first
              'two',
            ]
            g = []\r
            """)
        #expect(entries == [
            .init(key: "a", value: .string("x \"q\" é # not a comment"), line: 2),
            .init(key: "b", value: .string("C:\\raw"), line: 3),
            .init(key: "c", value: .integer(1000), line: 4),
            .init(key: "d", value: .integer(-3), line: 5),
            .init(key: "e", value: .boolean(true), line: 6),
            .init(key: "f", value: .array([.string("one"), .string("two")]), line: 7),
            .init(key: "g", value: .array([]), line: 11),
        ])
    }

    @Test(
        "rejected syntax names the line",
        arguments: [
            ("[server]\nlisten = 1", 1, "tables"),
            ("a = \"open", 1, "unterminated"),
            ("\na = 1\na = 2", 3, "already set on line 2"),
            ("a = 1.5", 1, "cannot read the value"),
            ("a = bare", 1, "cannot read the value"),
            ("a = {x = 1}", 1, "inline tables"),
            ("a = [[1]]", 1, "nested arrays"),
            ("a 1", 1, "expected '='"),
            ("= 1", 1, "expected 'key = value'"),
            ("a = 1 2", 1, "unexpected text"),
            ("a = \"\\q\"", 1, "invalid escape"),
            ("a = [1 2]", 1, "expected ',' or ']'"),
        ]
    )
    func rejectedSyntax(text: String, line: Int, message: String) {
        let error = #expect(throws: ConfigurationFileParser.SyntaxError.self) {
            try ConfigurationFileParser.parse(text)
        }
        #expect(error?.line == line)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("a syntax error reaches the loader as a problem with file and line")
    func syntaxErrorThroughLoader() async {
        let path = ConfigurationTestFixtures.configFile("listen = [\"a:1\"]\n[tls]\n")
        let error = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--config", path], environment: [:])
        }
        #expect(error?.problems.first?.code == .syntax)
        #expect(error?.problems.first?.source == .file(path: path, line: 2))
    }
}
