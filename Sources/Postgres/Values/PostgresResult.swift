import CLibPQ

/// The rows of one statement's result.
///
/// Owns the libpq `PGresult`; rows and cells read from it directly without copying. A `PGresult` is
/// immutable once returned, so sharing it across threads is safe.
public final class PostgresResult: @unchecked Sendable {
    let handle: OpaquePointer

    /// Number of rows returned.
    public let rowCount: Int
    /// Number of columns in each row.
    public let columnCount: Int

    init(handle: OpaquePointer) {
        self.handle = handle
        self.rowCount = Int(PQntuples(handle))
        self.columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    /// Rows affected by an `INSERT`, `UPDATE`, `DELETE`, `MERGE` or `COPY` (0 when not applicable).
    public var affectedRows: Int {
        Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    /// The name of each column, in order.
    public var columnNames: [String] {
        (0..<columnCount).map { columnName($0) }
    }

    func columnName(_ column: Int) -> String {
        String(cString: PQfname(handle, Int32(column)))
    }

    func columnType(_ column: Int) -> PostgresDataType {
        PostgresDataType(PQftype(handle, Int32(column)))
    }

    /// The index of the column with this name, if any.
    public func columnIndex(named name: String) -> Int? {
        let index = Int(PQfnumber(handle, name))
        return index >= 0 ? index : nil
    }

    /// The first row, or `nil` for an empty result.
    public var first: PostgresRow? {
        rowCount > 0 ? PostgresRow(result: self, index: 0) : nil
    }
}

extension PostgresResult: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { rowCount }

    public subscript(position: Int) -> PostgresRow {
        precondition(position >= 0 && position < rowCount, "row index out of range")
        return PostgresRow(result: self, index: position)
    }
}
