import Foundation
import HeraldTesting
import Yams

/// One generated request, ready to send.
struct GeneratedRequest: Sendable, CustomStringConvertible {
    var operation: String
    var method: String
    var uri: String
    var headers: [String: String]
    var body: [UInt8]?

    var description: String {
        let text = body.map { String(decoding: $0.prefix(200), as: UTF8.self) } ?? "-"
        return "\(operation): \(method) \(uri.prefix(300)) headers \(headers.keys.sorted()) body \(text)"
    }
}

/// Requests generated from `openapi.yaml`: for every operation, values drawn from the document's
/// schemas — most of them valid, the rest broken in the ways clients break them (wrong types, out of
/// range, too long, control characters, missing or unknown fields, truncated or non-JSON bodies, bad
/// credentials) — so that every route is exercised well past its happy path.
///
/// The document is the contract: the generator knows nothing of Herald beyond it, except `pools`, the
/// identifiers of things that exist (so that requests also reach the handlers, not only the 404s).
struct OpenAPIRequestGenerator {
    /// Values to use for a named parameter or property when a valid one is wanted — ids that exist,
    /// variables a template needs — by name, or by `operationId.name` for one operation only;
    /// `operationId.body` holds whole example bodies.
    var pools: [String: [Any]]
    /// The bearer tokens for the document's security schemes (`admin`, `session`).
    var credentials: [String: String]

    /// A pool value that leaves the property out (for rules the schema cannot say, such as "exactly
    /// one of `targets` and `audience`").
    struct Absent {}

    private let document: [String: Any]
    private var random: SplitMix64
    /// The operation being generated for (pools may be specific to it).
    private var operationID = ""

    /// One operation of the document.
    struct Operation {
        var id: String
        var method: String
        var path: String
        var parameters: [[String: Any]]
        var bodySchema: [String: Any]?
        var bodyRequired: Bool
        var schemes: [String]
    }

    init(documentPath: String, seed: UInt64, pools: [String: [Any]], credentials: [String: String]) throws {
        let text = try String(contentsOfFile: documentPath, encoding: .utf8)
        guard let document = try Yams.load(yaml: text) as? [String: Any] else {
            throw GeneratorError(message: "openapi.yaml is not a mapping")
        }
        self.document = document
        self.random = SplitMix64(seed: seed)
        self.pools = pools
        self.credentials = credentials
    }

    struct GeneratorError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    // MARK: - The document

    var operations: [Operation] {
        let paths = document["paths"] as? [String: Any] ?? [:]
        var result: [Operation] = []
        for (path, item) in paths.sorted(by: { $0.key < $1.key }) {
            guard let item = item as? [String: Any] else { continue }
            for method in ["get", "put", "post", "patch", "delete"] {
                guard let operation = item[method] as? [String: Any] else { continue }
                let parameters = ((operation["parameters"] as? [Any]) ?? []).compactMap { resolve($0) as? [String: Any] }
                let body = (operation["requestBody"] as? [String: Any]).flatMap { resolve($0) as? [String: Any] }
                let schema = ((body?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"]
                let schemes = ((operation["security"] as? [[String: Any]]) ?? []).flatMap(\.keys)
                result.append(
                    Operation(
                        id: operation["operationId"] as? String ?? "\(method) \(path)",
                        method: method.uppercased(),
                        path: path,
                        parameters: parameters,
                        bodySchema: schema.flatMap { resolve($0) as? [String: Any] },
                        bodyRequired: body?["required"] as? Bool ?? false,
                        schemes: schemes
                    )
                )
            }
        }
        return result
    }

    /// Follows `$ref` (local references only) until a node without one.
    func resolve(_ node: Any) -> Any {
        guard let object = node as? [String: Any], let reference = object["$ref"] as? String, reference.hasPrefix("#/") else { return node }
        var current: Any = document
        for part in reference.dropFirst(2).split(separator: "/") {
            guard let next = (current as? [String: Any])?[String(part)] else { return node }
            current = next
        }
        return resolve(current)
    }

    // MARK: - Requests

    /// One request for the operation; about two in three are valid by the document.
    mutating func request(for operation: Operation) -> GeneratedRequest {
        operationID = operation.id
        var headers: [String: String] = [:]
        var path = operation.path
        var query: [String] = []
        for (name, location, schema, required) in parameters(of: operation) {
            switch location {
            case "path":
                // Now and then a segment sent as is: broken percent-encoding the server must decode or refuse.
                let segment =
                    chance(0.03) ? oneOf(["%FF", "%zz", "%", "%00", "%C3%28", "%2e%2e"]) : percentEncoded(pathValue(name: name, schema: schema))
                path = path.replacingOccurrences(of: "{\(name)}", with: segment)
            case "query":
                guard required || chance(0.6) else { continue }
                query.append("\(name)=\(percentEncoded(scalarText(name: name, schema: schema)))")
            case "header":
                guard required || chance(0.6) else { continue }
                headers[name] = headerSafe(scalarText(name: name, schema: schema))
            default:
                continue
            }
        }
        if chance(0.05) { query.append("unknown=\(percentEncoded(randomString(maximumLength: 20)))") }
        authenticate(operation, headers: &headers)
        var body: [UInt8]?
        if let schema = operation.bodySchema, operation.bodyRequired || chance(0.8) {
            body = bodyBytes(schema: schema)
            if chance(0.95) { headers["Content-Type"] = chance(0.95) ? "application/json" : "text/plain" }
        } else if chance(0.05) {
            body = Array(randomString(maximumLength: 40).utf8)
        }
        let uri = query.isEmpty ? path : path + "?" + query.joined(separator: "&")
        return GeneratedRequest(operation: operation.id, method: operation.method, uri: uri, headers: headers, body: body)
    }

    /// A request the document calls valid in every part but its credentials, which it leaves out: path
    /// and required parameters from the pools (else drawn valid), an example body for operations that
    /// have one, else a valid body when the operation takes one.
    mutating func validRequest(for operation: Operation) -> GeneratedRequest {
        operationID = operation.id
        var headers: [String: String] = [:]
        var path = operation.path
        var query: [String] = []
        for (name, location, schema, required) in parameters(of: operation) {
            let value = pool(name).map { text($0[0]) } ?? text(validValue(schema: schema, name: name, depth: 0))
            switch location {
            case "path": path = path.replacingOccurrences(of: "{\(name)}", with: percentEncoded(value))
            case "query" where required: query.append("\(name)=\(percentEncoded(value))")
            default: continue
            }
        }
        var body: [UInt8]?
        if let schema = operation.bodySchema {
            body = json(pool("body").map { $0[0] } ?? validValue(schema: schema, name: nil, depth: 0))
            headers["Content-Type"] = "application/json"
        }
        let uri = query.isEmpty ? path : path + "?" + query.joined(separator: "&")
        return GeneratedRequest(operation: operation.id, method: operation.method, uri: uri, headers: headers, body: body)
    }

    /// The operation's parameters: name, where it goes (`path`, `query`, `header`), its resolved
    /// schema and whether it is required.
    private func parameters(of operation: Operation) -> [(name: String, location: String, schema: [String: Any], required: Bool)] {
        operation.parameters.compactMap { parameter in
            guard let name = parameter["name"] as? String, let location = parameter["in"] as? String else { return nil }
            let schema = (parameter["schema"]).flatMap { resolve($0) as? [String: Any] } ?? [:]
            return (name, location, schema, parameter["required"] as? Bool ?? false)
        }
    }

    private mutating func authenticate(_ operation: Operation, headers: inout [String: String]) {
        guard let scheme = operation.schemes.first else { return }
        switch Double.random(in: 0..<1, using: &random) {
        case ..<0.85: headers["Authorization"] = "Bearer \(credentials[scheme] ?? "")"
        case ..<0.9: break
        case ..<0.95:
            // The other kind of credential: a session on an admin route, the admin token on a user's.
            let other = credentials.filter { $0.key != scheme }.values.first ?? ""
            headers["Authorization"] = "Bearer \(other)"
        default:
            headers["Authorization"] = oneOf(["Bearer ", "Basic abc", "Bearer \(randomString(maximumLength: 80))", "bearer", "Bearer a.b"])
        }
    }

    private mutating func pathValue(name: String, schema: [String: Any]) -> String {
        if let pool = pool(name), chance(0.75) { return text(oneOf(pool)) }
        if chance(0.5) { return text(validValue(schema: schema, name: name, depth: 0)) }
        return oneOf([
            String(repeating: "a", count: 129), String(repeating: "7", count: 21), "99999999999999999999", "-1", "0",
            "..", "%", "é", "a b", "a\u{0}b", "\u{7f}", "日本語", "a/b", "💥", String(repeating: "f", count: 401),
        ])
    }

    private mutating func scalarText(name: String, schema: [String: Any]) -> String {
        if let pool = pool(name), chance(0.5) { return text(oneOf(pool)) }
        return text(chance(0.6) ? validValue(schema: schema, name: name, depth: 0) : brokenValue(schema: schema, name: name, depth: 0))
    }

    /// A value as the text of a parameter.
    private func text(_ value: Any) -> String {
        switch value {
        case let text as String: return text
        case let number as Int: return String(number)
        case let number as Double: return String(number)
        case let flag as Bool: return flag ? "true" : "false"
        default: return (try? String(decoding: JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]), as: UTF8.self)) ?? ""
        }
    }

    private func pool(_ name: String) -> [Any]? {
        pools["\(operationID).\(name)"] ?? pools[name]
    }

    private mutating func bodyBytes(schema: [String: Any]) -> [UInt8] {
        // Whole example bodies, for operations whose rules span fields (the schema cannot say them).
        if let examples = pool("body"), chance(0.5) { return json(oneOf(examples)) }
        switch Double.random(in: 0..<1, using: &random) {
        case ..<0.65: return json(validValue(schema: schema, name: nil, depth: 0))
        case ..<0.9: return json(brokenValue(schema: schema, name: nil, depth: 0))
        default:
            return oneOf([
                [], Array("{".utf8), Array("[]".utf8), Array("null".utf8), Array("123".utf8), Array(#""text""#.utf8),
                Array(#"{"a":}"#.utf8), Array(#"{"a":"\ud800"}"#.utf8), [0xFF, 0xFE, 0x7B], Array("{\"a\":\"b\"} trailing".utf8),
                Array((String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)).utf8),
                Array(#"{"a":1e999999}"#.utf8), Array(#"{"a":-0.0e-999}"#.utf8),
            ])
        }
    }

    private func json(_ value: Any) -> [UInt8] {
        (try? Array(JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]))) ?? Array("null".utf8)
    }

    // MARK: - Values

    /// A value the schema accepts (as far as the schema says: a pattern is followed only for the
    /// simple character classes the document uses).
    private mutating func validValue(schema raw: [String: Any], name: String?, depth: Int) -> Any {
        let schema = merged(raw)
        if let name, let pool = pool(name), chance(0.7) {
            return oneOf(pool)
        }
        if let values = schema["enum"] as? [Any], !values.isEmpty { return oneOf(values) }
        if let choices = (schema["oneOf"] ?? schema["anyOf"]) as? [Any], !choices.isEmpty {
            return validValue(schema: resolve(oneOf(choices)) as? [String: Any] ?? [:], name: name, depth: depth)
        }
        switch schema["type"] as? String ?? (schema["properties"] != nil ? "object" : nil) {
        case "object":
            var object: [String: Any] = [:]
            let required = Set(schema["required"] as? [String] ?? [])
            for (key, property) in (schema["properties"] as? [String: Any] ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard required.contains(key) || chance(0.7) else { continue }
                let value = validValue(schema: resolve(property) as? [String: Any] ?? [:], name: key, depth: depth + 1)
                if !(value is Absent) { object[key] = value }
            }
            if object.isEmpty, schema["properties"] == nil, depth < 3, chance(0.7) {
                // A free-form object (data, variables, custom): a few entries.
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    object[randomIdentifier()] =
                        chance(0.5) ? randomString(maximumLength: 12) as Any : Int.random(in: -5...500, using: &random) as Any
                }
            }
            return object
        case "array":
            let items = resolve(schema["items"] ?? [:]) as? [String: Any] ?? [:]
            let maximum = min(schema["maxItems"] as? Int ?? 4, 4)
            let minimum = min(schema["minItems"] as? Int ?? 0, maximum)
            return (0..<Int.random(in: minimum...maximum, using: &random)).map { _ in
                validValue(schema: items, name: name.map { $0 + "[]" }, depth: depth + 1)
            }
        case "integer":
            let low = schema["minimum"] as? Int ?? 0
            let high = schema["maximum"] as? Int ?? max(low, 1000)
            return Int.random(in: low...max(low, min(high, low + 100_000)), using: &random)
        case "number":
            return Double(Int.random(in: 0...1000, using: &random)) / 10
        case "boolean":
            return chance(0.5)
        case "string":
            return validString(schema: schema)
        default:
            // No type: any JSON value.
            return chance(0.5) ? randomString(maximumLength: 10) as Any : Int.random(in: 0...100, using: &random) as Any
        }
    }

    private mutating func validString(schema: [String: Any]) -> String {
        if schema["format"] as? String == "date-time" {
            return ISO8601DateFormatter().string(
                from: Date(timeIntervalSince1970: Double(Int.random(in: 1_600_000_000...1_900_000_000, using: &random)))
            )
        }
        let minimum = schema["minLength"] as? Int ?? 0
        let maximum = max(minimum, min(schema["maxLength"] as? Int ?? 24, 24))
        let length = Int.random(in: max(minimum, 1)...max(maximum, 1), using: &random)
        let pattern = schema["pattern"] as? String ?? ""
        let alphabet: [Character]
        switch pattern {
        case _ where pattern.contains("0-9]+$") && !pattern.contains("a-z") && !pattern.contains("A-F"): alphabet = Array("0123456789")
        case _ where pattern.contains("0-9]{1,19}"): alphabet = Array("0123456789")
        case _ where pattern.contains("A-Fa-f"): alphabet = Array("0123456789abcdef")
        case _ where pattern.hasPrefix("^[a-z0-9"): alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789_.-")
        case _ where pattern.hasPrefix("^[A-Za-z_]"): alphabet = Array("abcdefghijklmnopqrstuvwxyz_")
        default: alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-")
        }
        let length19 = pattern.contains("{1,19}") ? min(length, 19) : length
        return String((0..<length19).map { _ in alphabet.randomElement(using: &random)! })
    }

    /// A value the schema rejects, or a valid one with something wrong inside it.
    private mutating func brokenValue(schema raw: [String: Any], name: String?, depth: Int) -> Any {
        let schema = merged(raw)
        let type = schema["type"] as? String ?? (schema["properties"] != nil ? "object" : nil)
        if type == "object", depth < 4, chance(0.6) {
            // Valid around one broken, missing or unknown field.
            var object = validValue(schema: schema, name: name, depth: depth) as? [String: Any] ?? [:]
            let properties = schema["properties"] as? [String: Any] ?? [:]
            switch Int.random(in: 0..<3, using: &random) {
            case 0 where !properties.isEmpty:
                let key = oneOf(properties.keys.sorted())
                object[key] = brokenValue(schema: resolve(properties[key]!) as? [String: Any] ?? [:], name: key, depth: depth + 1)
            case 1 where !(schema["required"] as? [String] ?? []).isEmpty:
                object[oneOf(schema["required"] as! [String])] = nil
            default:
                object[oneOf(["unknown", "", "\u{0}", String(repeating: "k", count: 300)])] = randomString(maximumLength: 5)
            }
            return object
        }
        if type == "array", depth < 4, chance(0.5) {
            let items = resolve(schema["items"] ?? [:]) as? [String: Any] ?? [:]
            if let maximum = schema["maxItems"] as? Int, maximum <= 200, chance(0.5) {
                return (0...maximum).map { _ in validValue(schema: items, name: name.map { $0 + "[]" }, depth: depth + 1) }
            }
            return [brokenValue(schema: items, name: name.map { $0 + "[]" }, depth: depth + 1)]
        }
        if type == "string", let maximum = schema["maxLength"] as? Int, chance(0.3) {
            return String(repeating: "x", count: maximum + 1)
        }
        if type == "integer", chance(0.4) {
            return oneOf([(schema["minimum"] as? Int ?? 0) - 1, (schema["maximum"] as? Int ?? Int(Int32.max)) + 1, Int.max, Int.min])
        }
        return oneOf(
            [
                NSNull(), true, 0, -1, 3.5, 1e300, "", "x", "\u{0}", "a\u{0}b", "\u{1}\u{1f}", "😀", String(repeating: "é", count: 3000),
                "2026-13-45T99:99:99Z", "not a date", [Any](), [String: Any](), [1, "two", NSNull()], ["nested": ["deeper": [1]]],
                9_007_199_254_740_993, "9223372036854775808", "-9223372036854775809",
            ] as [Any]
        )
    }

    /// `allOf` parts folded into one schema (properties and required lists joined).
    private func merged(_ schema: [String: Any]) -> [String: Any] {
        guard let parts = schema["allOf"] as? [Any] else { return schema }
        var result = schema
        result["allOf"] = nil
        var properties = schema["properties"] as? [String: Any] ?? [:]
        var required = schema["required"] as? [String] ?? []
        for part in parts {
            let part = merged(resolve(part) as? [String: Any] ?? [:])
            properties.merge(part["properties"] as? [String: Any] ?? [:]) { first, _ in first }
            required += part["required"] as? [String] ?? []
            if result["type"] == nil { result["type"] = part["type"] }
        }
        result["properties"] = properties
        result["required"] = required
        return result
    }

    // MARK: - Randomness

    private mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }

    private mutating func oneOf<T>(_ values: [T]) -> T {
        values[Int.random(in: 0..<values.count, using: &random)]
    }

    private mutating func randomIdentifier() -> String {
        String((0..<Int.random(in: 1...8, using: &random)).map { _ in Array("abcdefghij_").randomElement(using: &random)! })
    }

    private mutating func randomString(maximumLength: Int) -> String {
        let alphabet = Array("abcXYZ019 -_.~%/?#&=+é日\u{0}\u{7}\"\\'💥")
        return String((0..<Int.random(in: 0...maximumLength, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
    }

    /// Percent-encodes everything but unreserved characters (so that the URI stays one the client can
    /// send; the server decodes what the generator chose, control characters included).
    private func percentEncoded(_ text: String) -> String {
        var unreserved = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        unreserved.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// Header values cannot carry line breaks or NULs on the wire; anything else goes.
    private func headerSafe(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F && $0.isASCII }.map(Character.init))
    }
}
