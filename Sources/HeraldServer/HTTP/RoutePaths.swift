/// Route path templates and their methods, matched against request paths: `{name}` stands for any
/// one segment.
struct RoutePaths: Sendable {
    /// Each route's method (upper case) and path segments.
    private var routes: [(method: String, segments: [Substring])]

    init(_ routes: [RouteDescription] = []) {
        self.routes = routes.map { ($0.method.uppercased(), $0.path.split(separator: "/")) }
    }

    mutating func add(_ route: RouteDescription) {
        routes.append((route.method.uppercased(), route.path.split(separator: "/")))
    }

    /// The methods of the routes whose path template matches `path`, sorted; empty when none does.
    func methods(allowedFor path: String) -> [String] {
        let segments = path.split(separator: "/")
        let matching = routes.filter { route in
            route.segments.count == segments.count
                && zip(route.segments, segments).allSatisfy { template, segment in
                    (template.first == "{" && template.last == "}") || template == segment
                }
        }
        return Set(matching.map(\.method)).sorted()
    }
}
