import Logging
import Synchronization
import Testing

@testable import HeraldServer

@Suite("DeferredMetadataLogHandler")
struct DeferredMetadataLogHandlerTests {
    /// Collects what the handler writes.
    final class Lines: TextOutputStream, Sendable {
        private let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
        var written: String { text.withLock { $0 } }
    }

    /// Written like `StreamLogHandler`'s lines: the logger's metadata and the statement's, sorted by
    /// key, the statement's winning on a clash; nothing below the level.
    @Test func writesTheLoggersMetadataWithTheStatementsOwn() {
        let lines = Lines()
        var logger = Logger(label: "test") { DeferredMetadataLogHandler(label: $0, level: .info, stream: lines) }
        logger[metadataKey: "request"] = "r1"
        logger[metadataKey: "shared"] = "from-logger"
        logger.debug("hidden", metadata: ["x": "1"])
        logger.info("shown", metadata: ["shared": "from-statement", "a": "2"])
        logger[metadataKey: "request"] = nil
        logger.warning("bare")
        let written = lines.written.split(separator: "\n").map { String($0) }
        #expect(written.count == 2)
        #expect(written.first?.hasSuffix(" info test: a=2 request=r1 shared=from-statement [HeraldServerTests] shown") == true)
        #expect(written.last?.hasSuffix(" warning test: shared=from-logger [HeraldServerTests] bare") == true)
        #expect(logger[metadataKey: "shared"] == "from-logger")
        #expect(logger.logLevel == .info)
    }

    /// A metadata provider's values come between the logger's and the statement's.
    @Test func providedMetadataSitsBetweenTheLoggersAndTheStatements() {
        let lines = Lines()
        let provider = Logger.MetadataProvider { ["shared": "from-provider", "p": "3"] }
        var logger = Logger(label: "test") {
            var handler = DeferredMetadataLogHandler(label: $0, level: .info, stream: lines)
            handler.metadataProvider = provider
            return handler
        }
        logger[metadataKey: "shared"] = "from-logger"
        logger[metadataKey: "own"] = "4"
        logger.info("one")
        logger.info("two", metadata: ["shared": "from-statement"])
        let written = lines.written.split(separator: "\n").map { String($0) }
        #expect(written.first?.hasSuffix(" info test: own=4 p=3 shared=from-provider [HeraldServerTests] one") == true)
        #expect(written.last?.hasSuffix(" info test: own=4 p=3 shared=from-statement [HeraldServerTests] two") == true)
    }
}
