import Foundation
import Logging
import NIOConcurrencyHelpers
@testable import PushRelayServer
import Testing

@Suite("Log lines: text for journald, JSON, run-time level")
struct RelayLogHandlerTests {
    /// A logger whose lines are collected.
    private func make(
        format: PushRelayConfiguration.LogFormat,
        journal: Bool,
        control: LogLevelControl = LogLevelControl(.info)
    ) -> (Logger, NIOLockedValueBox<[String]>) {
        let lines = NIOLockedValueBox<[String]>([])
        let logger = Logger(label: "relay") { label in
            RelayLogHandler(label: label, format: format, control: control, journal: journal) { line in
                lines.withLockedValue { $0.append(line) }
            }
        }
        return (logger, lines)
    }

    @Test("under journald: <priority>, no timestamp, sorted metadata, quoted when needed")
    func journalText() {
        var (logger, lines) = make(format: .text, journal: true)
        logger[metadataKey: "relay.node"] = "a"
        logger.warning("store slow", metadata: ["relay.commit.ms": "120", "note": "two words"])
        logger.error("failed")
        #expect(lines.withLockedValue { $0 } == [
            "<4>warning relay: store slow note=\"two words\" relay.commit.ms=120 relay.node=a\n",
            "<3>error relay: failed relay.node=a\n",
        ])
    }

    @Test("on a terminal: an ISO 8601 UTC timestamp first")
    func terminalText() throws {
        let (logger, lines) = make(format: .text, journal: false)
        logger.info("listening")
        let line = try #require(lines.withLockedValue { $0.first })
        let regex = try Regex(#"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z info relay: listening\n$"#)
        #expect(line.wholeMatch(of: regex) != nil, "\(line)")
    }

    @Test("JSON: one valid object per line with escaped strings and metadata")
    func json() throws {
        let (logger, lines) = make(format: .json, journal: true)
        logger.info("say \"hi\"\n", metadata: ["relay.device": "d1", "list": ["a", "b"]])
        let line = try #require(lines.withLockedValue { $0.first })
        #expect(line.hasSuffix("}\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["label"] as? String == "relay")
        #expect(object["message"] as? String == "say \"hi\"\n")
        #expect(object["relay.device"] as? String == "d1")
        #expect(object["list"] as? [String] == ["a", "b"])
        #expect(object["time"] is String)
    }

    @Test("the shared level applies to existing loggers at once (SIGHUP reload)")
    func runtimeLevel() {
        let control = LogLevelControl(.info)
        let (logger, lines) = make(format: .text, journal: true, control: control)
        logger.debug("hidden")
        control.level = .debug
        logger.debug("shown")
        control.level = .error
        logger.warning("hidden too")
        #expect(lines.withLockedValue { $0 } == ["<7>debug relay: shown\n"])
        #expect(PushRelayConfiguration.LogLevel.allCases.map(\.loggerLevel.rawValue) == PushRelayConfiguration.LogLevel.allCases.map(\.rawValue))
    }
}
