import CLibPQ

/// One row of a `PostgresResult`.
public struct PostgresRow: Sendable {
    let result: PostgresResult
    let index: Int

    /// Decodes the first `count` columns into a tuple of the given types:
    ///
    /// ```swift
    /// let (id, nickname) = try row.decode((String, String?).self)
    /// ```
    public func decode<each Value: PostgresDecodable>(_: (repeat each Value).Type) throws -> (repeat each Value) {
        var column = 0
        func next<V: PostgresDecodable>(_: V.Type) throws -> V {
            defer { column += 1 }
            return try decode(column: column, as: V.self)
        }
        return (repeat try next((each Value).self))
    }

    /// Decodes the first column. (A single-type overload of the tuple form, which keeps type
    /// inference simple at call sites such as `rows.first?.decode(Int.self)`.)
    public func decode<Value: PostgresDecodable>(_: Value.Type) throws -> Value {
        try decode(column: 0, as: Value.self)
    }

    /// Decodes one column by position.
    public func decode<Value: PostgresDecodable>(column: Int, as _: Value.Type = Value.self) throws -> Value {
        guard column < result.columnCount else {
            throw PostgresDecodingError(
                column: column,
                columnName: "?",
                postgresType: .unknown,
                swiftType: String(describing: Value.self),
                reason: "the result has only \(result.columnCount) columns"
            )
        }
        let row = Int32(index)
        let field = Int32(column)
        let handle = result.handle
        do {
            if PQgetisnull(handle, row, field) != 0 {
                return try Value.decodeNull()
            }
            let length = Int(PQgetlength(handle, row, field))
            let pointer = UnsafeRawPointer(PQgetvalue(handle, row, field))
            let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
            // The bytes belong to the PGresult; keep it alive while they are read.
            return try withExtendedLifetime(result) {
                try Value(postgresBytes: bytes, type: result.columnType(column))
            }
        } catch let failure as PostgresDecodingFailure {
            throw PostgresDecodingError(
                column: column,
                columnName: result.columnName(column),
                postgresType: result.columnType(column),
                swiftType: String(describing: Value.self),
                reason: failure.reason
            )
        }
    }

    /// Decodes one column by name.
    public func decode<Value: PostgresDecodable>(column name: String, as type: Value.Type = Value.self) throws -> Value {
        guard let column = result.columnIndex(named: name) else {
            throw PostgresDecodingError(
                column: -1,
                columnName: name,
                postgresType: .unknown,
                swiftType: String(describing: Value.self),
                reason: "no such column"
            )
        }
        return try decode(column: column, as: type)
    }
}
