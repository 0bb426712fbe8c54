import CLibPQ
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection. Every method blocks; callers run them on the client's dedicated threads.
///
/// Not thread-safe except for `cancel()`: the pool hands a connection to one lease at a time, and each
/// lease issues one call at a time, which is what makes the `@unchecked Sendable` hold.
final class LibPQConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    /// `PQcancel` may be called from any thread, but `PQgetCancel` must not race `PQreset`; the lock
    /// orders the two.
    private let cancelHandle = Mutex<CancelHandle?>(nil)

    /// libpq's `PGcancel`: a self-contained copy of what is needed to reach the server, made for use
    /// from another thread.
    private struct CancelHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// Set by `cancel()`. A cancel request that reaches the server between two round trips of one call
    /// (after `Parse`, before `Execute`) finds nothing to cancel; this flag makes the call stop anyway.
    private let cancelRequested = Atomic<Bool>(false)

    /// Set when the connection comes out of the idle list: its socket may have been closed by a
    /// restarted server while it sat there, so the next call checks before sending.
    var needsValidation = false

    private init(handle: OpaquePointer) {
        self.handle = handle
        refreshCancelHandle()
        // libpq prints server notices (e.g. "table … does not exist, skipping") to stderr by default;
        // they belong in the log instead, at debug level.
        PQsetNoticeProcessor(
            handle,
            { _, message in
                guard let message else { return }
                Logger(label: "herald.postgres").debug(
                    "server notice",
                    metadata: ["notice": "\(String(cString: message).trimmingTrailingNewlines())"]
                )
            },
            nil
        )
    }

    deinit { close() }

    /// Opens a connection. `conninfo` is a URI or `key=value` string; empty means libpq's defaults and
    /// the standard `PG*` environment variables.
    static func connect(conninfo: String, applicationName: String) throws(PostgresError) -> LibPQConnection {
        // Order matters: options expanded from `dbname` override the ones before it, so the connection
        // string can still choose its own timeout; client_encoding after it is always UTF-8.
        let keywords = ["connect_timeout", "fallback_application_name", "dbname", "client_encoding"]
        let values = ["10", applicationName, conninfo, "UTF8"]
        let raw = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let raw else {
            throw PostgresError(code: .connectionLost, serverMessage: "libpq could not allocate a connection")
        }
        guard PQstatus(raw) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(raw)).trimmingTrailingNewlines()
            PQfinish(raw)
            throw PostgresError(code: .connectionLost, serverMessage: message)
        }
        return LibPQConnection(handle: raw)
    }

    var isOpen: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The server process id serving this connection.
    var backendPID: Int32 {
        handle.map { PQbackendPID($0) } ?? 0
    }

    /// Reports whether an idle connection is still usable, without blocking.
    ///
    /// A healthy idle connection has nothing to read: the server only speaks unprompted when it is
    /// ending the session (shutdown, restart, `pg_terminate_backend`), and then the socket holds the
    /// FATAL message and end-of-file. Readable input therefore means "reconnect".
    func checkAlive() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 0)
        return ready == 0
    }

    /// Re-establishes the connection with the same parameters.
    func reset() throws(PostgresError) {
        guard let handle else {
            throw PostgresError(code: .clientClosed, serverMessage: "connection is closed")
        }
        PQreset(handle)
        preparedStatements.removeAll()  // a new session has none of the old one's statements
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
        }
        refreshCancelHandle()
    }

    /// Makes sure an idle connection is still alive before it is used; reconnects if it is not.
    func validateIfNeeded() throws(PostgresError) {
        guard needsValidation else { return }
        needsValidation = false
        if !checkAlive() { try reset() }
    }

    /// Runs one statement with binary parameters and binary results.
    ///
    /// Statements are prepared once per session and executed by name afterwards (what `pgbench -M
    /// prepared` does), so the server parses and plans each distinct statement once, not on every call.
    func execute(_ query: PostgresQuery) throws(PostgresError) -> PostgresResult {
        do {
            return try executeOnce(query)
        } catch  where error.sqlState == "0A000" && isIdleOutsideTransaction {
            // "cached plan must not change result type": the table changed shape under a prepared
            // statement (now forgotten). Outside a transaction block the failed call had no effect,
            // so running it again, freshly prepared, is safe.
            return try executeOnce(query)
        }
    }

    /// Fails when the caller's task was cancelled before the statement went out.
    func checkNotCanceled() throws(PostgresError) {
        if cancelRequested.load(ordering: .acquiring) {
            throw PostgresError(code: .queryCanceled, sqlState: "57014", serverMessage: "canceled before execution")
        }
    }

    private var isIdleOutsideTransaction: Bool {
        handle.map { PQtransactionStatus($0) == PQTRANS_IDLE } ?? false
    }

    private func executeOnce(_ query: PostgresQuery) throws(PostgresError) -> PostgresResult {
        let handle = try openHandle()
        let bindings = query.bindings
        let types = bindings.types.map { $0.oid }
        let key = StatementKey(sql: query.sql, types: types)
        let name = try preparedName(for: key, handle: handle)
        try checkNotCanceled()
        let raw = withParameters(bindings) { count, values, lengths, formats in
            if let name {
                return PQexecPrepared(handle, name, count, values, lengths, formats, 1)
            }
            return PQexecParams(handle, query.sql, count, types, values, lengths, formats, 1)
        }
        do {
            return try checkResult(raw)
        } catch {
            // The plan is stale (see `execute`): forget it so the next call prepares afresh.
            if error.sqlState == "0A000" { preparedStatements[key] = nil }
            throw error
        }
    }

    /// Calls `body` with libpq's view of `bindings`: the count, value pointers (NULL for SQL NULL),
    /// lengths and formats (all binary), valid for the duration of the call.
    func withParameters<R>(
        _ bindings: PostgresBindings,
        _ body: (Int32, [UnsafePointer<CChar>?], [Int32], [Int32]) -> R
    ) -> R {
        let formats = [Int32](repeating: 1, count: bindings.count)
        return bindings.bytes.withUnsafeBufferPointer { bytes in
            // Zero-length values still need a non-NULL pointer, or libpq would read them as NULL.
            var empty: UInt8 = 0
            return withUnsafePointer(to: &empty) { emptyPointer in
                let base = bytes.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(emptyPointer)
                let values: [UnsafePointer<CChar>?] = (0..<bindings.count).map { index in
                    guard bindings.lengths[index] >= 0 else { return nil }
                    return (base + bindings.offsets[index]).assumingMemoryBound(to: CChar.self)
                }
                return body(Int32(bindings.count), values, bindings.lengths, formats)
            }
        }
    }

    /// The session's prepared statements, by SQL text and parameter types.
    struct StatementKey: Hashable {
        var sql: String
        var types: [UInt32]

        init(sql: String, types: [UInt32]) {
            self.sql = sql
            self.types = types
        }

        init(_ query: PostgresQuery) {
            self.init(sql: query.sql, types: query.bindings.types.map { $0.oid })
        }
    }

    var preparedStatements: [StatementKey: String] = [:]
    private var nextStatementNumber = 0
    /// Beyond this many distinct statements per session, new ones run unprepared: the cache must not
    /// grow without bound if some caller builds SQL text dynamically.
    static let preparedStatementLimit = 512

    /// False: every statement runs unnamed (`PQexecParams`), for a pooler that passes each transaction
    /// to any server connection and does not carry named statements across (PgBouncer before 1.21, or
    /// without `max_prepared_statements`).
    var prepares = true

    func preparedName(for key: StatementKey, handle: OpaquePointer) throws(PostgresError) -> String? {
        guard let (name, isNew) = statementName(for: key) else { return nil }
        if isNew {
            do {
                _ = try checkResult(PQprepare(handle, name, key.sql, Int32(key.types.count), key.types))
            } catch {
                preparedStatements[key] = nil
                throw error
            }
        }
        return name
    }

    /// The name to run `key` by, recorded as prepared, and whether it is new to the session (the
    /// caller then prepares it before anything else uses it); `nil` runs it unnamed.
    func statementName(for key: StatementKey) -> (name: String, isNew: Bool)? {
        guard prepares else { return nil }
        if let name = preparedStatements[key] { return (name, false) }
        guard preparedStatements.count < Self.preparedStatementLimit else { return nil }
        nextStatementNumber += 1
        let name = "herald_\(nextStatementNumber)"
        preparedStatements[key] = name
        return (name, true)
    }

    /// Runs SQL text that may hold several statements (the simple query protocol), without parameters.
    /// For trusted text such as migration files only.
    func executeScript(_ sql: String) throws(PostgresError) {
        let handle = try openHandle()
        _ = try checkResult(PQexec(handle, sql))
    }

    /// Runs `COPY … FROM STDIN` (trusted SQL text) and streams `data`, already in the statement's
    /// format, as its input. Returns the number of rows copied.
    func copyIn(_ sql: String, data: [UInt8]) throws(PostgresError) -> Int {
        let handle = try openHandle()
        guard let start = PQexec(handle, sql) else {
            throw PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
        }
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            _ = try checkResult(start)  // throws the server's error, if any
            throw PostgresError(code: .syntaxError, serverMessage: "not a COPY … FROM STDIN statement")
        }
        PQclear(start)
        // libpq buffers what it is given; chunks keep each call's memory bounded.
        let chunk = 1 << 20
        var sent = true
        data.withUnsafeBytes { bytes in
            var offset = 0
            while sent, offset < bytes.count {
                let length = min(chunk, bytes.count - offset)
                let pointer = bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: CChar.self)
                sent = PQputCopyData(handle, pointer, Int32(length)) == 1
                offset += length
            }
        }
        let ended = PQputCopyEnd(handle, sent ? nil : "the client could not send the data") == 1
        // Drain every result so the connection is ready again, then report the first failure.
        var failure: PostgresError?
        var rows = 0
        while let raw = PQgetResult(handle) {
            do {
                rows = try checkResult(raw).affectedRows
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        guard sent, ended else { throw PostgresError(code: .connectionLost, serverMessage: lastErrorMessage) }
        return rows
    }

    /// Asks the server to cancel the statement running on this connection. Safe from any thread.
    func cancel() {
        cancelRequested.store(true, ordering: .releasing)
        cancelHandle.withLock { cancel in
            guard let cancel else { return }
            var buffer = [CChar](repeating: 0, count: 256)
            if PQcancel(cancel.pointer, &buffer, Int32(buffer.count)) == 0 {
                Logger(label: "herald.postgres").warning(
                    "could not cancel a statement",
                    metadata: ["error": "\(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"]
                )
            }
        }
    }

    /// Forgets an earlier cancel request; called before each new call on behalf of a task.
    func clearCancelRequest() {
        cancelRequested.store(false, ordering: .releasing)
    }

    /// The socket descriptor, for waiting on notifications.
    var socket: Int32 {
        handle.map { PQsocket($0) } ?? -1
    }

    /// Reads available input and returns the notifications it held. Never blocks.
    func drainNotifications() throws(PostgresError) -> [PostgresNotification] {
        let handle = try openHandle()
        guard PQconsumeInput(handle) != 0 else {
            throw PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
        }
        var result: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            result.append(
                PostgresNotification(
                    channel: String(cString: notify.pointee.relname),
                    payload: String(cString: notify.pointee.extra),
                    senderPID: notify.pointee.be_pid
                )
            )
            PQfreemem(notify)
        }
        return result
    }

    /// Quotes an identifier (for `LISTEN`, which takes no parameters).
    func escapeIdentifier(_ identifier: String) throws(PostgresError) -> String {
        let handle = try openHandle()
        guard let escaped = PQescapeIdentifier(handle, identifier, identifier.utf8.count) else {
            throw PostgresError(code: .other, serverMessage: lastErrorMessage)
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }

    func close() {
        cancelHandle.withLock { cancel in
            if let cancel { PQfreeCancel(cancel.pointer) }
            cancel = nil
        }
        if let handle { PQfinish(handle) }
        handle = nil
    }

    // MARK: - Private

    var lastErrorMessage: String {
        guard let handle else { return "connection is closed" }
        return String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines()
    }

    /// libpq's handle, for callers that drive its non-blocking calls themselves; `nil` once closed.
    var rawHandle: OpaquePointer? { handle }

    func openHandle() throws(PostgresError) -> OpaquePointer {
        guard let handle else {
            throw PostgresError(code: .clientClosed, serverMessage: "connection is closed")
        }
        return handle
    }

    private func refreshCancelHandle() {
        guard let handle else { return }
        let fresh = PQgetCancel(handle).map { CancelHandle(pointer: $0) }
        cancelHandle.withLock { cancel in
            if let cancel { PQfreeCancel(cancel.pointer) }
            cancel = fresh
        }
    }

    func checkResult(_ raw: OpaquePointer?) throws(PostgresError) -> PostgresResult {
        guard let raw else {
            // libpq returns no result only when it could not talk to the server at all.
            throw PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
        }
        let status = PQresultStatus(raw)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return PostgresResult(handle: raw)
        }
        defer { PQclear(raw) }
        func field(_ code: UInt8) -> String? {
            guard let value = PQresultErrorField(raw, Int32(code)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field(UInt8(ascii: "C"))
        let message = field(UInt8(ascii: "M")) ?? lastErrorMessage
        let error = PostgresError(
            sqlState: sqlState,
            serverMessage: message,
            detail: field(UInt8(ascii: "D")),
            constraintName: field(UInt8(ascii: "n"))
        )
        throw isOpen ? error : error.reclassified(as: .connectionLost)
    }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the duration of the call.
private func withCStringArray<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let duplicates = strings.map { strdup($0) }
    defer { duplicates.forEach { free($0) } }
    return body(duplicates.map { UnsafePointer($0) } + [nil])
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last.isNewline { text.removeLast() }
        return String(text)
    }
}
