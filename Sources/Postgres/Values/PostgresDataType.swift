/// A PostgreSQL type identified by its OID (the values in `pg_type.oid` for built-in types).
public struct PostgresDataType: Sendable, Hashable, CustomStringConvertible {
    public var oid: UInt32

    public init(_ oid: UInt32) { self.oid = oid }

    public static let bool = Self(16)
    public static let bytea = Self(17)
    public static let name = Self(19)
    public static let int8 = Self(20)
    public static let int2 = Self(21)
    public static let int4 = Self(23)
    public static let text = Self(25)
    public static let oidType = Self(26)
    public static let json = Self(114)
    public static let float4 = Self(700)
    public static let float8 = Self(701)
    public static let unknown = Self(705)
    public static let boolArray = Self(1000)
    public static let int2Array = Self(1005)
    public static let int4Array = Self(1007)
    public static let textArray = Self(1009)
    public static let varcharArray = Self(1015)
    public static let int8Array = Self(1016)
    public static let float8Array = Self(1022)
    public static let bpchar = Self(1042)
    public static let varchar = Self(1043)
    public static let timestamp = Self(1114)
    public static let timestamptz = Self(1184)
    public static let timestamptzArray = Self(1185)
    public static let uuid = Self(2950)
    public static let uuidArray = Self(2951)
    public static let void = Self(2278)
    public static let jsonb = Self(3802)
    public static let jsonbArray = Self(3807)

    public var description: String { "oid \(oid)" }
}
