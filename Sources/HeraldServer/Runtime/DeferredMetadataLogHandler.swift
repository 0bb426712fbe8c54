import Logging

/// swift-log's `StreamLogHandler`, with the handler's own metadata formatted when a message is written
/// rather than whenever it is set.
///
/// `StreamLogHandler` re-renders its whole metadata dictionary (sorted, joined) on every change.
/// Hummingbird gives each request's logger a fresh `hb.request.id`, so with the stock handler every
/// request paid for that rendering (docs/decisions/2026-11-22-cpu-per-poll-by-side.md) even
/// though almost no request logs anything at the configured level. Here the metadata is kept as is and
/// handed to the stream handler as the event's metadata only when something is actually logged; the
/// output is the same.
public struct DeferredMetadataLogHandler: LogHandler {
    /// Formats and writes; holds no metadata of its own.
    private var output: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    /// A handler writing to standard error at `level`.
    public static func standardError(label: String, level: Logger.Level) -> DeferredMetadataLogHandler {
        var output = StreamLogHandler.standardError(label: label)
        output.logLevel = level
        return DeferredMetadataLogHandler(output: output)
    }

    /// A handler writing to `stream` (tests read what it writes).
    init(label: String, level: Logger.Level, stream: any TextOutputStream & Sendable) {
        var output = StreamLogHandler(label: label, stream: stream)
        output.logLevel = level
        self.init(output: output)
    }

    private init(output: StreamLogHandler) {
        self.output = output
        self.output.metadataProvider = nil
    }

    public var logLevel: Logger.Level {
        get { output.logLevel }
        set { output.logLevel = newValue }
    }

    /// Kept here rather than in `output`, so that its values are merged in `StreamLogHandler`'s order:
    /// the logger's metadata, then the provider's, then the statement's.
    public var metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        let provided = metadataProvider?.get() ?? [:]
        if !metadata.isEmpty || !provided.isEmpty {
            event.metadata =
                metadata
                .merging(provided) { _, provided in provided }
                .merging(event.metadata ?? [:]) { _, explicit in explicit }
        }
        output.log(event: event)
    }
}
