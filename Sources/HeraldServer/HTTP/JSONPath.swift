/// JSON paths as Herald's error messages write them: `$.channels[0].kind`.
enum JSONPath {
    static func string(_ codingPath: [any CodingKey]) -> String {
        codingPath.reduce("$") { path, key in
            if let index = key.intValue { return path + "[\(index)]" }
            return path + "." + key.stringValue
        }
    }
}
